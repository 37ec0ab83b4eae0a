//! Background work of the root crate: the ports the workers call back through (slide
//! exports and image checks) and the periodic rounds.

pub(crate) mod callbacks;
pub(crate) mod periodic;
pub(crate) mod slides;
