//! A deck's operations: reading JSON, validation, slide ids and edits, the audience view.

use crate::*;

impl Deck {
    /// Parses and checks a JSON deck document, filling in missing slide ids.
    pub fn from_json(value: serde_json::Value) -> Result<Deck, Invalid> {
        Deck::from_json_report(value).map(|(deck, _)| deck)
    }

    /// [`Deck::from_json`], with what it mended (see [`Deck::mend`]): one warning each.
    pub fn from_json_report(value: serde_json::Value) -> Result<(Deck, Vec<String>), Invalid> {
        let mut deck: Deck = serde_path_to_error::deserialize(value)
            .map_err(|e| Invalid(format!("invalid document at `{}`: {}", e.path(), e.inner())))?;
        let mut warnings = deck.mend();
        deck.validate()?;
        // An author's colour is drawn as written, even when it is hard to read.
        for (i, why) in style_contrast_warnings(&deck.styles) {
            warnings.push(format!("styles[{i}]: {why}"));
        }
        Ok((deck, warnings))
    }

    /// Mends what a document's JSON Schema cannot rule out and a reader would draw one
    /// obvious way, as Marp draws a deck it does not fully understand, and says so: a
    /// slide id used twice (the later slide gets a fresh one), column breaks beyond the
    /// last column or inside a list or quote (dropped), table rows shorter or longer
    /// than the header (filled with empty cells or cut) and alignments beyond the
    /// columns (dropped). Fills in missing slide ids. What remains for
    /// [`Deck::validate`] are limits.
    pub fn mend(&mut self) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut seen = HashSet::new();
        let mut renamed = Vec::new();
        for (i, slide) in self.slides.iter_mut().enumerate() {
            if !slide.id.is_empty() && !seen.insert(slide.id.clone()) {
                renamed.push((i, std::mem::take(&mut slide.id)));
            }
        }
        self.fill_ids();
        for (i, old) in renamed {
            warnings.push(format!(
                "slide {}: id `{old}` is used by an earlier slide; this one is now `{}`",
                i + 1,
                self.slides[i].id
            ));
        }
        for (i, slide) in self.slides.iter_mut().enumerate() {
            let at = format!("slide {} ({})", i + 1, slide.id);
            let mut breaks = 0;
            slide.blocks.retain(|b| {
                if !matches!(b, Block::ColumnBreak) {
                    return true;
                }
                breaks += 1;
                breaks < MAX_COLUMNS
            });
            if breaks >= MAX_COLUMNS {
                warnings.push(format!(
                    "{at}: at most {MAX_COLUMNS} columns; {} column break(s) after the {}th \
                     dropped",
                    breaks + 1 - MAX_COLUMNS,
                    MAX_COLUMNS - 1
                ));
            }
            mend_blocks(&at, &mut slide.blocks, 0, &mut warnings);
        }
        warnings
    }

    /// Gives every slide without an id the first free `s<n>`.
    pub fn fill_ids(&mut self) {
        let mut used: HashSet<String> = self.slides.iter().map(|s| s.id.clone()).collect();
        let mut n = 1;
        for slide in self.slides.iter_mut().filter(|s| s.id.is_empty()) {
            while used.contains(&format!("s{n}")) {
                n += 1;
            }
            slide.id = format!("s{n}");
            used.insert(slide.id.clone());
        }
    }

    pub fn validate(&self) -> Result<(), Invalid> {
        if self.slides.is_empty() {
            return invalid("a deck needs at least one slide");
        }
        if self.slides.len() > MAX_SLIDES {
            return invalid(format!("a deck has at most {MAX_SLIDES} slides"));
        }
        check_text("title", self.title.as_deref())?;
        for (what, text) in [("header", &self.header), ("footer", &self.footer)] {
            if let Some(t) = text {
                check_marked(what, t)?;
            }
        }
        for (what, c) in [
            ("background_color", &self.background_color),
            ("color", &self.color),
            ("brand", &self.brand),
        ] {
            check_color(what, c.as_deref())?;
        }
        check_styles(&self.styles)?;
        if let Some(logo) = &self.logo {
            if uuid::Uuid::parse_str(logo).is_err() {
                return invalid(format!("logo `{logo}` is not an asset id"));
            }
        }
        let mut ids = HashSet::new();
        for (i, slide) in self.slides.iter().enumerate() {
            let at = format!("slide {} ({})", i + 1, slide.id);
            if slide.id.is_empty()
                || slide.id.chars().count() > MAX_ID_CHARS
                || !slide
                    .id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return invalid(format!(
                    "{at}: slide ids are 1 to {MAX_ID_CHARS} letters, digits, '-' or '_'"
                ));
            }
            if !ids.insert(slide.id.as_str()) {
                return invalid(format!("{at}: duplicate slide id"));
            }
            if slide.blocks.len() > MAX_BLOCKS_PER_SLIDE {
                return invalid(format!("{at}: at most {MAX_BLOCKS_PER_SLIDE} blocks"));
            }
            check_text(&format!("{at} title"), slide.title.as_deref())?;
            check_text(&format!("{at} notes"), slide.notes.as_deref())?;
            let mut count = 0;
            check_blocks(&at, &slide.blocks, 0, &mut count)?;
            for (what, text) in [("header", &slide.header), ("footer", &slide.footer)] {
                if let Some(t) = text {
                    check_marked(&format!("{at} {what}"), t)?;
                }
            }
            for (what, c) in [
                ("background_color", &slide.background_color),
                ("color", &slide.color),
            ] {
                check_color(&format!("{at} {what}"), c.as_deref())?;
            }
            check_classes(&at, &slide.classes)?;
            if slide.backgrounds.len() > 8 {
                return invalid(format!("{at}: at most 8 background images"));
            }
            for bg in &slide.backgrounds {
                if uuid::Uuid::parse_str(&bg.asset_id).is_err() {
                    return invalid(format!(
                        "{at}: background asset_id `{}` is not an asset id",
                        bg.asset_id
                    ));
                }
                if bg.split.is_some_and(|p| !(10..=90).contains(&p)) {
                    return invalid(format!("{at}: a background split is 10 to 90 (percent)"));
                }
            }
            if let Some(title) = slide.title.as_deref() {
                check_marks(&format!("{at} title"), title)?;
            }
            let breaks = slide
                .blocks
                .iter()
                .filter(|b| matches!(b, Block::ColumnBreak))
                .count();
            if breaks >= MAX_COLUMNS {
                return invalid(format!(
                    "{at}: at most {MAX_COLUMNS} columns ({} column breaks)",
                    MAX_COLUMNS - 1
                ));
            }
        }
        Ok(())
    }

    /// Every asset the deck's images reference (image blocks, inline images in any
    /// text), each once, in order of appearance.
    pub fn asset_ids(&self) -> Vec<String> {
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        let mut add = |id: &str| {
            if !id.starts_with(MATHS) && seen.insert(id.to_owned()) {
                out.push(id.to_owned());
            }
        };
        if let Some(logo) = &self.logo {
            add(logo);
        }
        for slide in &self.slides {
            for bg in &slide.backgrounds {
                add(&bg.asset_id);
            }
            let mut texts: Vec<&str> = Vec::new();
            if let Some(t) = slide.title.as_deref() {
                texts.push(t);
            }
            walk_blocks(&slide.blocks, 0, &mut |block| match block {
                Block::Image { asset_id, .. } => {
                    for t in texts.drain(..) {
                        inline_images(t, &mut add);
                    }
                    add(asset_id)
                }
                other => {
                    for t in texts.drain(..) {
                        inline_images(t, &mut add);
                    }
                    for t in block_texts(other) {
                        inline_images(t, &mut add);
                    }
                }
            });
            for t in texts {
                inline_images(t, &mut add);
            }
        }
        for t in [&self.header, &self.footer].into_iter().flatten() {
            inline_images(t, &mut add);
        }
        for slide in &self.slides {
            for t in [&slide.header, &slide.footer].into_iter().flatten() {
                inline_images(t, &mut add);
            }
        }
        out
    }

    /// The deck without its slides.
    fn clone_settings(&self) -> Deck {
        Deck {
            title: self.title.clone(),
            theme: self.theme,
            slides: Vec::new(),
            aspect: self.aspect,
            paginate: self.paginate,
            header: self.header.clone(),
            footer: self.footer.clone(),
            background_color: self.background_color.clone(),
            color: self.color.clone(),
            brand: self.brand.clone(),
            logo: self.logo.clone(),
            marp_theme: self.marp_theme,
            styles: self.styles.clone(),
        }
    }

    /// What an audience may see: hidden slides and speaker notes removed.
    pub fn audience(&self) -> Deck {
        Deck {
            slides: self
                .slides
                .iter()
                .filter(|s| !s.hidden)
                .map(|s| Slide {
                    notes: None,
                    ..s.clone()
                })
                .collect(),
            ..self.clone_settings()
        }
    }

    /// Applies a batch of operations; all or nothing. Bounded before any work: at most
    /// [`MAX_OPERATIONS`] operations, and the slide cap holds after every insert, so a
    /// hostile batch fails fast instead of growing the deck first (H4).
    /// Returns the new deck and what [`Deck::mend`] mended in it.
    pub fn apply(&self, ops: &[Operation]) -> Result<(Deck, Vec<String>), Invalid> {
        if ops.len() > MAX_OPERATIONS {
            return invalid(format!(
                "at most {MAX_OPERATIONS} operations per update ({} sent)",
                ops.len()
            ));
        }
        let mut deck = self.clone();
        let mut ids: HashSet<String> = deck.slides.iter().map(|s| s.id.clone()).collect();
        let mut next_id = deck.slides.len() + 1;
        for (n, op) in ops.iter().enumerate() {
            deck.apply_one(op, &mut ids, &mut next_id)
                .map_err(|e| Invalid(format!("operation {}: {}", n + 1, e.0)))?;
        }
        let warnings = deck.mend();
        deck.validate()?;
        Ok((deck, warnings))
    }

    fn position(&self, id: &str) -> Result<usize, Invalid> {
        self.slides
            .iter()
            .position(|s| s.id == id)
            .ok_or_else(|| Invalid(format!("no slide with id `{id}`")))
    }

    /// One operation. `ids` mirrors the deck's slide ids; `next_id` is where the search
    /// for a free `s<n>` resumes, so filling ids stays linear over a batch.
    fn apply_one(
        &mut self,
        op: &Operation,
        ids: &mut HashSet<String>,
        next_id: &mut usize,
    ) -> Result<(), Invalid> {
        match op {
            Operation::Insert { index, slide } => {
                if self.slides.len() >= MAX_SLIDES {
                    return invalid(format!("a deck has at most {MAX_SLIDES} slides"));
                }
                let at = index.unwrap_or(self.slides.len());
                if at > self.slides.len() {
                    return invalid(format!(
                        "index {at} is past the end ({} slides)",
                        self.slides.len()
                    ));
                }
                if !slide.id.is_empty() && ids.contains(&slide.id) {
                    return invalid(format!("slide id `{}` is already used", slide.id));
                }
                let mut slide = slide.clone();
                if slide.id.is_empty() {
                    // fill_ids runs after the batch; give it a unique id now so later
                    // operations in the same batch cannot collide with it.
                    while ids.contains(&format!("s{next_id}")) {
                        *next_id += 1;
                    }
                    slide.id = format!("s{next_id}");
                }
                ids.insert(slide.id.clone());
                self.slides.insert(at, slide);
            }
            Operation::Delete { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides.remove(at);
                ids.remove(slide_id);
            }
            Operation::Move { slide_id, index } => {
                let from = self.position(slide_id)?;
                if *index >= self.slides.len() {
                    return invalid(format!(
                        "index {index} is past the end ({} slides)",
                        self.slides.len()
                    ));
                }
                let slide = self.slides.remove(from);
                self.slides.insert(*index, slide);
            }
            Operation::Update { slide_id, slide } => {
                let at = self.position(slide_id)?;
                let mut slide = slide.clone();
                slide.id = slide_id.clone();
                self.slides[at] = slide;
            }
            Operation::SetNotes { slide_id, notes } => {
                let at = self.position(slide_id)?;
                self.slides[at].notes = notes.clone().filter(|n| !n.is_empty());
            }
            Operation::Hide { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides[at].hidden = true;
            }
            Operation::Show { slide_id } => {
                let at = self.position(slide_id)?;
                self.slides[at].hidden = false;
            }
        }
        Ok(())
    }
}

/// [`Deck::mend`] for the blocks at `depth` (0: the slide's own) and everything in them.
/// Bounded: deserialising already limits how deep a document nests.
fn mend_blocks(at: &str, blocks: &mut Vec<Block>, depth: usize, warnings: &mut Vec<String>) {
    if depth > 0 {
        let before = blocks.len();
        blocks.retain(|b| !matches!(b, Block::ColumnBreak));
        if blocks.len() < before {
            warnings.push(format!(
                "{at}: a column break belongs to the slide, not inside a list or quote; dropped"
            ));
        }
    }
    for block in blocks.iter_mut() {
        match block {
            Block::Quote { blocks } => mend_blocks(at, blocks, depth + 1, warnings),
            Block::Bullets { items, .. } => mend_items(at, items, depth + 1, warnings),
            Block::Table {
                align,
                header,
                rows,
            } => {
                let columns = header.len();
                if align.len() > columns {
                    align.truncate(columns);
                    warnings.push(format!(
                        "{at}: a table has more alignments than columns; the extra ones dropped"
                    ));
                }
                // A row wider than any table may be is left for `validate` to refuse.
                let off = |r: &Vec<String>| r.len() != columns && r.len() <= MAX_TABLE_COLUMNS;
                if rows.iter().any(off) {
                    warnings.push(format!(
                        "{at}: table rows with other than {columns} cells (the header's) are \
                         filled with empty cells or cut"
                    ));
                    for row in rows.iter_mut().filter(|r| off(r)) {
                        row.resize(columns, String::new());
                    }
                }
            }
            _ => {}
        }
    }
}

fn mend_items(at: &str, items: &mut [ListItem], depth: usize, warnings: &mut Vec<String>) {
    for item in items {
        mend_blocks(at, &mut item.blocks, depth, warnings);
        if let Some(list) = &mut item.list {
            mend_items(at, &mut list.items, depth + 1, warnings);
        }
    }
}
