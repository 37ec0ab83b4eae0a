//! Labelled prices (`POST /api/data/prices/by-label`): `fixtures/prices.json`, or the
//! operator's own file (`PLINTH_PRICES_FILE`, same shape), read and checked at start.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

const DEFAULT: &str = include_str!("../../fixtures/prices.json");

/// Prices by label.
#[derive(Debug, Default)]
pub struct PriceList(HashMap<String, Map<String, Value>>);

#[derive(Deserialize)]
struct PricesFile {
    prices: Vec<Map<String, Value>>,
}

impl PriceList {
    /// The operator's file, else the fixture; a malformed file stops the start.
    pub fn load(path: Option<&std::path::Path>) -> anyhow::Result<PriceList> {
        let (text, from) = match path {
            Some(p) => (std::fs::read_to_string(p)?, p.display().to_string()),
            None => (DEFAULT.to_owned(), "fixtures/prices.json".to_owned()),
        };
        Self::parse(&text).map_err(|e| anyhow::anyhow!("prices file {from}: {e}"))
    }

    pub fn parse(text: &str) -> anyhow::Result<PriceList> {
        let file: PricesFile = serde_json::from_str(text)?;
        let mut by_label = HashMap::new();
        for (i, p) in file.prices.into_iter().enumerate() {
            let label = p
                .get("label")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|l| !l.is_empty() && l.chars().count() <= 200)
                .ok_or_else(|| anyhow::anyhow!("price {i}: `label` must be 1-200 characters"))?
                .to_owned();
            if p.get("unit_amount_cents").and_then(Value::as_u64).is_none() {
                anyhow::bail!("price `{label}`: `unit_amount_cents` must be an integer >= 0");
            }
            if p.get("currency").and_then(Value::as_str).map(str::len) != Some(3) {
                anyhow::bail!("price `{label}`: `currency` must be a 3-letter code");
            }
            if by_label.insert(label.clone(), p).is_some() {
                anyhow::bail!("price `{label}` is listed twice");
            }
        }
        Ok(PriceList(by_label))
    }

    pub fn get(&self, label: &str) -> Option<&Map<String, Value>> {
        self.0.get(label.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_loads_and_bad_files_are_refused() {
        let list = PriceList::load(None).unwrap();
        assert_eq!(
            list.get("paying-monthly").unwrap()["unit_amount_cents"],
            1000
        );
        assert!(list.get("nope").is_none());
        for bad in [
            r#"{"prices": [{"label": "a", "unit_amount_cents": -1, "currency": "usd"}]}"#,
            r#"{"prices": [{"label": "", "unit_amount_cents": 1, "currency": "usd"}]}"#,
            r#"{"prices": [{"label": "a", "unit_amount_cents": 1, "currency": "usd"}, {"label": "a", "unit_amount_cents": 2, "currency": "usd"}]}"#,
            r#"{"prices": [{"label": "a", "unit_amount_cents": 1}]}"#,
        ] {
            assert!(PriceList::parse(bad).is_err(), "{bad}");
        }
    }
}
