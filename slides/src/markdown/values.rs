//! Directive values, read the same in front matter and in `<!-- key: value -->`
//! comments: YAML scalars, yes/no, Marp's paginate values and colours.

/// A one-line YAML value: quotes removed, a trailing ` # comment` dropped (a value that
/// starts with `#`, such as a colour, is kept as Marp keeps it).
pub(super) fn yaml_scalar(value: &str) -> String {
    let v = value.trim();
    for q in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(q) {
            if let Some(end) = rest.find(q) {
                return rest[..end].to_owned();
            }
        }
    }
    let cut = v
        .char_indices()
        .find(|&(i, c)| c == '#' && i > 0 && v[..i].ends_with([' ', '\t']))
        .map_or(v, |(i, _)| &v[..i]);
    cut.trim().to_owned()
}

pub(super) fn yes_no(v: &str) -> Option<bool> {
    match v {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

pub(super) const PAGINATE_VALUES: &str = "paginate is true, false, hold, skip or hide";

/// Marp's paginate values: (the number shows, the slide advances the count). `hold`
/// shows the number without advancing it, `skip` neither; `hide` is `false`.
pub(super) fn paginate(v: &str) -> Option<(bool, bool)> {
    match v {
        "hold" => Some((true, false)),
        "skip" => Some((false, false)),
        "hide" => Some((false, true)),
        v => yes_no(v).map(|on| (on, true)),
    }
}

pub(super) fn color(v: &str) -> Result<(), String> {
    crate::parse_color(v).map(|_| ()).ok_or_else(|| {
        format!("`{v}` is not a colour (#rrggbb, #rgb, rgb(r, g, b) or a basic name such as white)")
    })
}
