//! The `/fortunes` page: TechEmpower's template, HTML-escaped.

/// A row of `fortune`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fortune {
    /// Its id.
    pub id: i32,
    /// Its message, as stored.
    pub message: String,
}

/// The fortune added at request time, id 0.
pub const EXTRA_FORTUNE: &str = "Additional fortune added at request time.";

/// Appends `text` to `out` with `&`, `<`, `>`, `"` and `'` escaped.
pub fn escape_html(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some(at) = rest.find(['&', '<', '>', '"', '\'']) {
        out.push_str(&rest[..at]);
        out.push_str(match rest.as_bytes()[at] {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            _ => "&#x27;",
        });
        rest = &rest[at + 1..];
    }
    out.push_str(rest);
}

/// The page for `fortunes` (the table's rows): [`EXTRA_FORTUNE`] added as id 0, sorted by
/// message, each row escaped, in TechEmpower's template.
pub fn fortunes_html(mut fortunes: Vec<Fortune>) -> String {
    fortunes.push(Fortune {
        id: 0,
        message: EXTRA_FORTUNE.to_string(),
    });
    fortunes.sort_unstable_by(|a, b| a.message.cmp(&b.message));
    let mut out = String::with_capacity(1200);
    out.push_str(
        "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
         <tr><th>id</th><th>message</th></tr>",
    );
    for f in &fortunes {
        out.push_str("<tr><td>");
        out.push_str(&f.id.to_string());
        out.push_str("</td><td>");
        escape_html(&mut out, &f.message);
        out.push_str("</td></tr>");
    }
    out.push_str("</table></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_every_special_character() {
        let mut out = String::new();
        escape_html(&mut out, "<a href=\"x\">'&'</a> ok");
        assert_eq!(
            out,
            "&lt;a href=&quot;x&quot;&gt;&#x27;&amp;&#x27;&lt;/a&gt; ok"
        );
    }

    #[test]
    fn page_is_sorted_with_the_extra_row() {
        let page = fortunes_html(vec![
            Fortune {
                id: 2,
                message: "b <".into(),
            },
            Fortune {
                id: 1,
                message: "C".into(),
            },
        ]);
        assert_eq!(
            page,
            "<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>\
             <tr><th>id</th><th>message</th></tr>\
             <tr><td>0</td><td>Additional fortune added at request time.</td></tr>\
             <tr><td>1</td><td>C</td></tr>\
             <tr><td>2</td><td>b &lt;</td></tr>\
             </table></body></html>"
        );
    }
}
