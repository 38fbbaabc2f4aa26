#!/usr/bin/env bash
# Whether what a shared crawl reaches hangs on the order its members joined in (audit 30 F4):
# one process with 6 seeds against three members that join 2 s apart, two seeds each, on
# audit 30's web (6 sites of 200 pages, a Crawl-delay of 0.3 s on site01), with `--depth 3
# --delay-ms 50` and the default scope, counted at the server as distinct (site, path)
# requests, robots.txt apart; prints the pages the members missed or added.
#
#   benches/scripts/join_order.sh [BIN]
#
# BIN defaults to target/release/crawltop. Needs `redis-server` (started here on a port the
# OS chose, loopback, nothing kept). WORK (default a temporary folder, removed at the end) is
# where the web, the logs and the stats go. About two minutes.
set -euo pipefail
export LC_ALL=C

BIN=$(realpath "${1:-target/release/crawltop}")
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release first" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "no redis-server" >&2; exit 2; }
WORK=${WORK:-}
if [ -z "$WORK" ]; then
    WORK=$(mktemp -d)
    trap 'rm -rf "$WORK"' EXIT
fi
cd "$WORK"
"$BIN" gen-site --out web --sites 6 --pages 200 --crawl-delay 0.3 >/dev/null

serve() {
    "$BIN" serve web --log "$1" >"$1.out" 2>&1 &
    SERVE=$!
    while [ ! -s web/ports.json ] || ! grep -q site05 web/ports.json; do sleep 0.1; done
}
seed() { python3 -c "import json;print(json.load(open('web/ports.json'))['sites']['$1']+'/')"; }
pages() {
    python3 -c "
import json
rs = [r for r in map(json.loads, open('$1')) if r.get('path') != '/robots.txt']
print('\n'.join(sorted({r['site'] + ' ' + r['path'] for r in rs})), file=open('$1.set', 'w'))
print(len({(r['site'], r['path']) for r in rs}), 'pages,', len(rs), 'requests')"
}

rm -f web/ports.json
serve one.jsonl
S=(); for i in 0 1 2 3 4 5; do S+=("$(seed site0$i)"); done
"$BIN" crawl "${S[@]}" --depth 3 --delay-ms 50 --headless --stats-out one.json >one.out 2>&1
kill "$SERVE"; wait "$SERVE" 2>/dev/null || true
echo "one process: $(pages one.jsonl)"

PORT=$(python3 -c "import socket;s=socket.socket();s.bind(('127.0.0.1',0));print(s.getsockname()[1])")
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" >redis.log 2>&1 &
REDIS=$!
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do sleep 0.1; done
rm -f web/ports.json
serve shared.jsonl
S=(); for i in 0 1 2 3 4 5; do S+=("$(seed site0$i)"); done
member() {
    "$BIN" crawl --cluster "redis://127.0.0.1:$PORT" --crawl-id order --headless --depth 3 \
        --delay-ms 50 --stats-out "$1.json" "${@:2}" >"$1.out" 2>&1
}
member a "${S[0]}" "${S[1]}" & A=$!
sleep 2
member b "${S[2]}" "${S[3]}" & B=$!
sleep 2
member c "${S[4]}" "${S[5]}" & C=$!
status=0
for m in $A $B $C; do wait "$m" || status=$?; done
kill "$SERVE" "$REDIS"; wait 2>/dev/null || true
echo "three members (exit $status): $(pages shared.jsonl)"
echo "missed: $(comm -23 one.jsonl.set shared.jsonl.set | tr '\n' ';')"
echo "added:  $(comm -13 one.jsonl.set shared.jsonl.set | tr '\n' ';')"
