#!/usr/bin/env bash
# How long the coordinator stalls while the frontier spills (issue 12, item 5): crawls the
# generated link farm headless with --out (so queues past --queue-memory wait in the spill
# file), polls the control API's /stats over one keep-alive connection every few ms until N
# URLs are known, and prints the gaps between two published snapshots (the engine's own
# `elapsed_s`, published every 100 ms by the coordinator's tick: a longer gap is time the
# coordinator spent somewhere else). Works on any build with a control API, so "before" and
# "after" binaries are measured the same way.
#
#   benches/scripts/coordinator_stall.sh [N] [BIN] [extra crawl flags...]
#
# N defaults to 2,000,000. Checkpoints are set 10 minutes apart by default (CHECKPOINT_MS) so
# that what is measured is the spill, not the checkpoint. Needs python3 and jq.
set -euo pipefail

N=${1:-2000000}
BIN=$(realpath "${2:-target/release/crawltop}")
shift $(( $# > 2 ? 2 : $# ))
CHECKPOINT_MS=${CHECKPOINT_MS:-600000}
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release first" >&2; exit 2; }
WORK=$(mktemp -d /tmp/crawltop-stall-XXXXXX)
SERVER=
PID=
trap 'kill $PID $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT

"$BIN" gen-site --out "$WORK/web" --sites 1 --pages 1 --crawl-delay 0 --link-farm 8 >/dev/null
"$BIN" serve "$WORK/web" </dev/null >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
SEEDS=$(jq -r '.sites | to_entries[] | select(.key | startswith("farm")) | .value + "/"' "$WORK/serve.out")

/usr/bin/time -v -o "$WORK/crawl.time" "$BIN" crawl --headless --control 127.0.0.1:0 \
  --delay-ms 0 --workers 64 --per-site 4 --depth 5 --out "$WORK/crawl" --store none \
  --checkpoint-ms "$CHECKPOINT_MS" "$@" $SEEDS </dev/null >"$WORK/crawl.out" 2>"$WORK/crawl.err" &
PID=$!
API=
for _ in $(seq 6000); do
  API=$(sed -n 's|^crawltop: control API on \(http://[^ ]*\)$|\1|p' "$WORK/crawl.err" | head -1)
  [ -n "$API" ] && break
  sleep 0.01
done
[ -n "$API" ] || { echo "the control API never answered" >&2; cat "$WORK/crawl.err" >&2; exit 1; }

python3 - "$API" "$N" <<'PY'
import http.client, json, sys, time, urllib.parse
api, n = sys.argv[1], int(sys.argv[2])
u = urllib.parse.urlparse(api)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
last, gaps, known, t0 = None, [], 0, time.time()
while known < n:
    conn.request("GET", "/stats")
    s = json.loads(conn.getresponse().read())
    e = s["elapsed_s"]
    known = s["resources"]["discovered"]
    if last is not None and e > last:
        gaps.append(e - last)
    last = e
    time.sleep(0.005)
wall = time.time() - t0
conn.request("POST", "/stop")
conn.getresponse().read()
gaps.sort()
q = lambda p: gaps[min(len(gaps) - 1, int(p * len(gaps)))]
print(f"known {known} in {wall:.1f} s; {len(gaps)} snapshot gaps: p50 {q(.5)*1e3:.0f} ms, "
      f"p99 {q(.99)*1e3:.0f} ms, max {gaps[-1]*1e3:.0f} ms; over 250 ms: "
      f"{sum(1 for g in gaps if g > .25)}, over 1 s: {sum(1 for g in gaps if g > 1)}; "
      f"snapshot time stalled (sum of gaps beyond 100 ms): {sum(max(0, g - .1) for g in gaps):.1f} s")
PY
wait $PID || true
printf 'peak RSS %s MB\n' "$(( $(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$WORK/crawl.time") / 1024 ))"
