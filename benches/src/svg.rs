//! `bench --svg FILE`: one SVG document with a horizontal bar chart per recorded table.
//!
//! The charts draw the same [`Record`]s that `--json` writes, so the picture and the file
//! agree with the text tables: one bar per row, its length the row's median (scaled to the
//! chart's largest figure), a thin line from min to max across it, the median as the table
//! prints it with the unit, and the row's ratios as text: to the table's raw ring row and to
//! its tokio row (the `vs raw` and `vs tokio` columns), and to the baseline row when that is
//! neither (`vs std threads`). Text is escaped for XML (`&`, `<`, `>`, `"`, `'`), so any
//! contestant name is safe; non-finite or negative figures draw an empty bar.
//!
//! The writer is a few `format!`s: the SVG 1.1 subset used (`svg`, `g`, `rect`, `line`,
//! `text`, `title`) renders in every browser and in `rsvg-convert`.

use std::fmt::Write as _;

use crate::report::{in_family, Record, Row};

/// Width of the whole picture, in px.
const WIDTH: f64 = 1200.0;
/// Right edge of the row labels; bars start a little after it.
const LABEL_RIGHT: f64 = 290.0;
/// Left edge of the bars.
const BAR_LEFT: f64 = 300.0;
/// Length of the longest bar of a chart.
const BAR_MAX: f64 = 420.0;
/// Left edge of the ratio text.
const RATIO_LEFT: f64 = 880.0;
/// Height of one row.
const ROW_H: f64 = 22.0;
/// Height of a chart's title line.
const TITLE_H: f64 = 26.0;
/// Space between charts.
const GAP: f64 = 18.0;

/// Escapes `s` for XML text and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even as references.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// The median as the table prints it, followed by the unit unless the format carries one.
fn value_label(rec: &Record, v: f64) -> String {
    let text = (rec.format)(v);
    if text.ends_with('%') || rec.metric.is_empty() {
        text
    } else {
        format!("{text} {}", rec.metric)
    }
}

/// `0.93x vs raw, 1.08x vs tokio`: the ratio text of one row, as the table's `vs raw` and
/// `vs tokio` columns have it; a table whose baseline is neither (`vs std`, `vs cores(1)`)
/// gets the ratio to its baseline, named, first.
fn ratio_text(rec: &Record, row: &Row) -> String {
    let mut parts = Vec::new();
    if let (Some(base), Some(r)) = (rec.baseline(), row.ratio) {
        let usual = in_family(&base.name, "raw") || in_family(&base.name, "tokio");
        if !usual && base.name != row.name && r.is_finite() {
            parts.push(format!("{r:.2}x vs {}", base.name));
        }
    }
    for prefix in ["raw", "tokio"] {
        let is_self = rec
            .rows
            .iter()
            .find(|r| in_family(&r.name, prefix))
            .is_some_and(|other| other.name == row.name);
        if let Some(q) = rec.vs(row, prefix).filter(|_| !is_self) {
            parts.push(format!("{q:.2}x vs {prefix}"));
        }
    }
    if parts.is_empty() && rec.baseline().is_some_and(|b| b.name == row.name) {
        parts.push("baseline".to_string());
    }
    parts.join(", ")
}

/// Renders every record as one SVG document (a chart per record, top to bottom).
pub fn render(records: &[Record]) -> String {
    let height: f64 = records
        .iter()
        .map(|r| TITLE_H + ROW_H * r.rows.len() as f64 + GAP)
        .sum::<f64>()
        + GAP;
    let mut out = String::new();
    let _ = writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        out,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#ffffff"/>"##
    );
    let mut y = GAP;
    for rec in records {
        chart(&mut out, rec, y);
        y += TITLE_H + ROW_H * rec.rows.len() as f64 + GAP;
    }
    out.push_str("</svg>\n");
    out
}

/// One chart whose top edge is at `top`.
fn chart(out: &mut String, rec: &Record, top: f64) {
    let lower_is_better = rec.metric.starts_with("ns/") || rec.metric.starts_with("us/");
    let _ = writeln!(out, r#"<g class="chart">"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="{:.1}" font-size="14" font-weight="bold">{} ({}{})</text>"#,
        top + 16.0,
        escape(&rec.title),
        escape(&rec.metric),
        if lower_is_better {
            ", shorter is better"
        } else {
            ""
        }
    );
    let scale = rec
        .rows
        .iter()
        .flat_map(|r| [r.median, r.max])
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(0.0_f64, f64::max);
    let len = |v: f64| {
        if scale > 0.0 && v.is_finite() && v > 0.0 {
            (v / scale * BAR_MAX).min(BAR_MAX)
        } else {
            0.0
        }
    };
    for (i, row) in rec.rows.iter().enumerate() {
        let y = top + TITLE_H + ROW_H * i as f64;
        let mid = y + ROW_H / 2.0;
        let w = len(row.median);
        let value = value_label(rec, row.median);
        let _ = writeln!(
            out,
            r#"<text x="{LABEL_RIGHT}" y="{:.1}" text-anchor="end">{}</text>"#,
            mid + 4.0,
            escape(&row.name)
        );
        let _ = writeln!(
            out,
            r##"<rect class="bar" x="{BAR_LEFT}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="#4878a8"><title>{}: {} (min {}, max {})</title></rect>"##,
            y + 3.0,
            ROW_H - 6.0,
            escape(&row.name),
            escape(&value),
            escape(&(rec.format)(row.min)),
            escape(&(rec.format)(row.max)),
        );
        let (lo, hi) = (len(row.min), len(row.max));
        if lo > 0.0 && hi > lo {
            let _ = writeln!(
                out,
                r##"<line x1="{:.1}" y1="{mid:.1}" x2="{:.1}" y2="{mid:.1}" stroke="#1a1a1a" stroke-width="1"/>"##,
                BAR_LEFT + lo,
                BAR_LEFT + hi
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            BAR_LEFT + w.max(hi) + 6.0,
            mid + 4.0,
            escape(&value)
        );
        let ratio = ratio_text(rec, row);
        if !ratio.is_empty() {
            let _ = writeln!(
                out,
                r##"<text x="{RATIO_LEFT}" y="{:.1}" fill="#444444">{}</text>"##,
                mid + 4.0,
                escape(&ratio)
            );
        }
    }
    let _ = writeln!(out, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::format_rate;

    fn row(name: &str, median: f64, ratio: f64) -> Row {
        Row {
            name: name.into(),
            median,
            min: median * 0.9,
            max: median * 1.1,
            ratio: Some(ratio),
            enters_per_op: None,
            peak_rss_bytes: None,
            extra: Vec::new(),
        }
    }

    fn records() -> Vec<Record> {
        vec![
            Record {
                name: "poll".into(),
                title: "poll: 32 <pipes> & \"quotes\"".into(),
                metric: "req/s".into(),
                format: Box::new(format_rate),
                rows: vec![
                    row("raw ring", 870e3, 1.0),
                    row("runtime <fast> & 'lean'", 850e3, 0.977),
                    row("tokio", 725e3, 0.833),
                ],
            },
            Record {
                name: "link".into(),
                title: "link: N=100".into(),
                metric: "ns/nop".into(),
                format: Box::new(|v| format!("{v:.1}")),
                rows: vec![
                    row("raw ring", 416.0, 1.0),
                    row("runtime", f64::NAN, f64::NAN),
                ],
            },
        ]
    }

    /// Checks that every tag is closed in order, that text and attributes hold no raw `<`
    /// or stray `&`, and returns the names of the elements opened, in order.
    fn check_well_formed(doc: &str) -> Vec<String> {
        let mut stack: Vec<String> = Vec::new();
        let mut opened = Vec::new();
        let mut rest = doc;
        while let Some(lt) = rest.find('<') {
            check_text(&rest[..lt]);
            let gt = rest[lt..].find('>').expect("unclosed tag") + lt;
            let tag = &rest[lt + 1..gt];
            assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
            rest = &rest[gt + 1..];
            if tag.starts_with('?') {
                assert!(tag.ends_with('?'), "{tag}");
                continue;
            }
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
                continue;
            }
            check_attributes(tag);
            let name = tag
                .split_whitespace()
                .next()
                .expect("empty tag")
                .to_string();
            opened.push(name.clone());
            if !tag.ends_with('/') {
                stack.push(name);
            }
        }
        check_text(rest);
        assert!(stack.is_empty(), "unclosed elements: {stack:?}");
        opened
    }

    fn check_text(text: &str) {
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..text[i..].find(';').map_or(text.len(), |j| i + j + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&entity),
                "stray '&' in {text:?}"
            );
        }
        assert!(!text.contains('>'), "raw '>' in text {text:?}");
    }

    fn check_attributes(tag: &str) {
        // Every attribute value is double-quoted and so holds no '"'; check its text.
        let quotes = tag.matches('"').count();
        assert_eq!(quotes % 2, 0, "unbalanced quotes in <{tag}>");
        for (i, value) in tag.split('"').enumerate() {
            if i % 2 == 1 {
                check_text(value);
            }
        }
    }

    #[test]
    fn renders_well_formed_charts() {
        let recs = records();
        let doc = render(&recs);
        let opened = check_well_formed(&doc);
        assert_eq!(opened[0], "svg");
        assert_eq!(opened.iter().filter(|n| *n == "g").count(), recs.len());
        let rows: usize = recs.iter().map(|r| r.rows.len()).sum();
        assert_eq!(doc.matches(r#"<rect class="bar""#).count(), rows);
        // Names and titles arrive escaped, never raw.
        assert!(doc.contains("runtime &lt;fast&gt; &amp; &apos;lean&apos;"));
        assert!(doc.contains("32 &lt;pipes&gt; &amp; &quot;quotes&quot;"));
        assert!(!doc.contains("<fast>"));
        // Values in their unit, ratios named after the baseline row, tokio where recorded.
        assert!(doc.contains(">850.0k req/s<"), "{doc}");
        assert!(doc.contains(">0.98x vs raw, 1.17x vs tokio<"), "{doc}");
        assert!(doc.contains(">1.20x vs tokio<"));
        assert!(doc.contains(">baseline<"));
        assert!(doc.contains(">416.0 ns/nop<"));
        assert!(doc.contains("ns/nop, shorter is better"));
        // A NaN median draws an empty bar, not "NaN" geometry.
        assert!(!doc.contains("width=\"NaN\""));
        assert!(!doc.contains("x=\"NaN\""));
    }

    #[test]
    fn empty_input_is_an_empty_picture() {
        let doc = render(&[]);
        assert_eq!(check_well_formed(&doc), ["svg", "rect"]);
    }

    #[test]
    fn escapes_everything_xml_reserves() {
        assert_eq!(
            escape(r#"a<b>&"c"'d'"#),
            "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;"
        );
        assert_eq!(escape("x\u{1}y\tz"), "x\u{fffd}y\tz");
    }
}
