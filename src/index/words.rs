//! What a word is, in one place: the character test that both the exact counts
//! ([`super::text_counts`]) and the index's tokenizer ([`WordTokenizer`]) use.
//!
//! The rules are tantivy's `default` analyzer's (runs of `char::is_alphanumeric`, runs of
//! [`MAX_WORD_BYTES`] bytes or more dropped, lowercased), done in one pass per token instead of
//! three stages, with the characters of a prose page (ASCII, General Punctuation) classified
//! without Unicode table lookups. It is registered as the index's `default` tokenizer, so the
//! schema, and every index written before it, stays as it was; a unit test pins that tokens,
//! positions and offsets are tantivy's own. It must never change what a word is: indexes on
//! disk and the brute-force checks depend on it.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Runs of this many bytes or more are no word (tantivy's `RemoveLongFilter::limit(40)`).
pub(super) const MAX_WORD_BYTES: usize = 40;

/// The Unicode block of spaces, dashes, quotes and other punctuation: no character in it is a
/// letter or a digit (a unit test checks every one), so no table lookup is needed for it.
pub(super) const GENERAL_PUNCTUATION: std::ops::RangeInclusive<char> = '\u{2000}'..='\u{206f}';

/// Whether the character starting at byte `at` of `text` is part of a word, and its length in
/// bytes. `at` must be on a character boundary below `text.len()`.
#[inline]
pub(super) fn word_char_at(text: &str, at: usize) -> (bool, usize) {
    let byte = text.as_bytes()[at];
    if byte.is_ascii() {
        return (byte.is_ascii_alphanumeric(), 1);
    }
    let c = text[at..]
        .chars()
        .next()
        .expect("`at` is on a character boundary below the end");
    (
        !GENERAL_PUNCTUATION.contains(&c) && c.is_alphanumeric(),
        c.len_utf8(),
    )
}

/// The index's tokenizer: tantivy's `default` analyzer in one pass.
#[derive(Clone, Default)]
pub(super) struct WordTokenizer {
    token: Token,
}

pub(super) struct WordStream<'a> {
    text: &'a str,
    at: usize,
    token: &'a mut Token,
}

impl Tokenizer for WordTokenizer {
    type TokenStream<'a> = WordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordStream<'a> {
        self.token.reset();
        WordStream {
            text,
            at: 0,
            token: &mut self.token,
        }
    }
}

impl TokenStream for WordStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let len = self.text.len();
        loop {
            // Skip to the next run.
            let start = loop {
                if self.at >= len {
                    return false;
                }
                let (word, char_len) = word_char_at(self.text, self.at);
                if word {
                    break self.at;
                }
                self.at += char_len;
            };
            let mut ascii = true;
            while self.at < len {
                let (word, char_len) = word_char_at(self.text, self.at);
                if !word {
                    break;
                }
                ascii &= char_len == 1;
                self.at += char_len;
            }
            // Every run takes a position, dropped or not, as tantivy's filter leaves them.
            self.token.position = self.token.position.wrapping_add(1);
            if self.at - start >= MAX_WORD_BYTES {
                continue;
            }
            let run = &self.text[start..self.at];
            self.token.offset_from = start;
            self.token.offset_to = self.at;
            if ascii {
                self.token.text.push_str(run);
                self.token.text.make_ascii_lowercase();
            } else {
                // As tantivy's LowerCaser: per character, no final-sigma rule.
                self.token
                    .text
                    .extend(run.chars().flat_map(char::to_lowercase));
            }
            return true;
        }
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use tantivy::tokenizer::{LowerCaser, RemoveLongFilter, SimpleTokenizer, TextAnalyzer};

    use super::*;

    fn all(analyzer: &mut TextAnalyzer, text: &str) -> Vec<(String, usize, usize, usize)> {
        let mut out = Vec::new();
        analyzer.token_stream(text).process(&mut |t| {
            out.push((t.text.clone(), t.position, t.offset_from, t.offset_to));
        });
        out
    }

    #[test]
    fn general_punctuation_holds_no_letter_or_digit() {
        for c in GENERAL_PUNCTUATION {
            assert!(!c.is_alphanumeric(), "{c:?} U+{:04X}", u32::from(c));
        }
        // The blocks either side do: the range must not grow.
        assert!('\u{1ffc}'.is_alphanumeric() && '\u{2070}'.is_alphanumeric());
    }

    #[test]
    fn tokens_positions_and_offsets_are_tantivys_default_analyzers() {
        let mut theirs = TextAnalyzer::builder(SimpleTokenizer::default())
            .filter(RemoveLongFilter::limit(MAX_WORD_BYTES))
            .filter(LowerCaser)
            .build();
        let mut ours = TextAnalyzer::from(WordTokenizer::default());
        let mut texts = vec![
            crate::testweb::generator::DEFAULT_TEXT.to_string(),
            format!("{} {} {} x", "a".repeat(39), "B".repeat(40), "c".repeat(41)),
            format!("{}ẞ {}ẞ ΣΑΣ Straße İx", "a".repeat(36), "a".repeat(37)),
            String::new(),
        ];
        let alphabet: Vec<char> = "aZ9 \n\t.,-_'’“—ẞßÉé٣߀漢字ü\u{301}🦀\u{0}\u{200b}\u{1fff}⁰ⁱⅫ²İΣ"
            .chars()
            .collect();
        let mut rng = crate::testweb::rng::SplitMix64::new(12);
        for _ in 0..500 {
            let len = rng.below(200);
            texts.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        for text in &texts {
            assert_eq!(all(&mut ours, text), all(&mut theirs, text), "{text:?}");
        }
    }
}
