//! Which fetched bodies go to the HTML parser, and for the others, why not.
//!
//! One decision for everyone who parses stored or fetched pages (the crawl, `index`, `extract`),
//! so a page the crawl left unparsed is never indexed by a rebuild, and the other way round. It
//! looks at the response's Content-Type and at any content coding still on the body; pure, like
//! the rest of the parse.

use super::is_html;

/// What becomes of a 2xx body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Parse it as HTML.
    Html,
    /// Not HTML by its Content-Type: stored, not parsed.
    NotHtml,
    /// Stored, not parsed, for this reason (the URL's row shows it).
    Ignored(String),
}

/// The verdict on a body of type `content_type` that still carries the content coding
/// `unsupported_coding` (one the fetch could not decode, `crate::fetch::unsupported_coding`):
/// such bytes are no HTML whatever the type says.
pub fn verdict(content_type: Option<&str>, unsupported_coding: Option<&str>) -> Verdict {
    if !is_html(content_type) {
        return Verdict::NotHtml;
    }
    match unsupported_coding {
        Some(coding) => Verdict::Ignored(format!("content-encoding {coding} is not supported")),
        None => Verdict::Html,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_in_a_coding_the_fetch_did_not_decode_is_ignored_with_the_coding_named() {
        assert_eq!(
            verdict(Some("text/html"), Some("zstd")),
            Verdict::Ignored("content-encoding zstd is not supported".into())
        );
        assert_eq!(verdict(Some("text/html"), None), Verdict::Html);
        assert_eq!(verdict(Some("image/png"), Some("zstd")), Verdict::NotHtml);
    }
}
