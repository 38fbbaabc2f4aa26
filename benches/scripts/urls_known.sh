#!/usr/bin/env bash
# How much a crawl that knows N URLs costs (issue 12): crawls a generated link farm headless
# until the control API's /stats says N URLs are known, stops it through the API, and prints
# the time to N, the peak RSS per URL known (GNU time), with and without --out, the crawl
# folder's bytes per URL, and the resume: the time until the resumed crawl's control API
# answers (the checkpoint is read before it starts) and until it fetches again.
#
#   benches/scripts/urls_known.sh [N] [BIN]
#
# N defaults to 1,000,000 (quick); the README's table uses 10,000,000 (the default farm of 8
# sites knows 10,000,008). BIN defaults to target/release/crawltop (build it first:
# `cargo build --release`). MODES (default "memory out") picks the runs; WORK (default a
# temporary folder, removed at the end) is where the farm and the crawl folder go.
set -euo pipefail

N=${1:-1000000}
BIN=$(realpath "${2:-target/release/crawltop}")
MODES=${MODES:-memory out}
WORK=${WORK:-}
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "GNU time is missing: apt-get install -y time" >&2; exit 2; }
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "$tool is missing" >&2; exit 2; }
done
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d /tmp/crawltop-urls-XXXXXX)
  trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
else
  mkdir -p "$WORK"
  trap 'kill $SERVER 2>/dev/null || true' EXIT
fi
SERVER=

# The farm: 8 sites of 1,250 pages of 1,000 links (10,000,008 URLs), plus the smallest
# ordinary web gen-site makes (no Crawl-delay, it is not crawled).
"$BIN" gen-site --out "$WORK/web" --sites 1 --pages 1 --crawl-delay 0 --link-farm 8 >/dev/null
"$BIN" serve "$WORK/web" </dev/null >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER=$!
for _ in $(seq 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
SEEDS=$(jq -r '.sites | to_entries[] | select(.key | startswith("farm")) | .value + "/"' "$WORK/serve.out")

now() { date +%s.%N; }

# Starts a headless crawl with the control API on an OS-chosen port; sets PID and API.
start_crawl() {
  local log=$1; shift
  /usr/bin/time -v -o "$log.time" "$BIN" crawl --headless --control 127.0.0.1:0 \
    --delay-ms 0 --workers 64 --per-site 4 --depth 5 "$@" </dev/null >"$log.out" 2>"$log.err" &
  PID=$!
  API=
  for _ in $(seq 6000); do
    API=$(sed -n 's|^crawltop: control API on \(http://[^ ]*\)$|\1|p' "$log.err" | head -1)
    [ -n "$API" ] && return 0
    kill -0 $PID 2>/dev/null || { cat "$log.err" >&2; return 1; }
    sleep 0.01
  done
  echo "the control API never answered" >&2
  return 1
}

stats() { curl -sf "$API/stats" || echo '{}'; }

# Polls /stats until N URLs are known; prints the seconds it took from $T0.
until_known() {
  while :; do
    local known
    known=$(stats | jq -r '.resources.discovered // 0')
    if [ "$known" -ge "$N" ]; then
      echo "$(now) - $T0" | bc
      return 0
    fi
    kill -0 $PID 2>/dev/null || { echo "the crawl ended before $N URLs were known ($known)" >&2; return 1; }
    sleep 0.05
  done
}

stop_crawl() {
  curl -sf -X POST "$API/stop" >/dev/null || true
  wait $PID || true
}

peak_kb() { sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$1.time"; }

report() { # mode seconds log known
  local kb; kb=$(peak_kb "$3")
  printf '%-8s N=%s  time to N %6.1f s  known at stop %s  peak RSS %s MB  %s bytes/URL\n' \
    "$1" "$N" "$2" "$4" "$((kb / 1024))" "$(echo "$kb * 1024 / $4" | bc)"
}

for mode in $MODES; do
  case $mode in
  memory)
    T0=$(now)
    start_crawl "$WORK/memory" $SEEDS
    secs=$(until_known)
    known=$(stats | jq -r '.resources.discovered')
    stop_crawl
    report memory "$secs" "$WORK/memory" "$known"
    ;;
  out)
    rm -rf "$WORK/crawl"
    T0=$(now)
    start_crawl "$WORK/out" --out "$WORK/crawl" --store none $SEEDS
    secs=$(until_known)
    known=$(stats | jq -r '.resources.discovered')
    stop_crawl
    report out "$secs" "$WORK/out" "$known"
    bytes=$(du -sb "$WORK/crawl" | cut -f1)
    state=$(stat -c %s "$WORK/crawl/state.redb")
    printf 'folder   %s MB (state.redb %s MB): %s bytes/URL (state.redb %s)\n' \
      "$((bytes >> 20))" "$((state >> 20))" "$((bytes / known))" "$((state / known))"
    # The resume: the checkpoint is read before the control API starts.
    T0=$(now)
    start_crawl "$WORK/resume" --out "$WORK/crawl" --store none
    ready=$(echo "$(now) - $T0" | bc)
    before=$(stats | jq '[.http.status[]] | add // 0')
    while :; do
      fetched=$(stats | jq '[.http.status[]] | add // 0')
      [ "$fetched" -gt "$before" ] && break
      kill -0 $PID 2>/dev/null || break
      sleep 0.02
    done
    fetching=$(echo "$(now) - $T0" | bc)
    stop_crawl
    printf 'resume   ready (API answers) %.1f s, fetching again %.1f s, peak RSS %s MB\n' \
      "$ready" "$fetching" "$(($(peak_kb "$WORK/resume") / 1024))"
    ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
done
