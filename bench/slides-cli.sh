#!/usr/bin/env bash
# Issue 44, Speed: `plinth slides render` cold (one process per export: start, font
# scan, parse, highlighting, render, write) beside Marp CLI (bench/marp.sh) on the same
# deck in the same run. Prints medians and the ratio Marp / plinth.
#
# Usage: bench/slides-cli.sh [DECK.md, default fixtures/decks/bench20-rich.md] [RUNS, default 10]
#   PLINTH=path/to/plinth (default target/release/plinth); SKIP_MARP=1 skips Marp.
# Needs what bench/marp.sh needs (chromium, poppler-utils, node, npm).
set -euo pipefail
cd "$(dirname "$0")/.."
DECK=${1:-fixtures/decks/bench20-rich.md}
RUNS=${2:-10}
PLINTH=${PLINTH:-target/release/plinth}
[ -x "$PLINTH" ] || { echo "no $PLINTH: cargo build --release --bin plinth" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

now_ms() { date +%s%3N; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2 + 0.5) }'; }

# The deck as Marp reads it, images beside it: both tools render this one file.
SLIDES=$(bench/slides.md.sh "$DECK" "$WORK/deck")
echo "machine: $(nproc) cores, $(uname -m), kernel $(uname -r), $(date -u +%FT%TZ)"
echo "deck: $DECK ($SLIDES slides); runs: $RUNS"
echo "plinth_commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"

cold() { # plinth render options...: median wall ms of RUNS cold processes (after one untimed)
  local times=() t0 t1
  "$PLINTH" slides render "$WORK/deck/deck.md" "$@" 2>/dev/null
  for _ in $(seq 1 "$RUNS"); do
    t0=$(now_ms)
    "$PLINTH" slides render "$WORK/deck/deck.md" "$@" 2>/dev/null
    t1=$(now_ms)
    times+=($((t1 - t0)))
  done
  median "${times[@]}"
}
mkdir -p "$WORK/png"
PDF_MS=$(cold -o "$WORK/deck.pdf")
PNG_MS=$(cold -o "$WORK/png/deck.png")
echo "plinth_cli_pdf_ms_median $PDF_MS"
echo "plinth_cli_png_ms_median $PNG_MS"
echo "plinth_cli_png_ms_per_slide $(awk -v t="$PNG_MS" -v n="$SLIDES" 'BEGIN { printf "%.1f", t / n }')"
[ -n "${SKIP_MARP:-}" ] && exit 0

bench/marp.sh "$DECK" "${MARP_RUNS:-5}" | tee "$WORK/marp.txt"
MARP_PDF=$(awk '/^marp_pdf_ms_median/ { print $2 }' "$WORK/marp.txt")
MARP_PNG=$(awk '/^marp_png_ms_median/ { print $2 }' "$WORK/marp.txt")
echo "ratio_pdf_marp_over_plinth $(awk -v m="$MARP_PDF" -v p="$PDF_MS" 'BEGIN { printf "%.1f", m / p }')"
echo "ratio_png_marp_over_plinth $(awk -v m="$MARP_PNG" -v p="$PNG_MS" 'BEGIN { printf "%.1f", m / p }')"
