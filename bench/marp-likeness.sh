#!/usr/bin/env bash
# Layout likeness of plinth and Marp CLI, deck by deck (issue 44): renders every deck in
# fixtures/decks/marp-style/ with Marp CLI (1920x1080 PNG) and with plinth's renderer
# (the render_deck example), then scores each pair with marp-likeness.py.
# Usage: bench/marp-likeness.sh [DECK.md ...]   (default: every deck in the folder)
# Needs what bench/marp.sh needs, and Pillow (pip install pillow). SKIP_MARP=1 reuses
# Marp's PNGs from a previous run. Outputs stay in bench/out/likeness/<deck>/{plinth,marp}.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
MARP=$ROOT/bench/.marp/node_modules/.bin/marp
TOOL=${LIKENESS:-$ROOT/../shared/tools/marp-likeness.py}
[ -f "$TOOL" ] || TOOL=/work/shared/tools/marp-likeness.py
if [ ! -x "$MARP" ]; then
  npm install --prefix "$ROOT/bench/.marp" --no-audit --no-fund "@marp-team/marp-cli@4.5.1" >&2
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/chromium" <<EOC
#!/bin/sh
exec "$CHROMIUM" --no-sandbox --disable-gpu --disable-dev-shm-usage \\
  --disable-background-networking --disable-component-update --disable-sync \\
  --disable-breakpad --no-first-run --no-default-browser-check "\$@"
EOC
chmod +x "$WORK/chromium"
export CHROME_PATH="$WORK/chromium" CHROME_NO_SANDBOX=1 CHROME_DISABLE_GPU=1
[ -n "${SKIP_BUILD:-}" ] || cargo build -q --release -p plinth-render --example render_deck
DECKS=("$@")
[ ${#DECKS[@]} -gt 0 ] || DECKS=(fixtures/decks/marp-style/*.md)
for deck in "${DECKS[@]}"; do
  name=$(basename "$deck" .md)
  out=bench/out/likeness/$name
  if [ -z "${SKIP_MARP:-}" ] || [ ! -d "$out/marp" ]; then
    rm -rf "$out/marp" && mkdir -p "$out/marp"
    (cd "$(dirname "$deck")" && "$MARP" --no-config-file --browser chrome --browser-path "$WORK/chromium" \
      --allow-local-files --html --images png --image-scale 1.5 -o "$ROOT/$out/marp/marp.png" "$(basename "$deck")") \
      >"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; exit 1; }
  fi
  rm -rf "$out/plinth"
  if ! "${CARGO_TARGET_DIR:-target}/release/examples/render_deck" "$deck" "$out/plinth" >"$WORK/log" 2>&1; then
    echo "== $name: plinth refused the deck: $(tail -1 "$WORK/log")"
    continue
  fi
  echo "== $name"
  python3 "$TOOL" "$out/plinth" "$out/marp"
done
