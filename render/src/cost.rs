//! What drawing a parsed SVG costs resvg, estimated before drawing it: the device
//! pixels of every offscreen layer and per-pixel pass (filters, masks, clip paths,
//! group opacity, patterns, nested images), each weighted by its measured time, plus
//! the pixels every path fills. `<use>` is already expanded in a `usvg::Tree`, so each
//! instance counts. One unit is about one nanosecond of resvg on the reference
//! machine (see the calibration in docs/slides.md, "Image limits").

use resvg::usvg::{self, filter::Kind, Node, Paint, Transform};

/// An SVG image costlier than this to draw at its size is refused: at validation
/// (drawn fitted into [`CHECK_SIZE`]) and again before every rasterisation.
pub const MAX_SVG_COST: u64 = 250_000_000;
/// The box an upload is checked in: a full slide of the PNG export. (The PDF draws
/// images at up to twice that, and lowers the density for one that would cost more.)
pub const CHECK_SIZE: (u32, u32) = (1920, 1080);

// Weights per device pixel, from the `svg_cost_calibration` test (nanoseconds per
// pixel, rounded up).
/// A rectangle's fill (tiny-skia's fast path).
const FILL_RECT: f64 = 1.0;
/// Any other path: anti-aliased, four sub-scanlines per row.
const FILL_PATH: f64 = 30.0;
const GRADIENT: f64 = 16.0;
const PATTERN: f64 = 16.0;
/// Allocating a layer, and compositing it back with a bilinear pattern shader.
const LAYER: f64 = 12.0;
const CLIP: f64 = 8.0;
const MASK: f64 = 40.0;
/// A filter region: source copy, colour-space conversions in and out.
const FILTER: f64 = 10.0;
const BOX_BLUR: f64 = 160.0;
/// resvg's IIR blur (sigma under 2 pixels) works in f64 per channel.
const IIR_BLUR: f64 = 600.0;
/// Decoding an embedded raster image, per image pixel, at every draw.
const DECODE: f64 = 40.0;
const PER_NODE: f64 = 60.0;
const PER_POINT: f64 = 20.0;

/// A device-space box.
#[derive(Clone, Copy, Debug)]
struct Area {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Area {
    fn of(x: f32, y: f32, w: f32, h: f32, ts: Transform) -> Area {
        let (x, y, w, h) = (x as f64, y as f64, w as f64, h as f64);
        let map = |px: f64, py: f64| {
            (
                ts.sx as f64 * px + ts.kx as f64 * py + ts.tx as f64,
                ts.ky as f64 * px + ts.sy as f64 * py + ts.ty as f64,
            )
        };
        let pts = [map(x, y), map(x + w, y), map(x, y + h), map(x + w, y + h)];
        let (mut a, mut b) = (pts[0], pts[0]);
        for p in pts {
            a = (a.0.min(p.0), a.1.min(p.1));
            b = (b.0.max(p.0), b.1.max(p.1));
        }
        Area {
            x0: a.0,
            y0: a.1,
            x1: b.0,
            y1: b.1,
        }
    }

    fn clip(self, to: Area) -> Area {
        Area {
            x0: self.x0.max(to.x0),
            y0: self.y0.max(to.y0),
            x1: self.x1.min(to.x1).max(self.x0.max(to.x0)),
            y1: self.y1.min(to.y1).max(self.y0.max(to.y0)),
        }
    }

    fn pixels(self) -> f64 {
        let (w, h) = (self.x1 - self.x0, self.y1 - self.y0);
        if w.is_finite() && h.is_finite() {
            (w.max(0.0) + 1.0) * (h.max(0.0) + 1.0)
        } else {
            f64::MAX / 4.0
        }
    }
}

/// Where drawing happens: the pixmap drawn into, and the region resvg clips layers
/// to (five times the canvas each way, as `resvg::render` does).
#[derive(Clone, Copy)]
struct Ctx {
    pixmap: Area,
    max: Area,
}

impl Ctx {
    fn canvas(w: f64, h: f64) -> Ctx {
        Ctx {
            pixmap: Area {
                x0: 0.0,
                y0: 0.0,
                x1: w,
                y1: h,
            },
            max: Area {
                x0: -2.0 * w,
                y0: -2.0 * h,
                x1: 3.0 * w,
                y1: 3.0 * h,
            },
        }
    }
}

/// The cost of drawing `tree` with `ts` (user units to device pixels) onto a
/// `width`×`height` pixmap, in units of [`MAX_SVG_COST`].
pub fn svg_cost(tree: &usvg::Tree, ts: Transform, width: u32, height: u32) -> u64 {
    let ctx = Ctx::canvas(width as f64, height as f64);
    let cost = group_children(tree.root(), ts, ctx);
    if cost.is_finite() {
        cost.min(u64::MAX as f64 / 2.0) as u64
    } else {
        u64::MAX / 2
    }
}

/// The transform that fits an image of `size` into a `w`×`h` box (keeping its aspect).
pub fn fit(size: usvg::Size, w: u32, h: u32) -> (Transform, u32, u32) {
    let s = (w as f32 / size.width()).min(h as f32 / size.height());
    let s = if s.is_finite() && s > 0.0 { s } else { 1.0 };
    let (fw, fh) = (
        (size.width() * s).ceil().max(1.0) as u32,
        (size.height() * s).ceil().max(1.0) as u32,
    );
    (Transform::from_scale(s, s), fw, fh)
}

fn group_children(g: &usvg::Group, ts: Transform, ctx: Ctx) -> f64 {
    g.children().iter().map(|n| node(n, ts, ctx)).sum()
}

fn node(n: &Node, ts: Transform, ctx: Ctx) -> f64 {
    PER_NODE
        + match n {
            Node::Group(g) => group(g, ts, ctx),
            Node::Path(p) => path(p, ts, ctx),
            Node::Image(img) => image(img, ts, ctx),
            Node::Text(t) => group(t.flattened(), ts, ctx),
        }
}

fn group(g: &usvg::Group, ts: Transform, ctx: Ctx) -> f64 {
    let ts = ts.pre_concat(g.transform());
    if !g.should_isolate() {
        return group_children(g, ts, ctx);
    }
    let b = g.layer_bounding_box();
    let layer = Area::of(b.x(), b.y(), b.width(), b.height(), ts).clip(ctx.max);
    let px = layer.pixels();
    let inner = Ctx {
        pixmap: layer,
        max: ctx.max,
    };
    let mut cost = LAYER * px + group_children(g, ts, inner);
    for f in g.filters() {
        let r = f.rect();
        let region = Area::of(r.x(), r.y(), r.width(), r.height(), ts).clip(layer);
        cost += filter(f, ts, region);
    }
    if let Some(clip) = g.clip_path() {
        cost += clip_cost(clip, ts, inner);
    }
    let mut mask = g.mask();
    while let Some(m) = mask {
        cost += MASK * px + group_children(m.root(), ts, inner);
        mask = m.mask();
    }
    cost
}

fn clip_cost(clip: &usvg::ClipPath, ts: Transform, ctx: Ctx) -> f64 {
    let ts2 = ts.pre_concat(clip.transform());
    let mut cost = CLIP * ctx.pixmap.pixels() + clip_children(clip.root(), ts2, ctx);
    if let Some(inner) = clip.clip_path() {
        cost += clip_cost(inner, ts, ctx);
    }
    cost
}

/// Clip path content is filled flat, except groups with their own clip path: each
/// takes a layer of the whole pixmap.
fn clip_children(g: &usvg::Group, ts: Transform, ctx: Ctx) -> f64 {
    let mut cost = 0.0;
    for n in g.children() {
        cost += PER_NODE
            + match n {
                Node::Path(p) => path(p, ts, ctx),
                Node::Text(t) => clip_children(t.flattened(), ts, ctx),
                Node::Group(g) => {
                    let ts = ts.pre_concat(g.transform());
                    let own = g.clip_path().map_or(0.0, |c| {
                        2.0 * LAYER * ctx.pixmap.pixels() + clip_cost(c, ts, ctx)
                    });
                    own + clip_children(g, ts, ctx)
                }
                Node::Image(_) => 0.0,
            };
    }
    cost
}

fn filter(f: &usvg::filter::Filter, ts: Transform, region: Area) -> f64 {
    let px = region.pixels();
    let (sx, sy) = ts.get_scale();
    let (sx, sy) = (sx as f64, sy as f64);
    let mut cost = FILTER * px;
    for p in f.primitives() {
        let weight = match p.kind() {
            Kind::GaussianBlur(b) => blur(b.std_dev_x().get(), b.std_dev_y().get(), ts),
            Kind::DropShadow(d) => 100.0 + blur(d.std_dev_x().get(), d.std_dev_y().get(), ts),
            Kind::Morphology(m) => {
                let rx = (m.radius_x().get() as f64 * sx)
                    .round()
                    .max(0.0)
                    .min(region.x1 - region.x0);
                let ry = (m.radius_y().get() as f64 * sy)
                    .round()
                    .max(0.0)
                    .min(region.y1 - region.y0);
                8.0 + 4.0 * (2.0 * rx + 1.0) * (2.0 * ry + 1.0)
            }
            Kind::ConvolveMatrix(c) => {
                8.0 + 10.0 * c.matrix().columns() as f64 * c.matrix().rows() as f64
            }
            Kind::Turbulence(t) => 8.0 + 130.0 * t.num_octaves().min(1 << 20) as f64,
            Kind::DiffuseLighting(_) | Kind::SpecularLighting(_) => 60.0,
            Kind::Image(i) => {
                let inner = Ctx {
                    pixmap: region,
                    max: region,
                };
                4.0 + group_children(i.root(), ts, inner) / px.max(1.0)
            }
            Kind::DisplacementMap(_) => 40.0,
            Kind::Tile(_) => 20.0,
            Kind::Blend(_) | Kind::Composite(_) | Kind::Merge(_) => 20.0,
            Kind::ColorMatrix(_) | Kind::ComponentTransfer(_) => 20.0,
            Kind::Flood(_) | Kind::Offset(_) => 8.0,
        };
        cost += weight * px;
    }
    cost
}

/// Box blur (five passes each way) for a device sigma of 2 or more, IIR below: both
/// linear in the area whatever the radius.
fn blur(sx: f32, sy: f32, ts: Transform) -> f64 {
    let (kx, ky) = ts.get_scale();
    let (sx, sy) = (sx * kx, sy * ky);
    if sx <= 0.0 && sy <= 0.0 {
        0.0
    } else if sx >= 2.0 || sy >= 2.0 {
        BOX_BLUR
    } else {
        IIR_BLUR
    }
}

fn path(p: &usvg::Path, ts: Transform, ctx: Ctx) -> f64 {
    if !p.is_visible() {
        return 0.0;
    }
    let b = p.stroke_bounding_box();
    let area = Area::of(b.x(), b.y(), b.width(), b.height(), ts).clip(ctx.pixmap);
    let px = area.pixels();
    let points = p.data().points();
    let rect = points.len() <= 5;
    let mut cost = PER_POINT * points.len() as f64;
    if let Some(fill) = p.fill() {
        let per = if rect { FILL_RECT } else { FILL_PATH };
        cost += px * (per + paint(fill.paint()));
    }
    if let Some(stroke) = p.stroke() {
        // A stroke covers about its length times its width, within its box.
        let (kx, ky) = ts.get_scale();
        let k = kx.max(ky) as f64;
        let length: f64 = points
            .windows(2)
            .map(|w| ((w[1].x - w[0].x) as f64).hypot((w[1].y - w[0].y) as f64))
            .sum();
        let covered = (length * k * (stroke.width().get() as f64 * k + 2.0)).min(px);
        cost += covered * (FILL_PATH + paint(stroke.paint()));
    }
    // A pattern's tile is drawn for each path it paints.
    let paints = [p.fill().map(|f| f.paint()), p.stroke().map(|s| s.paint())];
    for pat in paints.into_iter().flatten() {
        if let Paint::Pattern(pat) = pat {
            cost += pattern(pat, ts);
        }
    }
    cost
}

/// What a paint adds per covered pixel.
fn paint(p: &Paint) -> f64 {
    match p {
        Paint::Color(_) => 0.0,
        Paint::LinearGradient(_) | Paint::RadialGradient(_) => GRADIENT,
        Paint::Pattern(_) => PATTERN,
    }
}

/// A pattern's tile is drawn into a pixmap of its own, at device scale, unclipped.
fn pattern(pat: &usvg::Pattern, ts: Transform) -> f64 {
    let (sx, sy) = ts.pre_concat(pat.transform()).get_scale();
    let r = pat.rect();
    let (w, h) = (
        (r.width() * sx).round() as f64,
        (r.height() * sy).round() as f64,
    );
    let tile = Area {
        x0: 0.0,
        y0: 0.0,
        x1: w,
        y1: h,
    };
    let ctx = Ctx {
        pixmap: tile,
        max: tile,
    };
    LAYER * tile.pixels() + group_children(pat.root(), Transform::from_scale(sx, sy), ctx)
}

fn image(img: &usvg::Image, ts: Transform, ctx: Ctx) -> f64 {
    if !img.is_visible() {
        return 0.0;
    }
    let size = img.size();
    let drawn = Area::of(0.0, 0.0, size.width(), size.height(), ts).clip(ctx.pixmap);
    match img.kind() {
        // A nested SVG is drawn into a pixmap the size of the current one.
        usvg::ImageKind::SVG(tree) => {
            2.0 * LAYER * ctx.pixmap.pixels() + group_children(tree.root(), ts, ctx)
        }
        // Decoded at every draw, then sampled bilinearly.
        _ => DECODE * (size.width() as f64 * size.height() as f64) + PATTERN * drawn.pixels(),
    }
}
