#!/usr/bin/env bash
# Comparison benchmark: Marp CLI (npm @marp-team/marp-cli) driving Debian's Chromium exports
# the same deck that plinth exports: the whole deck to one PDF, and every slide to a
# 1920x1080 PNG. Each export is one `marp` command, timed wall-clock from start to exit
# (node start, Chromium launch, render, write), RUNS times after one untimed warm-up.
#
# Usage: bench/marp.sh [DECK.md, default fixtures/decks/bench20.md] [RUNS, default 5]
# Needs: apt-get install -y chromium poppler-utils; node and npm (marp-cli is installed on
# first use into bench/.marp, git-ignored). Outputs are left in bench/out/marp/.
# Prints `key value` lines on stdout (progress goes to stderr), e.g.
#   marp_pdf_ms_median 3100
#   marp_png_ms_median 5400
#   marp_png_ms_per_slide 270.0
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DECK=${1:-fixtures/decks/bench20.md}
RUNS=${2:-5}
WARMUP=${WARMUP:-1}
MARP_CLI_VERSION=4.5.1
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
MARP=$ROOT/bench/.marp/node_modules/.bin/marp
OUT=$ROOT/bench/out/marp

[ -f "$DECK" ] || { echo "no deck at $DECK" >&2; exit 1; }
[ -x "$CHROMIUM" ] || { echo "no $CHROMIUM: apt-get install -y chromium" >&2; exit 1; }
for tool in pdfinfo pdftotext file node npm python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (pdfinfo, pdftotext: apt-get install -y poppler-utils)" >&2; exit 1; }
done
if [ ! -x "$MARP" ]; then
  echo "installing @marp-team/marp-cli@$MARP_CLI_VERSION into bench/.marp" >&2
  npm install --prefix "$ROOT/bench/.marp" --no-audit --no-fund "@marp-team/marp-cli@$MARP_CLI_VERSION" >&2
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT/png"

# The deck in Marp's syntax, with the images beside it.
SLIDES=$(bench/slides.md.sh "$DECK" "$WORK")
cp "$WORK/deck.md" "$OUT/deck.marp.md"

# Chromium through a wrapper that adds the flags a root, GPU-less, offline machine needs.
# Marp (through puppeteer) already passes --headless=new, --no-sandbox as root (also asked
# for by CHROME_NO_SANDBOX), --disable-gpu (CHROME_DISABLE_GPU), --disable-background-networking
# and --disable-component-update; the wrapper makes them hold whatever Marp's defaults become.
cat >"$WORK/chromium" <<EOF
#!/bin/sh
exec "$CHROMIUM" --no-sandbox --disable-gpu --disable-dev-shm-usage \\
  --disable-background-networking --disable-component-update --disable-sync \\
  --disable-breakpad --no-first-run --no-default-browser-check --metrics-recording-only "\$@"
EOF
chmod +x "$WORK/chromium"
export CHROME_PATH="$WORK/chromium" CHROME_NO_SANDBOX=1 CHROME_DISABLE_GPU=1

marp() { # marp options...: one conversion of deck.md, run from the deck's folder
  if ! (cd "$WORK" && "$MARP" --no-config-file --browser chrome --browser-path "$WORK/chromium" \
    --allow-local-files "$@" deck.md) >"$WORK/log" 2>&1; then
    cat "$WORK/log" >&2
    echo "marp failed: marp $*" >&2
    exit 1
  fi
}
now_ms() { date +%s%3N; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2 + 0.5) }'; }
pdf_pages() { pdfinfo "$1" 2>/dev/null | awk '/^Pages:/ { print $2 }'; }

echo "marp_cli_version $("$MARP" --version | sed -n 's/.*marp-cli v\([0-9.]*\).*/\1/p')"
echo "chromium_version $("$CHROMIUM" --version 2>/dev/null | awk '{ print $2 }')"
echo "marp_slides $SLIDES"
echo "marp_runs $RUNS"

# PDF: the whole deck, one file.
PDF=$OUT/deck.pdf
pdf_once() {
  rm -f "$PDF"
  local t0 t1
  t0=$(now_ms)
  marp --pdf -o "$PDF"
  t1=$(now_ms)
  [ "$(pdf_pages "$PDF")" = "$SLIDES" ] || { echo "PDF has $(pdf_pages "$PDF") pages, not $SLIDES" >&2; exit 1; }
  echo $((t1 - t0))
}
for _ in $(seq 1 "$WARMUP"); do pdf_once >/dev/null; done
PDF_MS=()
for i in $(seq 1 "$RUNS"); do
  ms=$(pdf_once)
  PDF_MS+=("$ms")
  echo "marp pdf run $i: $ms ms" >&2
  echo "marp_pdf_ms_run$i $ms"
done
echo "marp_pdf_ms_median $(median "${PDF_MS[@]}")"
echo "marp_pdf_pages $(pdf_pages "$PDF")"
echo "marp_pdf_bytes $(stat -c %s "$PDF")"
pdftotext "$PDF" "$WORK/deck.txt" || { echo "pdftotext cannot read $PDF" >&2; exit 1; }
[ -s "$WORK/deck.txt" ] || { echo "pdftotext found no text in $PDF" >&2; exit 1; }
echo "marp_pdf_text_chars $(wc -m <"$WORK/deck.txt")"

# PNG: every slide, 1920x1080 (Marp draws 1280x720 at scale 1).
png_once() {
  rm -f "$OUT"/png/*.png
  local t0 t1 n
  t0=$(now_ms)
  marp --images png --image-scale 1.5 -o "$OUT/png/deck.png"
  t1=$(now_ms)
  n=$(find "$OUT/png" -name 'deck.*.png' | wc -l)
  [ "$n" = "$SLIDES" ] || { echo "$n PNG files, not $SLIDES" >&2; exit 1; }
  echo $((t1 - t0))
}
for _ in $(seq 1 "$WARMUP"); do png_once >/dev/null; done
PNG_MS=()
for i in $(seq 1 "$RUNS"); do
  ms=$(png_once)
  PNG_MS+=("$ms")
  echo "marp png run $i: $ms ms" >&2
  echo "marp_png_ms_run$i $ms"
done
PNG_MEDIAN=$(median "${PNG_MS[@]}")
echo "marp_png_ms_median $PNG_MEDIAN"
echo "marp_png_ms_per_slide $(awk -v t="$PNG_MEDIAN" -v n="$SLIDES" 'BEGIN { printf "%.1f", t / n }')"
echo "marp_png_files $(find "$OUT/png" -name 'deck.*.png' | wc -l)"
SIZES=$(file "$OUT"/png/deck.*.png | sed -n 's/.*PNG image data, \([0-9]*\) x \([0-9]*\),.*/\1x\2/p' | sort -u)
[ "$SIZES" = "1920x1080" ] || { echo "PNG sizes are not all 1920x1080: $SIZES" >&2; exit 1; }
echo "marp_png_size $SIZES"
echo "marp_png_bytes $(cat "$OUT"/png/deck.*.png | wc -c)"
