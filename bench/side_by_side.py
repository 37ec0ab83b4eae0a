"""Puts a plinth slide PNG and Marp CLI's PNG of the same slide side by side, each
scaled to 960 px wide, labelled, as one small PNG for docs/slides-samples/.
Needs Pillow (pip install pillow).
Usage: python3 bench/side_by_side.py PLINTH.png MARP.png OUT.png
"""

import sys

from PIL import Image, ImageDraw

WIDTH = 960
GAP = 16
LABEL = 28


def scaled(path):
    im = Image.open(path).convert("RGB")
    return im.resize((WIDTH, round(im.height * WIDTH / im.width)), Image.LANCZOS)


def main():
    plinth, marp, out = sys.argv[1:4]
    a, b = scaled(plinth), scaled(marp)
    h = max(a.height, b.height)
    sheet = Image.new("RGB", (2 * WIDTH + GAP, h + LABEL), "white")
    draw = ImageDraw.Draw(sheet)
    for x, im, name in ((0, a, "plinth"), (WIDTH + GAP, b, "Marp CLI")):
        draw.text((x + 8, 8), name, fill="black")
        sheet.paste(im, (x, LABEL))
    # 256 colours keep a slide's flat areas and text sharp at a fraction of the size.
    sheet.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)


if __name__ == "__main__":
    main()
