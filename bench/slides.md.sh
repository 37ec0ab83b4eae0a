#!/usr/bin/env bash
# Turns a plinth markdown deck (syntax in docs/slides.md) into the same deck in Marp's
# markdown, for the comparison benchmark (bench/marp.sh). Writes the Marp markdown to
# OUT_DIR/deck.md and copies the images beside it.
#
# Usage: bench/slides.md.sh DECK.md OUT_DIR [ASSET_DIR]
#   ASSET_DIR (default: the deck's own folder) holds the images the deck's assets stand for:
#   asset:11111111-1111-4111-8111-111111111111 -> chart.png
#   asset:22222222-2222-4222-8222-222222222222 -> photo.jpg
#   and any other asset:<uuid> -> <uuid>.png, .jpg or .jpeg if such a file is there.
#
# What changes: the front matter gets `marp: true` (theme light -> Marp's `default`, dark ->
# `default` with `class: invert`); hidden slides are left out (plinth does not export them);
# `<!-- notes: x -->` becomes Marp's presenter-note comment `<!-- x -->`; `<!-- layout: title -->`
# becomes `<!-- _class: lead -->` (centred by a style in the front matter); images get a
# height (Marp draws them at their natural size, plinth fits them in the content area).
# Slide separators and everything else stay as they are.
set -euo pipefail
DECK=${1:?usage: bench/slides.md.sh DECK.md OUT_DIR [ASSET_DIR]}
OUT=${2:?usage: bench/slides.md.sh DECK.md OUT_DIR [ASSET_DIR]}
ASSETS=${3:-$(dirname "$DECK")}
mkdir -p "$OUT"

python3 - "$DECK" "$OUT" "$ASSETS" <<'PY'
import os
import re
import shutil
import sys

deck, out, assets = sys.argv[1:4]
known = {
    "11111111-1111-4111-8111-111111111111": "chart.png",
    "22222222-2222-4222-8222-222222222222": "photo.jpg",
}
lines = open(deck, encoding="utf-8").read().split("\n")

# Front matter: first line `---`, closed by the next `---`, only key: value lines between.
meta = {}
start = 0
if lines and lines[0].rstrip() == "---" and "---" in [l.rstrip() for l in lines[1:]]:
    end = 1 + [l.rstrip() for l in lines[1:]].index("---")
    body = lines[1:end]
    if end > 1 and all(not l.strip() or re.match(r"^[A-Za-z0-9_-]+:", l) for l in body):
        for l in body:
            if ":" in l:
                k, v = l.split(":", 1)
                meta[k.strip()] = v.strip().strip('"')
        start = end + 1

# Split into slides on `---` lines outside fenced code.
slides = [[]]
fence = None
for line in lines[start:]:
    t = line.lstrip()
    if fence:
        if t.startswith(fence) and set(t.rstrip()) == {fence[0]}:
            fence = None
    else:
        m = re.match(r"^(`{3,}|~{3,})", t)
        if m:
            fence = m.group(1)
        elif line.rstrip() == "---":
            slides.append([])
            continue
    slides[-1].append(line)
if len(slides) > 1 and all(not l.strip() for l in slides[0]):
    slides.pop(0)

copied = set()


def image(m):
    alt, url = m.group(1), m.group(2).strip()
    uuid = url[len("asset:"):]
    name = known.get(uuid)
    if name is None:
        for ext in (".png", ".jpg", ".jpeg"):
            if os.path.exists(os.path.join(assets, uuid + ext)):
                name = uuid + ext
                break
    if name is None:
        sys.exit(f"slides.md.sh: no image for asset {uuid} in {assets}")
    if name not in copied:
        shutil.copy(os.path.join(assets, name), os.path.join(out, name))
        copied.add(name)
    return f"![{alt} h:460]({name})"


converted = []
for slide in slides:
    text = "\n".join(slide)
    outside = re.sub(r"```.*?```|~~~.*?~~~", "", text, flags=re.S)
    if re.search(r"<!--\s*hidden(:\s*true)?\s*-->", outside):
        continue
    parts = re.split(r"(```.*?```|~~~.*?~~~)", text, flags=re.S)
    for i in range(0, len(parts), 2):  # even parts are outside code fences
        p = parts[i]
        p = re.sub(r"<!--\s*layout:\s*title\s*-->", "<!-- _class: lead -->", p)
        p = re.sub(r"<!--\s*layout:\s*content\s*-->", "", p)
        p = re.sub(r"<!--\s*notes:\s*(.*?)\s*-->", r"<!-- \1 -->", p, flags=re.S)
        p = re.sub(r"!\[([^\]]*)\]\(\s*(asset:[^)\s]+)\s*\)", image, p)
        parts[i] = p
    converted.append("".join(parts).strip("\n"))

front = ["---", "marp: true", "size: 16:9", "theme: default",
         "style: |", "  section.lead { text-align: center; }"]
if meta.get("theme") == "dark":
    front.append("class: invert")
if meta.get("title"):
    front.append("title: " + meta["title"].replace(":", " -"))
front.append("---")
with open(os.path.join(out, "deck.md"), "w", encoding="utf-8") as f:
    f.write("\n".join(front) + "\n\n" + "\n\n---\n\n".join(converted) + "\n")
print(len(converted))
PY
