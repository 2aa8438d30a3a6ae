//! The `queries` parameter, random ids, and the batch of an update.

use std::cell::Cell;
use std::collections::HashMap;

use crate::World;

/// The most rows `/queries` and `/updates` serve.
pub const MAX_QUERIES: usize = 500;

/// The row count of `/queries` and `/updates` from the raw query string, by TechEmpower's
/// rules: the `queries` parameter clamped to 1..=500, and 1 when it is missing, empty or not
/// an integer.
pub fn parse_queries(query: Option<&str>) -> usize {
    let value = query.and_then(|q| {
        q.split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == "queries")
            .map(|(_, value)| value)
    });
    match value.and_then(|v| v.parse::<i64>().ok()) {
        Some(n) => n.clamp(1, MAX_QUERIES as i64) as usize,
        None if value.is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())) => {
            // All digits but past i64: far above the limit.
            MAX_QUERIES
        }
        None => 1,
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let here = &time as *const u64 as u64;
    (time ^ here.rotate_left(32)) | 1
}

/// A random id (and random number) in 1..=10000, from a per-thread xorshift generator.
pub fn random_id() -> i32 {
    RNG.with(|rng| {
        let mut x = rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        rng.set(x);
        (x % 10_000) as i32 + 1
    })
}

/// The ids and numbers of an update, sorted by id, each id once: an id drawn twice takes
/// its last number, and every entry of `worlds` for it is set to that number, so the
/// response says what the table now holds.
pub(crate) fn update_batch(worlds: &mut [World]) -> (Vec<i32>, Vec<i32>) {
    let last: HashMap<i32, i32> = worlds.iter().map(|w| (w.id, w.random_number)).collect();
    for w in worlds.iter_mut() {
        if let Some(n) = last.get(&w.id) {
            w.random_number = *n;
        }
    }
    let mut pairs: Vec<(i32, i32)> = last.into_iter().collect();
    pairs.sort_unstable();
    pairs.into_iter().unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_clamped_per_the_rules() {
        for (query, n) in [
            (None, 1),
            (Some(""), 1),
            (Some("queries"), 1),
            (Some("queries="), 1),
            (Some("queries=abc"), 1),
            (Some("queries=-5"), 1),
            (Some("queries=0"), 1),
            (Some("queries=1"), 1),
            (Some("queries=20"), 20),
            (Some("queries=500"), 500),
            (Some("queries=501"), 500),
            (Some("queries=100000"), 500),
            (Some("queries=99999999999999999999999"), 500),
            (Some("x=3&queries=7"), 7),
            (Some("queries=2x"), 1),
        ] {
            assert_eq!(parse_queries(query), n, "{query:?}");
        }
    }

    #[test]
    fn random_ids_stay_in_range() {
        for _ in 0..100_000 {
            assert!((1..=10_000).contains(&random_id()));
        }
    }

    #[test]
    fn update_batch_sorts_and_dedupes() {
        let w = |id, random_number| World { id, random_number };
        let mut ws = vec![w(5, 1), w(2, 2), w(5, 3)];
        let (ids, numbers) = update_batch(&mut ws);
        assert_eq!((ids, numbers), (vec![2, 5], vec![2, 3]));
        assert_eq!(ws, vec![w(5, 3), w(2, 2), w(5, 3)]);
    }
}
