//! What a pasted query means: the characters of tantivy's query syntax that ordinary text uses
//! for something else are taken as text before the query is parsed. A time (`12:30`), a URL
//! (`http://example.com`), a tag (`<br>`) or a title's dash (`Alice - White Rabbit`) are
//! searched for as the words they hold, instead of failing ("Field does not exist: '12'") or
//! excluding a word the user never meant to exclude.
//!
//! The syntax a user writes on purpose is kept: `title:word` and `text:word` (the index's
//! fields), `-word`, `+word`, quotes, parentheses and the escapes. This module must never
//! change what a query means when it is made only of that syntax and words.

use std::borrow::Cow;

/// The fields a query may name (`title:word`); any other `name:` is text.
const FIELDS: [&str; 2] = ["title", "text"];

/// `query` with every `:` that does not follow a field's name, every `<` and `>`, escaped, and
/// every `-` or `+` that stands alone (a space or the end after it) dropped; outside quotes
/// and escapes only. Borrowed when nothing changes.
pub(super) fn literal(query: &str) -> Cow<'_, str> {
    let mut out = String::new();
    // Where `out` stops copying `query` as is: nothing is allocated for a query left alone.
    let mut copied = 0;
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in query.char_indices() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        let after = query[at + c.len_utf8()..].chars().next();
        let edit = match c {
            '\\' => {
                escaped = true;
                None
            }
            '"' => {
                quoted = !quoted;
                None
            }
            _ if quoted => None,
            ':' if !FIELDS.contains(&name_before(query, at)) => Some("\\:"),
            '<' => Some("\\<"),
            '>' => Some("\\>"),
            '-' | '+' if stands_alone(query, at, after) => Some(" "),
            _ => None,
        };
        if let Some(edit) = edit {
            out.push_str(&query[copied..at]);
            out.push_str(edit);
            copied = at + c.len_utf8();
        }
    }
    if copied == 0 {
        return Cow::Borrowed(query);
    }
    out.push_str(&query[copied..]);
    Cow::Owned(out)
}

/// The run of characters before byte `at` back to a space, a parenthesis, a quote or an
/// operator: what tantivy would take for a field's name.
fn name_before(query: &str, at: usize) -> &str {
    let start = query[..at]
        .char_indices()
        .rfind(|&(_, c)| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '+' | '-' | ':'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &query[start..at]
}

/// Whether the operator at byte `at` has a space (or the query's start) before it and a space
/// (or the query's end) after it: no word for it to apply to.
fn stands_alone(query: &str, at: usize, after: Option<char>) -> bool {
    let before = query[..at].chars().next_back();
    before.is_none_or(char::is_whitespace) && after.is_none_or(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use super::super::{IndexReader, IndexWriter, IndexedPage};
    use super::*;

    #[test]
    fn text_that_looks_like_syntax_is_escaped_and_syntax_is_kept() {
        for (query, want) in [
            ("white rabbit", "white rabbit"),
            ("title:rabbit text:alice", "title:rabbit text:alice"),
            ("-alice +rabbit (a OR b)", "-alice +rabbit (a OR b)"),
            ("\"12:30 <b>\" - x", "\"12:30 <b>\"   x"),
            ("12:30", "12\\:30"),
            ("seq:1", "seq\\:1"),
            ("http://example.com", "http\\://example.com"),
            ("subtitle:x", "subtitle\\:x"),
            (":x", "\\:x"),
            ("<br>", "\\<br\\>"),
            ("rabbit - white", "rabbit   white"),
            ("rabbit -", "rabbit  "),
            ("+ rabbit", "  rabbit"),
            ("a\\:b \\- c", "a\\:b \\- c"),
            ("e-mail pre-war", "e-mail pre-war"),
        ] {
            assert_eq!(literal(query), want, "{query}");
        }
        assert!(matches!(literal("title:rabbit -alice"), Cow::Borrowed(_)));
    }

    /// Searched as a user pastes them: a time, a URL, a tag and a title's dash find the page
    /// that holds them, where they failed or excluded a word before.
    #[test]
    fn pasted_text_finds_the_page_that_holds_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = IndexWriter::open(dir.path()).expect("writer");
        for (seq, text) in [
            (
                1,
                "tea at 12:30 see http://example.com/a for Alice - White Rabbit <br> tags",
            ),
            (2, "white paper on rabbit care, 30 tips"),
        ] {
            let page = IndexedPage {
                seq,
                url: "http://127.0.0.1:1/",
                title: "t",
                text,
                committed_ms: seq,
            };
            assert!(writer.add(&page).expect("add").is_added());
        }
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = IndexReader::open(dir.path()).expect("reader");
        let seqs = |query: &str| -> Vec<u64> {
            let hits = reader.search(query, 10).expect(query);
            let mut seqs: Vec<u64> = hits.iter().map(|h| h.seq).collect();
            seqs.sort_unstable();
            seqs
        };
        assert_eq!(seqs("12:30"), [1]);
        assert_eq!(seqs("http://example.com/a"), [1]);
        assert_eq!(seqs("<br>"), [1]);
        assert_eq!(seqs("rabbit - white"), [1, 2]);
        // Any word matches (tantivy's default), the page with all of them first.
        assert_eq!(seqs("Alice - White Rabbit"), [1, 2]);
        let best = reader.search("Alice - White Rabbit", 1).expect("search");
        assert_eq!(best.first().map(|h| h.seq), Some(1));
        // The syntax written on purpose still means what it did.
        assert_eq!(seqs("rabbit -white"), Vec::<u64>::new());
        assert_eq!(seqs("rabbit -alice"), [2]);
        assert_eq!(seqs("title:t"), [1, 2]);
    }
}
