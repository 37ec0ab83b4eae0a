//! Limits on an SVG's structure, checked on the XML before usvg converts it: usvg
//! expands every `<use>` and marker into a copy (a 1 KB file can ask for millions of
//! nodes) and converts nesting recursively (deep nesting overflows the stack).

use std::collections::HashMap;

use resvg::usvg::roxmltree::{Document, Node, NodeId};

/// Elements after `<use>` references and markers are expanded (text counts one
/// element per 16 characters, an embedded image one per KiB of its data).
pub const MAX_SVG_ELEMENTS: u64 = 200_000;
/// Nesting of elements, `<use>` references followed.
pub const MAX_SVG_DEPTH: u64 = 100;

const XLINK: &str = "http://www.w3.org/1999/xlink";

/// `Err` names the limit the document is over.
pub fn check(doc: &Document) -> Result<(), String> {
    let root = doc.root_element();
    let ids: HashMap<&str, NodeId> = doc
        .descendants()
        .filter_map(|n| Some((n.attribute("id")?, n.id())))
        .collect();
    let base = own_sizes(doc);
    // Expanded size and depth of every element, depth first without recursion; a
    // `<use>` of an element being expanded (a cycle) counts nothing, as usvg drops it.
    let n = doc.descendants().count() + 1;
    let mut done: Vec<Option<(u64, u64)>> = vec![None; n + 1];
    let mut open = vec![false; n + 1];
    let frame = |node| Frame::new(node, &base);
    let mut stack = vec![frame(root)];
    open[root.id().get_usize()] = true;
    while let Some(top) = stack.last_mut() {
        let step = if let Some(child) = top.next {
            top.next = child.next_sibling();
            Some(child).filter(|c| c.is_element())
        } else if !top.target {
            top.target = true;
            (top.node.tag_name().name() == "use")
                .then(|| href(top.node))
                .flatten()
                .and_then(|id| ids.get(id))
                .and_then(|id| doc.get_node(*id))
        } else {
            None
        };
        match step {
            Some(next) => {
                let i = next.id().get_usize();
                if let Some((size, depth)) = done[i] {
                    top.size = top.size.saturating_add(size);
                    top.depth = top.depth.max(depth + 1);
                } else if !open[i] {
                    open[i] = true;
                    stack.push(frame(next));
                }
            }
            None if top.next.is_none() && top.target => {
                let f = stack.pop().expect("the top frame");
                let i = f.node.id().get_usize();
                open[i] = false;
                done[i] = Some((f.size, f.depth));
                if f.size > MAX_SVG_ELEMENTS {
                    return Err(format!(
                        "the SVG image expands to more than {MAX_SVG_ELEMENTS} elements \
                         (through <use> references and markers); that is the limit"
                    ));
                }
                if f.depth > MAX_SVG_DEPTH {
                    return Err(format!(
                        "the SVG image nests elements more than {MAX_SVG_DEPTH} levels deep \
                         (through <use> references); that is the limit"
                    ));
                }
                if let Some(parent) = stack.last_mut() {
                    parent.size = parent.size.saturating_add(f.size);
                    parent.depth = parent.depth.max(f.depth + 1);
                }
            }
            None => {}
        }
    }
    Ok(())
}

struct Frame<'a, 'i> {
    node: Node<'a, 'i>,
    next: Option<Node<'a, 'i>>,
    target: bool,
    size: u64,
    depth: u64,
}

impl<'a, 'i> Frame<'a, 'i> {
    fn new(node: Node<'a, 'i>, base: &[u64]) -> Self {
        Frame {
            node,
            next: node.first_child(),
            target: false,
            size: base[node.id().get_usize()],
            depth: 1,
        }
    }
}

fn href<'a>(node: Node<'a, '_>) -> Option<&'a str> {
    node.attribute((XLINK, "href"))
        .or_else(|| node.attribute("href"))?
        .strip_prefix('#')
}

/// Each node's own weight: 1 per element, its text, its embedded data, and the
/// marker copies drawn on its vertices when a marker applies to it.
fn own_sizes(doc: &Document) -> Vec<u64> {
    let n = doc.descendants().count() + 2;
    let mut size = vec![0u64; n];
    let mut marked = vec![false; n];
    let all_marked = doc
        .descendants()
        .any(|n| n.tag_name().name() == "style" && n.text().is_some_and(|t| t.contains("marker")));
    let marker = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "marker")
        .map(|m| m.descendants().filter(|d| d.is_element()).count() as u64)
        .max()
        .unwrap_or(0);
    for node in doc.descendants() {
        let i = node.id().get_usize();
        let parent_marked = node.parent().is_some_and(|p| marked[p.id().get_usize()]);
        if node.is_text() {
            let in_text = node.parent().is_some_and(|p| {
                matches!(p.tag_name().name(), "text" | "tspan" | "textPath" | "a")
            });
            if in_text {
                if let (Some(p), Some(t)) = (node.parent(), node.text()) {
                    let pi = p.id().get_usize();
                    size[pi] = size[pi].saturating_add(t.len() as u64 / 16);
                }
            }
            continue;
        }
        if !node.is_element() {
            continue;
        }
        marked[i] = parent_marked
            || node.attributes().any(|a| {
                a.name().starts_with("marker")
                    || (a.name() == "style" && a.value().contains("marker"))
            });
        let mut own = 1u64;
        if node.tag_name().name() == "image" {
            own += node
                .attribute((XLINK, "href"))
                .or(node.attribute("href"))
                .map_or(0, |h| h.len() as u64 / 1024);
        }
        if marker > 0 && (marked[i] || all_marked) {
            let vertices = ["d", "points"]
                .iter()
                .filter_map(|a| node.attribute(*a))
                .map(|v| numbers(v) / 2 + 2)
                .sum::<u64>()
                .max(2);
            own = own.saturating_add(vertices.saturating_mul(marker));
        }
        size[i] = size[i].saturating_add(own);
    }
    size
}

/// Numbers in path data or a point list.
fn numbers(v: &str) -> u64 {
    let mut count = 0;
    let mut in_number = false;
    for b in v.bytes() {
        let part = b.is_ascii_digit() || b == b'.';
        if part && !in_number {
            count += 1;
        }
        in_number = part;
    }
    count
}
