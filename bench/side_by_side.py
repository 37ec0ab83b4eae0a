"""Puts a plinth slide PNG and Marp CLI's PNG of the same slide side by side, each
scaled to 960 px wide, labelled, as one small PNG for docs/slides-samples/.
Needs Pillow (pip install pillow).
Usage: python3 bench/side_by_side.py PLINTH.png MARP.png OUT.png
       python3 bench/side_by_side.py BEFORE.png AFTER.png MARP.png OUT.png   (three panels:
       plinth before a change, after it, and Marp; each 640 px wide)
"""

import sys

from PIL import Image, ImageDraw

WIDTH = 960
GAP = 16
LABEL = 28


def scaled(path, width=WIDTH):
    im = Image.open(path).convert("RGB")
    return im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)


def main():
    if len(sys.argv) == 5:
        paths, out = sys.argv[1:4], sys.argv[4]
        names = ("plinth before", "plinth after", "Marp CLI")
        width = 640
    else:
        paths, out = sys.argv[1:3], sys.argv[3]
        names = ("plinth", "Marp CLI")
        width = WIDTH
    ims = [scaled(p, width) for p in paths]
    h = max(im.height for im in ims)
    sheet = Image.new("RGB", (len(ims) * (width + GAP) - GAP, h + LABEL), "white")
    draw = ImageDraw.Draw(sheet)
    for i, (im, name) in enumerate(zip(ims, names)):
        x = i * (width + GAP)
        draw.text((x + 8, 8), name, fill="black")
        sheet.paste(im, (x, LABEL))
    # 256 colours keep a slide's flat areas and text sharp at a fraction of the size.
    sheet.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)


if __name__ == "__main__":
    main()
