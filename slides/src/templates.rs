//! Named starting points for `create` with `template`, listed by `capabilities`.

use serde::Serialize;

use crate::{parse_markdown, Deck};

#[derive(Debug, Clone, Copy, Serialize)]
pub struct TemplateInfo {
    pub name: &'static str,
    pub description: &'static str,
    #[serde(skip)]
    markdown: &'static str,
}

pub const TEMPLATES: &[TemplateInfo] = &[
    TemplateInfo {
        name: "blank",
        description: "One empty title slide",
        markdown: "<!-- layout: title -->\n# Untitled deck\n",
    },
    TemplateInfo {
        name: "title-and-bullets",
        description: "A title slide and one slide of bullet points",
        markdown: "<!-- layout: title -->\n# Presentation title\n\nSubtitle\n\n---\n\n## Agenda\n\n- First point\n- Second point\n- Third point\n",
    },
    TemplateInfo {
        name: "pitch",
        description: "Problem, solution, market, team and ask",
        markdown: "---\ntitle: Pitch\n---\n<!-- layout: title -->\n# Company name\n\nOne line that says what you do\n\n---\n\n## Problem\n\n- Who hurts, and how much\n\n---\n\n## Solution\n\n- What you built\n\n---\n\n## Market\n\n- How many, how big\n\n---\n\n## Team\n\n- Who, and why you\n\n---\n\n<!-- layout: title -->\n## The ask\n\nWhat you need, and what it buys\n",
    },
    TemplateInfo {
        name: "dark-talk",
        description: "A dark-theme talk: title, section, code slide, questions",
        markdown: "---\ntheme: dark\n---\n<!-- layout: title -->\n# Talk title\n\nSpeaker name\n\n---\n\n## Why this matters\n\n- One\n- Two\n\n---\n\n## Show me the code\n\n```rust\nfn main() {\n    println!(\"hello\");\n}\n```\n\n---\n\n<!-- layout: title -->\n# Questions?\n",
    },
];

/// The deck a template starts from.
pub fn template(name: &str) -> Option<Deck> {
    TEMPLATES
        .iter()
        .find(|t| t.name == name)
        .map(|t| parse_markdown(t.markdown).expect("templates are valid markdown"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_parses() {
        for t in super::TEMPLATES {
            assert!(super::template(t.name).is_some(), "{}", t.name);
        }
    }
}
