//! The end tags `lol_html` reports to nobody: it matches an end tag with the nearest open
//! element of its name and calls that element's handlers, so an end tag with none open (a
//! `</br>`, a `</p>` after the paragraph was closed, or closed by `lol_html` and not by the
//! tree) is tokenized and dropped. The HTML standard gives several of them a meaning that
//! shows in the text (`</br>` is a `<br>`, a stray `</p>` an empty paragraph), so the stream
//! ([`super::stream`]) reads them from the source itself: between two tokens it was told of
//! lies only what reached no handler, and this module finds the end tags there.
//!
//! Pure: bytes in, names out. What can lie in such a gap besides end tags: comments, bogus
//! comments (`<!x>`, `<?x>`, `</ x>`), a doctype; never a start tag nor text (the stream has
//! handlers for every element and all text when it reads the gaps). A `</div>` inside a
//! comment is no end tag, nor one inside a quoted value of an end tag's attribute.

/// The raw names (as in the source) of the complete end tags in `gap`, in order.
pub(super) fn end_tags(gap: &[u8]) -> EndTags<'_> {
    EndTags { gap, at: 0 }
}

/// Iterator of [`end_tags`].
pub(super) struct EndTags<'a> {
    gap: &'a [u8],
    at: usize,
}

impl<'a> Iterator for EndTags<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        loop {
            let rest = self.gap.get(self.at..)?;
            let lt = memchr::memchr(b'<', rest)?;
            let tag = &rest[lt..];
            let start = self.at + lt;
            match tag.get(1) {
                Some(b'!') => {
                    self.at = match tag.strip_prefix(b"<!--") {
                        // `<!-->` and `<!--->` are whole comments.
                        Some(_) => start + comment_len(tag)?,
                        None => start + tag_len(tag, 2)?,
                    };
                }
                Some(b'?') => self.at = start + tag_len(tag, 2)?,
                Some(b'/') => match tag.get(2) {
                    Some(c) if c.is_ascii_alphabetic() => {
                        let name_len = tag[2..]
                            .iter()
                            .position(|b| {
                                matches!(b, b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' | b'/' | b'>')
                            })
                            .unwrap_or(tag.len() - 2);
                        // An end tag cut by the end of the page is no end tag.
                        let len = end_tag_len(tag, 2 + name_len)?;
                        self.at = start + len;
                        return Some(&tag[2..2 + name_len]);
                    }
                    // `</>` is nothing, `</ x>` a bogus comment.
                    Some(_) => self.at = start + tag_len(tag, 2)?,
                    None => return None,
                },
                _ => self.at = start + 1,
            }
        }
    }
}

/// The length of the comment `tag` starts with (`<!--`): to its `-->` or `--!>`, or the end.
fn comment_len(tag: &[u8]) -> Option<usize> {
    let body = &tag[2..];
    let close = memchr::memmem::find(body, b"-->").map(|i| i + 3);
    let bang = memchr::memmem::find(&body[2..], b"--!>").map(|i| i + 6);
    match (close, bang) {
        (Some(a), Some(b)) => Some(2 + a.min(b)),
        (Some(a), None) | (None, Some(a)) => Some(2 + a),
        // Unclosed: it runs to the end of the page.
        (None, None) => None,
    }
}

/// The length of a bogus comment or doctype: to the first `>` from `from`.
fn tag_len(tag: &[u8], from: usize) -> Option<usize> {
    memchr::memchr(b'>', &tag[from..]).map(|i| from + i + 1)
}

/// The length of an end tag whose attributes start at `from`: to the first `>` outside a
/// quoted attribute value.
fn end_tag_len(tag: &[u8], from: usize) -> Option<usize> {
    let mut after_equals = false;
    let mut i = from;
    while let Some(&b) = tag.get(i) {
        match b {
            b'>' => return Some(i + 1),
            b'"' | b'\'' if after_equals => {
                i += 1 + memchr::memchr(b, tag.get(i + 1..)?)?;
                after_equals = false;
            }
            b'=' => after_equals = true,
            b'\t' | b'\n' | b'\x0C' | b'\r' | b' ' => {}
            _ => after_equals = false,
        }
        i += 1;
    }
    None
}

/// `raw`, a tag name, ASCII-lowercased into `buf` when it is plain ASCII letters, digits and
/// dashes and fits; `None` otherwise (no name this parser treats apart).
pub(super) fn lowercase<'b, const N: usize>(raw: &[u8], buf: &'b mut [u8; N]) -> Option<&'b str> {
    if raw.len() > N || !raw.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-') {
        return None;
    }
    let out = &mut buf[..raw.len()];
    out.copy_from_slice(raw);
    out.make_ascii_lowercase();
    std::str::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(gap: &str) -> Vec<&str> {
        end_tags(gap.as_bytes())
            .map(|n| std::str::from_utf8(n).expect("ASCII test names"))
            .collect()
    }

    #[test]
    fn end_tags_are_found_in_order_whatever_their_case_and_attributes() {
        assert_eq!(names("</br>"), ["br"]);
        assert_eq!(
            names("</BR></p >\n</P/></h2\tclass=x>"),
            ["BR", "p", "P", "h2"]
        );
        assert_eq!(names("</div a=\"</p>\" b='>'></li>"), ["div", "li"]);
        // An unquoted value ends at the first `>`.
        assert_eq!(names("</div a=x>y\"></li>"), ["div", "li"]);
    }

    #[test]
    fn comments_doctypes_and_bogus_comments_hide_what_they_hold() {
        assert_eq!(names("<!-- </p> --></br>"), ["br"]);
        assert_eq!(names("<!--></p>"), ["p"]);
        assert_eq!(names("<!---></p>"), ["p"]);
        assert_eq!(names("<!-- x --!></p>"), ["p"]);
        assert_eq!(names("<!-- -- > </p> --></li>"), ["li"]);
        assert_eq!(names("<!DOCTYPE html></p>"), ["p"]);
        assert_eq!(names("<?php echo \"</div>\"; ?></p>"), ["p"]);
        assert_eq!(names("</ div></p>"), ["p"]);
        assert_eq!(names("</></p>"), ["p"]);
        assert_eq!(names("a < b </p>"), ["p"]);
    }

    #[test]
    fn what_the_end_of_the_page_cuts_is_no_end_tag() {
        for gap in ["</p", "</p class='x>", "<!-- </p>", "<!x </p", "</", "<"] {
            assert!(names(gap).is_empty(), "{gap}");
        }
    }

    #[test]
    fn only_short_plain_names_are_lowercased() {
        let mut buf = [0; 8];
        assert_eq!(lowercase(b"BR", &mut buf), Some("br"));
        assert_eq!(lowercase(b"font-x", &mut buf), Some("font-x"));
        assert_eq!(lowercase(b"toolongname", &mut buf), None);
        assert_eq!(lowercase("é".as_bytes(), &mut buf), None);
    }
}
