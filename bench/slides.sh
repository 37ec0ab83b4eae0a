#!/usr/bin/env bash
# Slide export benchmark (issue 6): a 20-slide markdown deck (text, lists, code, two
# images) exported to PDF and to PNG through plinth's API and workers, then the same
# content with Marp CLI driving Chromium (bench/marp.sh), in the same run.
# SQLite by default; set DATABASE_URL=postgres://... for PostgreSQL.
# Also times `plinth slides render` (the author's CLI) cold: one process per export.
# Usage: bench/slides.sh [RUNS, default 5]   (SKIP_MARP=1 skips the comparison;
#   DECK=fixtures/decks/bench20-rich.md for the deck with tables, highlighting, CJK, emoji;
#   RUST_LOG=warn,plinth_workers=debug logs each export's phases: "export timings").
# The server's log is left in bench/out/slides-server.log.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
DECK=${DECK:-fixtures/decks/bench20.md}
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
mkdir -p bench/out
DB=${DATABASE_URL:-sqlite://$DATA/plinth.db}
cleanup() {
  kill "${PLINTH_PID:-}" 2>/dev/null || true
  cp "$DATA/err" bench/out/slides-server.log 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
PLINTH_RATE_LIMIT_MULTIPLIER=100000 RUST_LOG=${RUST_LOG:-warn} \
  ./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" --database-url "$DB" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
for _ in $(seq 1 100); do grep -q listening "$DATA/out" 2>/dev/null && break; sleep 0.1; done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
KEY=$(curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"author@bench.example","password":"pw"}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
./target/release/plinth users set-level --email author@bench.example --level 10 \
  --data-dir "$DATA" --database-url "$DB" >/dev/null
sleep 6 # the account cache expires after 5 s

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}; deck: $DECK"
echo "command: bench/slides.sh $RUNS"
python3 bench/slides.py "$P" "$KEY" "$DECK" "$RUNS" bench/out/plinth.pdf | tee "$DATA/plinth.txt"
# The CLI, cold (process start, font scan, parse, render, write), images beside the deck.
CLI=$DATA/cli
mkdir -p "$CLI/png"
sed -e 's#asset:11111111-1111-4111-8111-111111111111#chart.png#g' \
  -e 's#asset:22222222-2222-4222-8222-222222222222#photo.jpg#g' "$DECK" >"$CLI/deck.md"
cp fixtures/decks/chart.png fixtures/decks/photo.jpg "$CLI/"
python3 - "$CLI" "$RUNS" <<'PY' | tee -a "$DATA/plinth.txt"
import statistics, subprocess, sys, time
cli, runs = sys.argv[1], int(sys.argv[2])
def timed(*args):
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["./target/release/plinth", "slides", "render", f"{cli}/deck.md", *args],
                       check=True, stderr=subprocess.DEVNULL)
        out.append((time.perf_counter() - t) * 1000)
    return statistics.median(out)
print(f"plinth_cli_pdf_ms_median {timed('-o', f'{cli}/deck.pdf'):.0f}")
print(f"plinth_cli_png_ms_median {timed('-o', f'{cli}/png/deck.png'):.0f}")
PY
[ -n "${SKIP_MARP:-}" ] && exit 0
bench/marp.sh "$DECK" "$RUNS" | tee "$DATA/marp.txt"
python3 - "$DATA/plinth.txt" "$DATA/marp.txt" <<'PY'
import sys
v = {}
for f in sys.argv[1:]:
    for line in open(f):
        k, _, rest = line.partition(" ")
        v[k] = rest.strip()
f = lambda k: float(v[k])
print(f"ratio_pdf_marp_over_plinth_wall {f('marp_pdf_ms_median') / f('plinth_pdf_wall_ms_median'):.1f}")
print(f"ratio_png_marp_over_plinth_wall {f('marp_png_ms_median') / f('plinth_png_wall_ms_median'):.1f}")
PY
