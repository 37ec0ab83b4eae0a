//! Speaker notes as pages of their own, after each slide's page.

use plinth_slides::{Deck, Slide};

use crate::layout::{self, Page};
use crate::Size;

/// The deck notes pages are laid out in: no header, footer, page number or logo.
pub(super) fn bare_deck(deck: &Deck) -> Deck {
    Deck {
        slides: Vec::new(),
        header: None,
        footer: None,
        paginate: false,
        logo: None,
        ..deck.clone()
    }
}

/// The notes page after the `i`th visible slide, if it has notes.
pub(super) fn page(bare: &Deck, slide: &Slide, i: usize, size: Size) -> Option<Page> {
    let notes = crate::notes_slide(slide, i + 1)?;
    Some(layout::page_with(
        bare,
        &notes,
        &Default::default(),
        size,
        layout::Fill::Top,
    ))
}
