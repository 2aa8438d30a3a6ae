//! The json profiles' dataset (`DATASET_PATH`, 50 items) and the response they ask for:
//! the first `count` items, each with `total = price * quantity * m`, serialized per request.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// An item's rating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub struct Rating {
    /// The score.
    pub score: i64,
    /// How many ratings.
    pub count: i64,
}

/// One item of the dataset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Item {
    /// Its id.
    pub id: i64,
    /// Its name.
    pub name: String,
    /// Its category.
    pub category: String,
    /// Its price (an integer).
    pub price: i64,
    /// How many are in stock.
    pub quantity: i64,
    /// Whether it is on sale.
    pub active: bool,
    /// Its tags.
    pub tags: Vec<String>,
    /// Its rating.
    pub rating: Rating,
}

/// An item as the json routes answer it: the dataset's fields, borrowed, and its total.
#[derive(Debug, Serialize)]
struct Priced<'a> {
    id: i64,
    name: &'a str,
    category: &'a str,
    price: i64,
    quantity: i64,
    active: bool,
    tags: &'a [String],
    rating: Rating,
    total: i64,
}

/// The body of `GET /json/{count}?m=`.
#[derive(Debug, Serialize)]
struct Priced50<'a> {
    items: Vec<Priced<'a>>,
    count: usize,
}

/// The dataset, read once at startup.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    items: Vec<Item>,
}

impl Dataset {
    /// Reads the dataset (a JSON array of items) from `path`.
    ///
    /// # Errors
    /// A file that cannot be read, or that is not such an array (the error names the path).
    pub fn load(path: &Path) -> io::Result<Dataset> {
        let text = std::fs::read(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        Dataset::parse(&text)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
    }

    /// The dataset in `json`.
    ///
    /// # Errors
    /// `InvalidData` if `json` is not an array of items.
    pub fn parse(json: &[u8]) -> io::Result<Dataset> {
        let items = serde_json::from_slice(json)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(Dataset { items })
    }

    /// Its items.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The body of `GET /json/{count}?m={m}`: `{"items":[...],"count":N}` with the first
    /// `count` items (at most all of them), each with `total = price * quantity * m`
    /// (wrapping on overflow, which no sane `m` reaches).
    pub fn priced_json(&self, count: usize, m: i64) -> Vec<u8> {
        let items: Vec<Priced<'_>> = self.items[..count.min(self.items.len())]
            .iter()
            .map(|d| Priced {
                id: d.id,
                name: &d.name,
                category: &d.category,
                price: d.price,
                quantity: d.quantity,
                active: d.active,
                tags: &d.tags,
                rating: d.rating,
                total: d.price.wrapping_mul(d.quantity).wrapping_mul(m),
            })
            .collect();
        let count = items.len();
        // Serializing borrowed strings, integers and booleans cannot fail.
        serde_json::to_vec(&Priced50 { items, count }).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"[
      {"id":1,"name":"Alpha Widget","category":"electronics","price":328,"quantity":15,
       "active":true,"tags":["sale"],"rating":{"score":48,"count":53}},
      {"id":2,"name":"Pro \"Valve\"","category":"tools","price":3,"quantity":5,
       "active":false,"tags":[],"rating":{"score":1,"count":2}}
    ]"#;

    #[test]
    fn totals_counts_and_escaping() {
        let d = Dataset::parse(TWO.as_bytes()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&d.priced_json(5, 3)).unwrap();
        assert_eq!(
            v["count"], 2,
            "count is what was returned, capped at the dataset"
        );
        assert_eq!(v["items"][0]["total"], 328 * 15 * 3);
        assert_eq!(v["items"][1]["name"], "Pro \"Valve\"");
        assert_eq!(v["items"][1]["active"], false);
        assert_eq!(v["items"][0]["rating"]["score"], 48);
        let v: serde_json::Value = serde_json::from_slice(&d.priced_json(1, 1)).unwrap();
        assert_eq!(
            (v["count"].as_u64(), v["items"][0]["total"].as_i64()),
            (Some(1), Some(4920))
        );
        let v: serde_json::Value = serde_json::from_slice(&d.priced_json(0, 7)).unwrap();
        assert_eq!(v["count"], 0);
        assert!(Dataset::parse(b"{}").is_err());
    }

    #[test]
    fn httparena_dataset_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/dataset.json");
        let d = Dataset::load(&path).unwrap();
        assert_eq!(d.items().len(), 50);
        assert!(Dataset::load(Path::new("/nonexistent/dataset.json"))
            .unwrap_err()
            .to_string()
            .contains("/nonexistent/dataset.json"));
    }
}
