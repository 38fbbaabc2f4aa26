//! What a word is, in one place: the character test that both the exact counts
//! ([`super::text_counts`]) and the index's tokenizer ([`WordTokenizer`]) use, and where a
//! page's text is cut for holding too many distinct words ([`distinct_words_cut`]).
//!
//! The rules are tantivy's `default` analyzer's (runs of `char::is_alphanumeric`, runs of
//! [`MAX_WORD_BYTES`] bytes or more dropped, lowercased), done in one pass per token instead of
//! three stages, with the characters of a prose page (ASCII, General Punctuation) classified
//! without Unicode table lookups. It is registered as the index's `default` tokenizer, so the
//! schema, and every index written before it, stays as it was; a unit test pins that tokens,
//! positions and offsets are tantivy's own. It must never change what a word is: indexes on
//! disk and the brute-force checks depend on it.

use std::collections::HashSet;

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

/// Runs of this many bytes or more are no word (tantivy's `RemoveLongFilter::limit(40)`).
pub(super) const MAX_WORD_BYTES: usize = 40;

/// The Unicode block of spaces, dashes, quotes and other punctuation: no character in it is a
/// letter or a digit (a unit test checks every one), so no table lookup is needed for it.
pub(super) const GENERAL_PUNCTUATION: std::ops::RangeInclusive<char> = '\u{2000}'..='\u{206f}';

/// Whether each ASCII byte is part of a word: one load instead of three range tests, on the
/// path every byte of a prose page takes.
pub(super) static ASCII_WORD: [bool; 128] = {
    let mut table = [false; 128];
    let mut byte = 0;
    while byte < 128 {
        table[byte] = (byte as u8).is_ascii_alphanumeric();
        byte += 1;
    }
    table
};

/// Whether the character starting at byte `at` of `text` is part of a word, and its length in
/// bytes. `at` must be on a character boundary below `text.len()`.
#[inline]
pub(super) fn word_char_at(text: &str, at: usize) -> (bool, usize) {
    let byte = text.as_bytes()[at];
    if let Some(&word) = ASCII_WORD.get(usize::from(byte)) {
        return (word, 1);
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

/// Where `text` must be cut so that it holds at most `max` distinct words (words as the index
/// makes them: lowercased runs, long runs dropped): the byte offset of the first word that
/// would be the `max + 1`-th distinct one, or `None` when the whole text holds at most `max`.
/// Everything before that word stays, repeats of earlier words and the separators included.
///
/// A text of `n` bytes holds at most `(n + 1) / 2` words (a word takes a byte and words need a
/// separator between them), so a text of at most `2 * max` bytes cannot hold `max + 1` and is
/// not scanned: ordinary pages pay one comparison.
pub(super) fn distinct_words_cut(text: &str, max: usize) -> Option<usize> {
    if text.len() <= max.saturating_mul(2) {
        return None;
    }
    let mut seen: HashSet<Box<str>, Xxh3DefaultBuilder> =
        HashSet::with_capacity_and_hasher(max.min(text.len() / 16), Xxh3DefaultBuilder);
    let mut tokenizer = WordTokenizer::default();
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        let token = stream.token();
        if seen.contains(token.text.as_str()) {
            continue;
        }
        if seen.len() == max {
            return Some(token.offset_from);
        }
        seen.insert(token.text.as_str().into());
    }
    None
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

    /// The cut rule written apart from the tokenizer: runs of `char::is_alphanumeric`,
    /// lowercased per character, runs of 40 bytes or more no word, and no length shortcut.
    fn brute_cut(text: &str, max: usize) -> Option<usize> {
        let mut seen = std::collections::HashSet::new();
        let mut start = None;
        let end = std::iter::once((text.len(), ' '));
        for (at, c) in text.char_indices().chain(end) {
            if c.is_alphanumeric() {
                start.get_or_insert(at);
                continue;
            }
            let Some(from) = start.take() else { continue };
            if at - from >= MAX_WORD_BYTES {
                continue;
            }
            let word: String = text[from..at]
                .chars()
                .flat_map(char::to_lowercase)
                .collect();
            if !seen.contains(&word) {
                if seen.len() == max {
                    return Some(from);
                }
                seen.insert(word);
            }
        }
        None
    }

    #[test]
    fn a_text_is_cut_before_the_word_past_the_cap_and_kept_whole_up_to_it() {
        let long = "x".repeat(MAX_WORD_BYTES);
        let cases: &[(&str, usize, Option<usize>)] = &[
            // one below the cap, exactly at it, one above (cut at the fourth word's first byte)
            ("a b a b a b a", 3, None),
            ("a b c a b c a", 3, None),
            ("a b c a b d c", 3, Some(10)),
            // distinct once lowercased, ASCII and not
            ("A b C a B c D", 3, Some(12)),
            ("Straße STRASSE straße ÉTÉ été x", 3, Some(36)),
            ("Über ÜBER über, ünd", 1, Some(19)),
            ("漢字 漢字 かな 漢字 カナ", 2, Some(28)),
            // the cut is at the word, whatever precedes it
            ("a\nb\n\nc", 2, Some(5)),
            // the threshold: 2 * max bytes cannot hold max + 1 words; one byte more can
            ("ab c d", 3, None),
            ("a b c d", 3, Some(6)),
            ("", 0, None),
            ("a", 0, Some(0)),
        ];
        for &(text, max, want) in cases {
            assert_eq!(distinct_words_cut(text, max), want, "{text:?} at {max}");
            assert_eq!(brute_cut(text, max), want, "brute force: {text:?} at {max}");
        }
        // Runs too long to be words are no distinct words.
        let text = format!("a {long} b {long} {long}");
        assert_eq!(distinct_words_cut(&text, 2), None);
        assert_eq!(
            distinct_words_cut(&format!("{text} c"), 2),
            Some(text.len() + 1)
        );
    }

    #[test]
    fn the_cut_agrees_with_a_brute_force_scan_on_random_texts() {
        let alphabet: Vec<char> = "aAbB9 \n.,-'’ßẞÉé漢ü\u{301}🦀\u{200b}İΣ".chars().collect();
        let mut rng = crate::testweb::rng::SplitMix64::new(31);
        let mut cuts = 0;
        for _ in 0..3000 {
            let len = rng.below(60);
            let text: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let max = rng.below(8) as usize;
            let want = brute_cut(&text, max);
            cuts += usize::from(want.is_some());
            assert_eq!(distinct_words_cut(&text, max), want, "{text:?} at {max}");
        }
        assert!(
            cuts > 300,
            "the texts must be cut often enough to test it: {cuts}"
        );
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
