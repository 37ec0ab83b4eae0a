//! Links: clickable areas over the text they were written on.

use printpdf::{Actions, BorderArray, LinkAnnotation, Op, Pt, Rect};

use super::{PageWriter, PT_PER_UNIT};

impl PageWriter {
    pub(super) fn link(&mut self, x: f32, top: f32, w: f32, h: f32, url: &str) {
        let bottom = self.y(top + h);
        self.ops.push(Op::LinkAnnotation {
            link: LinkAnnotation::new(
                Rect {
                    x: Pt(x * PT_PER_UNIT),
                    y: Pt(bottom),
                    width: Pt(w * PT_PER_UNIT),
                    height: Pt(h * PT_PER_UNIT),
                    mode: None,
                    winding_order: None,
                },
                Actions::Uri(url.to_owned()),
                Some(BorderArray::Solid([0.0, 0.0, 0.0])),
                None,
                None,
            ),
        });
    }
}
