//! Slide rendering: deck → SVG → PNG (resvg), PDF (printpdf), HTML.
