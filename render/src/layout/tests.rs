use super::*;

#[test]
fn wrap_breaks_at_spaces_and_long_words() {
    let g = plain_glyphs("aaa bbb ccc", Face::Mono, 10.0);
    let adv = metrics(Face::Mono).advance('a') * 10.0;
    let lines = wrap(&g, adv * 7.5);
    assert_eq!(lines.len(), 2);
    let text = |l: &Vec<(usize, f32)>| l.iter().map(|&(i, _)| g[i].c).collect::<String>();
    assert_eq!(text(&lines[0]), "aaa bbb");
    assert_eq!(text(&lines[1]), "ccc");
    let long = plain_glyphs("abcdefghij", Face::Mono, 10.0);
    assert_eq!(wrap(&long, adv * 4.5).len(), 3);
}
