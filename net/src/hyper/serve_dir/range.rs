//! The `Range` header, read as tower-http 0.6 reads it (its parser, `http-range-header`
//! 0.4, as a function of the header and the file's size), so the same requests get the
//! same answers:
//!
//! - `bytes=` then comma-separated `first-last`, `first-` or `-suffix`, numbers without a
//!   sign or leading zeros; at most one space around an item and none after it; anything
//!   else (another unit, an empty item, a suffix of 0) is not satisfiable.
//! - A last byte past the end is the end; a first byte past it, a suffix longer than the
//!   file, a reversed range or overlapping ranges are not satisfiable.
//!
//! The service then answers one range with 206, and several (all valid) with 416, as
//! tower-http does: no multipart bodies.

use std::ops::RangeInclusive;

/// What a `Range` header asks of a file of a given size.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Ranges {
    /// One satisfiable range.
    One(RangeInclusive<u64>),
    /// Several satisfiable ranges, none overlapping.
    Many,
    /// Nothing to serve (416).
    Unsatisfiable,
}

/// One item of the header, before the file's size is known.
#[derive(Clone, Copy, Debug)]
enum Item {
    /// `first-last`, or `first-` (`last` = `None`).
    From(u64, Option<u64>),
    /// `-suffix`.
    Last(u64),
}

/// What `header` asks of a file of `size` bytes.
pub(super) fn parse(header: &str, size: u64) -> Ranges {
    let Some(items) = items(header) else {
        return Ranges::Unsatisfiable;
    };
    let mut ranges = Vec::with_capacity(items.len());
    for item in items {
        let last_byte = size.saturating_sub(1);
        let range = match item {
            Item::From(first, last) => first..=last.map_or(last_byte, |l| l.min(last_byte)),
            Item::Last(n) if n > size => return Ranges::Unsatisfiable,
            Item::Last(n) => size - n..=last_byte,
        };
        if range.start() > range.end() {
            return Ranges::Unsatisfiable;
        }
        ranges.push(range);
    }
    for (i, a) in ranges.iter().enumerate() {
        for b in &ranges[i + 1..] {
            if a.start() <= b.end() && b.start() <= a.end() {
                return Ranges::Unsatisfiable;
            }
        }
    }
    match ranges.len() {
        1 => Ranges::One(ranges.swap_remove(0)),
        _ => Ranges::Many,
    }
}

/// The items of `header`; `None` if any is malformed.
fn items(header: &str) -> Option<Vec<Item>> {
    let (prefix, list) = header.split_once("bytes=")?;
    if !prefix.is_empty() || list.starts_with(char::is_whitespace) {
        return None;
    }
    list.split(',').map(item).collect()
}

fn item(s: &str) -> Option<Item> {
    if s.ends_with(char::is_whitespace) || s.matches(char::is_whitespace).count() > 1 {
        return None;
    }
    let (first, last) = s.trim().split_once('-')?;
    if first.is_empty() {
        return match number(last)? {
            0 => None,
            n => Some(Item::Last(n)),
        };
    }
    let first = number(first)?;
    if last.is_empty() {
        return Some(Item::From(first, None));
    }
    Some(Item::From(first, Some(number(last)?)))
}

/// A byte position: decimal digits, no sign, no leading zero.
fn number(s: &str) -> Option<u64> {
    if s.starts_with('+') || (s.len() > 1 && s.starts_with('0')) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_ranges() {
        assert_eq!(parse("bytes=0-499", 10_000), Ranges::One(0..=499));
        assert_eq!(parse("bytes=9500-", 10_000), Ranges::One(9500..=9999));
        assert_eq!(parse("bytes=-500", 10_000), Ranges::One(9500..=9999));
        assert_eq!(parse("bytes=0-99999", 10_000), Ranges::One(0..=9999));
        assert_eq!(parse("bytes=-10000", 10_000), Ranges::One(0..=9999));
        assert_eq!(parse("bytes=9999-9999", 10_000), Ranges::One(9999..=9999));
        // An empty file: tower-http's parser lets `0-` through as 0-0.
        assert_eq!(parse("bytes=0-", 0), Ranges::One(0..=0));
    }

    #[test]
    fn several_ranges() {
        assert_eq!(parse("bytes=0-1,5-6", 100), Ranges::Many);
        assert_eq!(parse("bytes=0-1, 5-6", 100), Ranges::Many);
        assert_eq!(parse("bytes=0-1,1-2", 100), Ranges::Unsatisfiable);
        assert_eq!(parse("bytes=0-1,500-600", 100), Ranges::Unsatisfiable);
    }

    #[test]
    fn unsatisfiable_and_malformed() {
        for h in [
            "bytes=10000-",
            "bytes=5-4",
            "bytes=-0",
            "bytes=-10001",
            "bytes= 0-1",
            "bytes=0-1 ",
            "bytes=0 - 1",
            "bytes=",
            "bytes=0-1,",
            "bytes=5",
            "bytes=1-2-3",
            "bytes=+1-2",
            "bytes=01-2",
            "bytes=a-b",
            "items=0-1",
            "xbytes=0-1",
            "Bytes=0-1",
        ] {
            assert_eq!(parse(h, 10_000), Ranges::Unsatisfiable, "{h}");
        }
        assert_eq!(parse("bytes=0-", 0), Ranges::One(0..=0));
        assert_eq!(parse("bytes=1-", 0), Ranges::Unsatisfiable);
        assert_eq!(parse("bytes=-1", 0), Ranges::Unsatisfiable);
    }
}
