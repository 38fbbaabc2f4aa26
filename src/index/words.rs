//! What a word is, in one place: the character tests that both the exact counts
//! ([`super::text_counts`]) and the index's tokenizers use, and where a page's text is cut for
//! holding too many distinct words ([`distinct_words_cut`]).
//!
//! There are two sets of rules ([`Words`]), and an index keeps the one it was made with for its
//! whole life: its schema names its tokenizer, and its counts, its queries and a resumed crawl
//! adding to it all follow that name.
//!
//! - [`Words::Alphanumeric`], registered as tantivy's `default` tokenizer (the name every index
//!   made before [`Words::Marks`] has in its schema): tantivy's `default` analyzer's rules (runs
//!   of `char::is_alphanumeric`, runs of [`MAX_WORD_BYTES`] bytes or more dropped, lowercased),
//!   done in one pass per token ([`WordTokenizer`]); a unit test pins that tokens, positions and
//!   offsets are tantivy's own. It must never change: indexes on disk depend on it. It splits
//!   words at combining marks that are not Alphabetic (Hindi `हिन्दी` at its virama) and tells
//!   a decomposed `café` from a composed one.
//! - [`Words::Marks`], registered as [`MARKS_TOKENIZER`], for indexes made after it and before
//!   [`Words::Folded`] ([`NfcWordTokenizer`]): runs of letters, digits and combining marks,
//!   NFC-normalized, then lowercased per character and dropped at [`MAX_WORD_BYTES`] as above
//!   (measured after normalization). A soft hyphen or a ZWNJ splits its word, and `ΝΌΜΟΣ` is
//!   not `νόμος` (no final-sigma rule).
//! - [`Words::Folded`], registered as [`FOLDED_TOKENIZER`], for every index made since
//!   ([`FoldedWordTokenizer`]): the runs of [`Words::Marks`], except that a default-ignorable
//!   code point (soft hyphen, ZWNJ, ZWJ, word joiner, variation selectors: invisible, and part
//!   of the word to UAX #29's rule WB4) continues a run without being in its token; the token
//!   is the run case-folded (Unicode full case folding: `Σ` and `ς` are `σ`, `ß` is `ss`) and
//!   in NFC ([`fold_run`]), dropped at [`MAX_WORD_BYTES`] measured on the token.
//!
//! All three classify the characters of a prose page (ASCII, General Punctuation) without
//! Unicode table lookups, and ASCII runs skip normalization and folding (ASCII is NFC, and
//! folds as it lowercases).

use std::collections::HashSet;

use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

/// Runs of this many bytes or more are no word (tantivy's `RemoveLongFilter::limit(40)`).
pub(super) const MAX_WORD_BYTES: usize = 40;

/// At most how many times its bytes a run's token by [`Words::Folded`] takes (a unit test
/// checks every code point): a run shorter than `MAX_WORD_BYTES / FOLD_GROWTH` is a word
/// without folding it to measure.
const FOLD_GROWTH: usize = 3;

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

/// The name [`Words::Marks`] is registered under, and that the schema of an index made with it
/// names.
pub(super) const MARKS_TOKENIZER: &str = "words_nfc";

/// The name [`Words::Folded`] is registered under, and that the schema of an index made with it
/// names.
pub(super) const FOLDED_TOKENIZER: &str = "words_folded";

/// Which rules make a word (see the module's comment); an index keeps its own for life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Words {
    /// Runs of `char::is_alphanumeric`: tantivy's `default` analyzer, every index made before
    /// [`Words::Marks`] existed.
    Alphanumeric,
    /// Runs of letters, digits and combining marks, NFC-normalized, lowercased per character:
    /// every index made after [`Words::Alphanumeric`] and before [`Words::Folded`].
    Marks,
    /// The runs of [`Words::Marks`] with default-ignorable code points inside them left out of
    /// the word, not splitting it; case-folded, in NFC: every index made since.
    Folded,
}

impl Words {
    /// The rules a new index gets.
    pub const NEWEST: Words = Words::Folded;

    /// The tokenizer name the schema of an index with these rules gives its text fields.
    pub(super) fn tokenizer_name(self) -> &'static str {
        match self {
            Words::Alphanumeric => "default",
            Words::Marks => MARKS_TOKENIZER,
            Words::Folded => FOLDED_TOKENIZER,
        }
    }

    /// Each word of `text` by these rules, with the bytes of `text` it was made from: for
    /// showing where a line matches (the dashboard), as the index's analyzer makes them.
    pub fn words(self, text: &str) -> Vec<(String, std::ops::Range<usize>)> {
        let mut words = Vec::new();
        self.analyzer()
            .token_stream(text)
            .process(&mut |t| words.push((t.text.clone(), t.offset_from..t.offset_to)));
        words
    }

    /// The index's analyzer for these rules (also for the benchmark, `benches/words.rs`).
    pub fn analyzer(self) -> TextAnalyzer {
        match self {
            Words::Alphanumeric => TextAnalyzer::from(WordTokenizer::default()),
            Words::Marks => TextAnalyzer::from(NfcWordTokenizer::default()),
            Words::Folded => TextAnalyzer::from(FoldedWordTokenizer::default()),
        }
    }
}

/// The rules as an error message says them.
impl std::fmt::Display for Words {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Words::Folded => {
                "runs of letters, digits and their combining marks (soft hyphens, ZWNJ and other \
                 invisible characters inside a word are part of it)"
            }
            Words::Marks => {
                "runs of letters, digits and their combining marks in this index, made before \
                 soft hyphens and ZWNJ stopped splitting words and case was folded \
                 (`crawltop index DIR --replace` rebuilds it with those rules)"
            }
            Words::Alphanumeric => {
                "runs of letters and digits in this index, made before words kept their \
                 combining marks (`crawltop index DIR --replace` rebuilds it with them)"
            }
        })
    }
}

/// What a character is to [`Words::Marks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// Between words.
    Gap,
    /// Starts or continues a word: `char::is_alphanumeric` and no mark (letters, digits,
    /// other numbers such as `²` and `Ⅻ`, and symbols Unicode counts as Alphabetic, `Ⓐ`),
    /// exactly the characters [`Words::Alphanumeric`] takes, so no old word loses a character.
    Base,
    /// A combining mark (general category Mn, Mc or Me): continues a word, never starts one.
    /// A mark with no base before it (after a space, or at the start) belongs to no word, as
    /// UAX #29 attaches it to the character before it.
    Mark,
    /// To [`Words::Folded`] only, a default-ignorable code point ([`is_ignorable`]): continues
    /// a word as a mark does, and is left out of its token.
    Ignorable,
}

/// Whether the character starting at byte `at` of `text` is part of a word by
/// [`Words::Marks`], and its length in bytes. `at` must be on a character boundary below
/// `text.len()`.
#[inline]
pub(super) fn class_at(text: &str, at: usize) -> (Class, usize) {
    let byte = text.as_bytes()[at];
    if let Some(&word) = ASCII_WORD.get(usize::from(byte)) {
        return (if word { Class::Base } else { Class::Gap }, 1);
    }
    let c = text[at..]
        .chars()
        .next()
        .expect("`at` is on a character boundary below the end");
    (class_of(c), c.len_utf8())
}

/// [`Class`] of a character past ASCII. Never inlined: the table lookups inlined into
/// [`class_at`] kept it out of the tokenizer's loop, a call for every ASCII byte (measured:
/// an English page tokenized about 40% slower).
#[inline(never)]
fn class_of(c: char) -> Class {
    use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};
    if GENERAL_PUNCTUATION.contains(&c) {
        return Class::Gap;
    }
    let category = icu_properties::CodePointMapData::<GeneralCategory>::new().get(c);
    if GeneralCategoryGroup::Mark.contains(category) {
        Class::Mark
    } else if GeneralCategoryGroup::Letter.contains(category)
        || GeneralCategoryGroup::Number.contains(category)
        || c.is_alphanumeric()
    {
        Class::Base
    } else {
        Class::Gap
    }
}

/// Whether the character starting at byte `at` of `text` is part of a word by
/// [`Words::Folded`], and its length in bytes; as [`class_at`].
#[inline]
pub(super) fn folded_class_at(text: &str, at: usize) -> (Class, usize) {
    let byte = text.as_bytes()[at];
    if let Some(&word) = ASCII_WORD.get(usize::from(byte)) {
        return (if word { Class::Base } else { Class::Gap }, 1);
    }
    let c = text[at..]
        .chars()
        .next()
        .expect("`at` is on a character boundary below the end");
    (folded_class_of(c), c.len_utf8())
}

/// [`Class`] of a character past ASCII by [`Words::Folded`]: [`class_of`]'s, but a
/// default-ignorable code point is [`Class::Ignorable`]. Never inlined, as [`class_of`]. One
/// table lookup for most characters, as [`class_of`]: the general category tells which can be
/// ignorable (a unit test checks every code point against Unicode's property).
#[inline(never)]
fn folded_class_of(c: char) -> Class {
    use icu_properties::props::{GeneralCategory as Category, GeneralCategoryGroup};
    if GENERAL_PUNCTUATION.contains(&c) {
        // The block's default-ignorables, written out, so that prose's dashes and quotes take
        // no lookup.
        return if matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}')
        {
            Class::Ignorable
        } else {
            Class::Gap
        };
    }
    let category = icu_properties::CodePointMapData::<Category>::new().get(c);
    let ignorable = match category {
        // The Hangul fillers: the only letters that are default-ignorable.
        Category::OtherLetter => matches!(c, '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}'),
        Category::Format | Category::NonspacingMark | Category::Unassigned => is_ignorable(c),
        _ => false,
    };
    if ignorable {
        Class::Ignorable
    } else if GeneralCategoryGroup::Mark.contains(category) {
        Class::Mark
    } else if GeneralCategoryGroup::Letter.contains(category)
        || GeneralCategoryGroup::Number.contains(category)
        || c.is_alphanumeric()
    {
        Class::Base
    } else {
        Class::Gap
    }
}

/// Whether folding leaves every character of `run` as it is: letters without case (Lo: the
/// letters of Devanagari, Arabic, Hebrew, Thai, CJK...), combining marks but U+0345 (which
/// folds to `ι`), decimal digits (a unit test checks every code point). Such a run's token is
/// its NFC alone, as by [`Words::Marks`], with no folding to pay for.
fn folds_to_itself(run: &str) -> bool {
    use icu_properties::props::GeneralCategory as Category;
    let categories = icu_properties::CodePointMapData::<Category>::new();
    run.chars().all(|c| match categories.get(c) {
        Category::OtherLetter
        | Category::SpacingMark
        | Category::EnclosingMark
        | Category::DecimalNumber => true,
        Category::NonspacingMark => c != '\u{345}',
        _ => false,
    })
}

/// Whether [`Words::Folded`] leaves `c` out of a word without ending it: Unicode's
/// `Default_Ignorable_Code_Point` (soft hyphen, ZWNJ, ZWJ, word joiner, the marks and
/// embeddings of direction, variation selectors, the combining grapheme joiner, Hangul
/// fillers, tags), which a browser draws as nothing. Except U+200B, the zero-width space:
/// invisible too, but it is where a word ends in Thai or Khmer text written without spaces,
/// and UAX #29 breaks words at it (it is a space, not a format character, to rule WB4).
fn is_ignorable(c: char) -> bool {
    use icu_properties::props::DefaultIgnorableCodePoint;
    c != '\u{200b}'
        && icu_properties::CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
}

/// Buffers [`fold_run`] reuses from run to run.
#[derive(Clone, Default)]
pub(super) struct Scratch {
    /// The run without its ignorables.
    kept: String,
    /// The run decomposed, where folding needs it.
    decomposed: String,
    /// The token before `i` + U+0307 is made `i`.
    dotted: String,
}

/// The token [`Words::Folded`] makes of a run past ASCII, in `out` (cleared first): the run
/// without its default-ignorables (when `ignorables` says it holds any), case-folded by
/// Unicode's full case folding (`ß` to `ss`, `Σ` and `ς` to `σ`, `ﬁ` to `fi`), in NFC.
///
/// Unicode's canonical caseless match (The Unicode Standard, 3.13, D145) folds a text's NFD so
/// that canonically equivalent texts fold alike; only U+0345 (the Greek iota below, which
/// folds to `ι`) and the letters that decompose to it need that, so only a run holding one is
/// decomposed first. Folding makes `İ` (Turkish dotted capital I) `i` + U+0307, a dot above
/// the dot `i` has already: that pair is made `i`, so that `İstanbul`, `İSTANBUL` and
/// `istanbul` are one word (`I` stays `i`, as in English; Turkish `ı` stays apart, as
/// locale-free folding must keep it).
pub(super) fn fold_run(run: &str, ignorables: bool, scratch: &mut Scratch, out: &mut String) {
    let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
    let Scratch {
        kept,
        decomposed,
        dotted,
    } = scratch;
    let mut run = run;
    if ignorables {
        kept.clear();
        kept.extend(run.chars().filter(|&c| !is_ignorable(c)));
        run = kept;
    }
    out.clear();
    if folds_to_itself(run) {
        out.push_str(&nfc.normalize(run));
        return;
    }
    if run
        .chars()
        .any(|c| c == '\u{345}' || ('\u{1f80}'..='\u{1ffc}').contains(&c))
    {
        decomposed.clear();
        icu_normalizer::DecomposingNormalizerBorrowed::new_nfd()
            .normalize_to(run, decomposed)
            .expect("a String takes any text");
        run = decomposed;
    }
    let folded = icu_casemap::CaseMapper::new().fold_string(run);
    // Borrowed, and copied once, when it already is in NFC (most text on the web).
    out.push_str(&nfc.normalize(&folded));
    if out.contains("i\u{307}") {
        // Made `i`, then composed again: `i` + U+0307 + U+0301 becomes `í`.
        dotted.clear();
        dotted.push_str(&out.replace("i\u{307}", "i"));
        out.clear();
        nfc.normalize_to(dotted, out)
            .expect("a String takes any text");
    }
}

/// `run` in NFC: borrowed when it already is (most text on the web).
fn nfc(run: &str) -> std::borrow::Cow<'_, str> {
    icu_normalizer::ComposingNormalizerBorrowed::new_nfc().normalize(run)
}

/// Whether the non-ASCII run `run` is a word by [`Words::Marks`]: shorter than
/// [`MAX_WORD_BYTES`] once in NFC (which may shorten it, `e` + U+0301 to `é`, or lengthen it,
/// Devanagari `क़` U+0958 to `क` + U+093C).
fn nfc_run_is_word(run: &str) -> bool {
    // NFC at most triples a text's length (UAX #15's bound): a run this short stays short.
    run.len() < MAX_WORD_BYTES / 3 || nfc(run).len() < MAX_WORD_BYTES
}

/// How many words `text` holds by [`Words::Marks`], in one scan that makes no token: the
/// loop of [`super::text_counts`] with the run's kind kept, so that only a run holding a
/// character past ASCII is normalized, to measure it.
pub(super) fn marks_word_count(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut words = 0u64;
    // The current run's length in bytes, and whether it is all ASCII.
    let mut run = 0usize;
    let mut plain = true;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if let Some(&word) = ASCII_WORD.get(usize::from(byte)) {
            if !word && !plain {
                words += u64::from(nfc_run_is_word(&text[at - run..at]));
                (run, plain) = (0, true);
            }
            // Branch-free for ASCII runs, as `count_step`.
            words += u64::from(!word & (run.wrapping_sub(1) < MAX_WORD_BYTES - 1));
            run = if word { run + 1 } else { 0 };
            at += 1;
            continue;
        }
        let (class, len) = class_at(text, at);
        match class {
            Class::Base => (run, plain) = (run + len, false),
            Class::Mark if run > 0 => (run, plain) = (run + len, false),
            Class::Mark | Class::Ignorable | Class::Gap => {
                if run > 0 {
                    let word = &text[at - run..at];
                    words += u64::from(if plain {
                        run < MAX_WORD_BYTES
                    } else {
                        nfc_run_is_word(word)
                    });
                }
                (run, plain) = (0, true);
            }
        }
        at += len;
    }
    if run > 0 {
        let word = &text[text.len() - run..];
        words += u64::from(if plain {
            run < MAX_WORD_BYTES
        } else {
            nfc_run_is_word(word)
        });
    }
    words
}

/// How many words `text` holds by [`Words::Folded`], in one scan that makes no token: the loop
/// of [`marks_word_count`] with ignorables, where only a run holding a character past ASCII,
/// and too long to be a word whatever folding makes of it ([`FOLD_GROWTH`]), is folded, to
/// measure its token.
pub(super) fn folded_word_count(text: &str) -> u64 {
    let bytes = text.as_bytes();
    let mut words = 0u64;
    let (mut scratch, mut token) = (Scratch::default(), String::new());
    let mut is_word = |run: &str, plain: bool, ignorables: bool| {
        if plain {
            run.len() < MAX_WORD_BYTES
        } else if run.len() * FOLD_GROWTH < MAX_WORD_BYTES {
            // Its token cannot reach the limit, whatever folding makes of it.
            true
        } else if !ignorables && folds_to_itself(run) {
            // Measured as by `Words::Marks`, short runs without normalizing them.
            nfc_run_is_word(run)
        } else {
            fold_run(run, ignorables, &mut scratch, &mut token);
            token.len() < MAX_WORD_BYTES
        }
    };
    // The current run's length in bytes, whether it is all ASCII, whether it holds an
    // ignorable.
    let mut run = 0usize;
    let mut plain = true;
    let mut ignorables = false;
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        if let Some(&word) = ASCII_WORD.get(usize::from(byte)) {
            if !word && !plain {
                words += u64::from(is_word(&text[at - run..at], false, ignorables));
                (run, plain, ignorables) = (0, true, false);
            }
            // Branch-free for ASCII runs, as `count_step`.
            words += u64::from(!word & (run.wrapping_sub(1) < MAX_WORD_BYTES - 1));
            run = if word { run + 1 } else { 0 };
            at += 1;
            continue;
        }
        let (class, len) = folded_class_at(text, at);
        match class {
            Class::Base => (run, plain) = (run + len, false),
            Class::Mark if run > 0 => (run, plain) = (run + len, false),
            Class::Ignorable if run > 0 => (run, plain, ignorables) = (run + len, false, true),
            Class::Mark | Class::Ignorable | Class::Gap => {
                if run > 0 {
                    words += u64::from(is_word(&text[at - run..at], plain, ignorables));
                }
                (run, plain, ignorables) = (0, true, false);
            }
        }
        at += len;
    }
    if run > 0 {
        words += u64::from(is_word(&text[text.len() - run..], plain, ignorables));
    }
    words
}

/// Where `text` must be cut so that it holds at most `max` distinct words (words as the index
/// makes them: lowercased runs, long runs dropped): the byte offset of the first word that
/// would be the `max + 1`-th distinct one, or `None` when the whole text holds at most `max`.
/// Everything before that word stays, repeats of earlier words and the separators included.
///
/// A text of `n` bytes holds at most `(n + 1) / 2` words (a word takes a byte and words need a
/// separator between them), so a text of at most `2 * max` bytes cannot hold `max + 1` and is
/// not scanned: ordinary pages pay one comparison.
pub(super) fn distinct_words_cut(text: &str, max: usize, words: Words) -> Option<usize> {
    if text.len() <= max.saturating_mul(2) {
        return None;
    }
    match words {
        Words::Alphanumeric => cut_with(WordTokenizer::default(), text, max),
        Words::Marks => cut_with(NfcWordTokenizer::default(), text, max),
        Words::Folded => cut_with(FoldedWordTokenizer::default(), text, max),
    }
}

/// [`distinct_words_cut`] with a tokenizer of its rules (no analyzer box: a token a call).
fn cut_with<T: Tokenizer>(mut tokenizer: T, text: &str, max: usize) -> Option<usize> {
    let mut seen: HashSet<Box<str>, Xxh3DefaultBuilder> =
        HashSet::with_capacity_and_hasher(max.min(text.len() / 16), Xxh3DefaultBuilder);
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

/// The tokenizer of [`Words::Marks`], in one pass as [`WordTokenizer`]: its runs start at a
/// [`Class::Base`] and take marks; a run past ASCII is normalized to NFC before it is measured
/// and lowercased. Offsets are the page's own bytes (a hit's lines and the cut point are in the
/// page as stored), the token's text the normalized word.
///
/// Each run is normalized alone, which gives the words of the page normalized first: a run
/// starts at a character that is no mark and ends before one that is no mark, and those are
/// starters (canonical combining class 0) that NFC composes with nothing outside the run (a
/// gap character composes only with marks, `=` + U+0338 to `≠`, and such a mark, baseless,
/// is in no run either way). The unit tests check it against normalizing the whole text.
#[derive(Clone, Default)]
pub(super) struct NfcWordTokenizer {
    token: Token,
}

pub(super) struct NfcWordStream<'a> {
    text: &'a str,
    at: usize,
    token: &'a mut Token,
}

impl Tokenizer for NfcWordTokenizer {
    type TokenStream<'a> = NfcWordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> NfcWordStream<'a> {
        self.token.reset();
        NfcWordStream {
            text,
            at: 0,
            token: &mut self.token,
        }
    }
}

impl TokenStream for NfcWordStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let len = self.text.len();
        loop {
            // Skip to the next run: past gaps and marks without a base.
            let start = loop {
                if self.at >= len {
                    return false;
                }
                let (class, char_len) = class_at(self.text, self.at);
                if class == Class::Base {
                    break self.at;
                }
                self.at += char_len;
            };
            let mut ascii = true;
            while self.at < len {
                let (class, char_len) = class_at(self.text, self.at);
                if class == Class::Gap {
                    break;
                }
                ascii &= char_len == 1;
                self.at += char_len;
            }
            // Every run takes a position, dropped or not, as in the old rules.
            self.token.position = self.token.position.wrapping_add(1);
            let run = &self.text[start..self.at];
            if ascii {
                if run.len() >= MAX_WORD_BYTES {
                    continue;
                }
                self.token.text.push_str(run);
                self.token.text.make_ascii_lowercase();
            } else {
                let normal = nfc(run);
                if normal.len() >= MAX_WORD_BYTES {
                    continue;
                }
                self.token
                    .text
                    .extend(normal.chars().flat_map(char::to_lowercase));
            }
            self.token.offset_from = start;
            self.token.offset_to = self.at;
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

/// The tokenizer of [`Words::Folded`], in one pass as [`NfcWordTokenizer`]: its runs start at
/// a [`Class::Base`] and take marks and ignorables; a run past ASCII is made a token by
/// [`fold_run`], an ASCII run lowercased. Offsets are the page's own bytes, ignorables inside
/// the run included.
///
/// Each run is folded and normalized alone, which gives the words of the page folded and
/// normalized first, as for [`NfcWordTokenizer`]: an ignorable inside a run is no starter
/// NFC would compose across (it is left out before), and folding is per character.
#[derive(Clone, Default)]
pub(super) struct FoldedWordTokenizer {
    token: Token,
    scratch: Scratch,
}

pub(super) struct FoldedWordStream<'a> {
    text: &'a str,
    at: usize,
    token: &'a mut Token,
    scratch: &'a mut Scratch,
}

impl Tokenizer for FoldedWordTokenizer {
    type TokenStream<'a> = FoldedWordStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> FoldedWordStream<'a> {
        self.token.reset();
        FoldedWordStream {
            text,
            at: 0,
            token: &mut self.token,
            scratch: &mut self.scratch,
        }
    }
}

impl TokenStream for FoldedWordStream<'_> {
    fn advance(&mut self) -> bool {
        self.token.text.clear();
        let len = self.text.len();
        loop {
            // Skip to the next run: past gaps, and marks and ignorables without a base.
            let start = loop {
                if self.at >= len {
                    return false;
                }
                let (class, char_len) = folded_class_at(self.text, self.at);
                if class == Class::Base {
                    break self.at;
                }
                self.at += char_len;
            };
            let mut ascii = true;
            let mut ignorables = false;
            while self.at < len {
                let (class, char_len) = folded_class_at(self.text, self.at);
                if class == Class::Gap {
                    break;
                }
                ascii &= char_len == 1;
                ignorables |= class == Class::Ignorable;
                self.at += char_len;
            }
            // Every run takes a position, dropped or not, as in the older rules.
            self.token.position = self.token.position.wrapping_add(1);
            let run = &self.text[start..self.at];
            if ascii {
                if run.len() >= MAX_WORD_BYTES {
                    continue;
                }
                self.token.text.push_str(run);
                self.token.text.make_ascii_lowercase();
            } else {
                fold_run(run, ignorables, self.scratch, &mut self.token.text);
                if self.token.text.len() >= MAX_WORD_BYTES {
                    self.token.text.clear();
                    continue;
                }
            }
            self.token.offset_from = start;
            self.token.offset_to = self.at;
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

    /// Whether `c` is a combining mark (general category Mn, Mc or Me).
    fn is_mark(c: char) -> bool {
        use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};
        GeneralCategoryGroup::Mark
            .contains(icu_properties::CodePointMapData::<GeneralCategory>::new().get(c))
    }

    /// The cut rule written apart from the tokenizer: runs of `char::is_alphanumeric` (with
    /// [`Words::Marks`], a mark continues a run and starts none, and a run is measured in
    /// NFC), lowercased per character, runs of 40 bytes or more no word, and no length
    /// shortcut.
    fn brute_cut(text: &str, max: usize, words: Words) -> Option<usize> {
        let mut seen = std::collections::HashSet::new();
        let mut start = None;
        let end = std::iter::once((text.len(), ' '));
        for (at, c) in text.char_indices().chain(end) {
            let marks = words == Words::Marks;
            if marks && is_mark(c) {
                if start.is_some() {
                    continue;
                }
            } else if c.is_alphanumeric() {
                start.get_or_insert(at);
                continue;
            }
            let Some(from) = start.take() else { continue };
            let run = if marks {
                icu_normalizer::ComposingNormalizerBorrowed::new_nfc()
                    .normalize(&text[from..at])
                    .into_owned()
            } else {
                text[from..at].to_owned()
            };
            if run.len() >= MAX_WORD_BYTES {
                continue;
            }
            let word: String = run.chars().flat_map(char::to_lowercase).collect();
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
        for words in [Words::Alphanumeric, Words::Marks] {
            for &(text, max, want) in cases {
                assert_eq!(
                    distinct_words_cut(text, max, words),
                    want,
                    "{text:?} at {max}"
                );
                assert_eq!(
                    brute_cut(text, max, words),
                    want,
                    "brute force: {text:?} at {max}"
                );
            }
            // Runs too long to be words are no distinct words.
            let text = format!("a {long} b {long} {long}");
            assert_eq!(distinct_words_cut(&text, 2, words), None);
            assert_eq!(
                distinct_words_cut(&format!("{text} c"), 2, words),
                Some(text.len() + 1)
            );
        }
        // A word of marks is one distinct word to the new rules, two to the old; and `café`
        // decomposed is `café` composed to the new rules only.
        let hindi = "हिन्दी हिन्दी x";
        assert_eq!(
            distinct_words_cut(hindi, 2, Words::Alphanumeric),
            Some(hindi.len() - 1)
        );
        assert_eq!(distinct_words_cut(hindi, 2, Words::Marks), None);
        let cafe = "café cafe\u{301} x";
        assert_eq!(
            distinct_words_cut(cafe, 1, Words::Marks),
            Some(cafe.len() - 1)
        );
        assert_eq!(distinct_words_cut(cafe, 1, Words::Alphanumeric), Some(6));
    }

    #[test]
    fn the_cut_agrees_with_a_brute_force_scan_on_random_texts() {
        let alphabet: Vec<char> = "aAbB9 \n.,-'’ßẞÉé漢ü\u{301}🦀\u{200b}İΣह\u{94d}\u{93f}\u{958}"
            .chars()
            .collect();
        let mut rng = crate::testweb::rng::SplitMix64::new(31);
        let mut cuts = 0;
        for i in 0..6000 {
            let words = if i % 2 == 0 {
                Words::Alphanumeric
            } else {
                Words::Marks
            };
            let len = rng.below(60);
            let text: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let max = rng.below(8) as usize;
            let want = brute_cut(&text, max, words);
            cuts += usize::from(want.is_some());
            assert_eq!(
                distinct_words_cut(&text, max, words),
                want,
                "{text:?} at {max} by {words:?}"
            );
        }
        assert!(
            cuts > 300,
            "the texts must be cut often enough to test it: {cuts}"
        );
    }

    fn marks_tokens(text: &str) -> Vec<String> {
        all(&mut Words::Marks.analyzer(), text)
            .into_iter()
            .map(|(t, ..)| t)
            .collect()
    }

    fn old_tokens(text: &str) -> Vec<String> {
        all(&mut Words::Alphanumeric.analyzer(), text)
            .into_iter()
            .map(|(t, ..)| t)
            .collect()
    }

    #[test]
    fn words_of_every_script_keep_their_marks_and_are_composed() {
        // (text, the new rules' words, the old rules' words where they differ)
        let cases: &[(&str, &[&str], &[&str])] = &[
            // Hindi splits at its virama (U+094D) in the old rules; Tamil loses its last one.
            ("हिन्दी", &["हिन्दी"], &["हिन", "दी"]),
            ("தமிழ்", &["தமிழ்"], &["தமிழ"]),
            // Decomposed and composed café are one word, composed.
            ("cafe\u{301}", &["café"], &["cafe"]),
            ("CAFÉ café", &["café", "café"], &["café", "café"]),
            // Arabic harakat and Hebrew niqqud are Alphabetic already; cantillation (U+0596)
            // is not, and NFC puts marks in their canonical order (shin dot after qamats).
            ("العَرَبِيَّة", &["العَرَبِيَّة"], &["العَرَبِيَّة"]),
            ("בְּרֵאשִׁ֖ית", &["בְּרֵאשִׁ֖ית"], &["בְּרֵאשִׁ", "ית"]),
            ("ש\u{5c1}\u{5b8}לוֹם", &["שָׁלוֹם"], &["ש\u{5c1}\u{5b8}לוֹם"]),
            // Thai tone marks (U+0E48) are marks: a spaceless phrase is one run, as before.
            ("ไม่ใช่", &["ไม่ใช่"], &["ไม", "ใช"]),
            // Korean jamo compose to syllables.
            (
                "\u{1112}\u{1161}\u{11ab}\u{1100}\u{116e}\u{11a8}\u{110b}\u{1165}",
                &["한국어"],
                &["\u{1112}\u{1161}\u{11ab}\u{1100}\u{116e}\u{11a8}\u{110b}\u{1165}"],
            ),
            ("한국어", &["한국어"], &["한국어"]),
            // Emoji are no words; a keycap's marks stay on its digit.
            ("🦀 Rust 👍🏽!", &["rust"], &["rust"]),
            ("1\u{fe0f}\u{20e3}", &["1\u{fe0f}\u{20e3}"], &["1"]),
            // A mark with no base starts no word, and leaves the next word whole.
            ("\u{301}", &[], &[]),
            (" \u{301}a \u{94d}", &["a"], &["a"]),
            ("\u{93f}न", &["न"], &["\u{93f}न"]),
        ];
        for &(text, new, old) in cases {
            assert_eq!(marks_tokens(text), new, "{text:?} by the new rules");
            assert_eq!(old_tokens(text), old, "{text:?} by the old rules");
            assert_eq!(
                super::super::count_words(text, Words::Marks),
                new.len() as u64,
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_length_limit_is_measured_after_composition() {
        // NFD é is 3 bytes, NFC 2: 20 of them are 60 bytes as written and 40 composed.
        let e = "e\u{301}";
        assert_eq!(marks_tokens(&e.repeat(19)), ["é".repeat(19)]);
        assert!(marks_tokens(&e.repeat(20)).is_empty());
        // U+0958 (3 bytes) decomposes to 6: 7 of them are 21 bytes as written and 42 in NFC.
        let qa = "\u{958}";
        assert_eq!(marks_tokens(&qa.repeat(6)).len(), 1);
        assert!(marks_tokens(&qa.repeat(7)).is_empty());
        for text in [e.repeat(19), e.repeat(20), qa.repeat(6), qa.repeat(7)] {
            assert_eq!(
                super::super::count_words(&text, Words::Marks),
                marks_tokens(&text).len() as u64
            );
        }
        // Offsets stay the page's own bytes.
        let all = all(&mut Words::Marks.analyzer(), "x cafe\u{301} y");
        assert_eq!(all[1], ("café".to_owned(), 1, 2, 8));
    }

    #[test]
    fn general_punctuation_holds_no_letter_digit_or_mark() {
        for c in GENERAL_PUNCTUATION {
            assert!(!c.is_alphanumeric(), "{c:?} U+{:04X}", u32::from(c));
            assert!(!is_mark(c), "{c:?} U+{:04X}", u32::from(c));
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
    /// The newest rules written apart from the tokenizer, from Unicode's properties alone (no
    /// fast paths): runs that start at a letter or digit and take marks and
    /// default-ignorables (U+200B aside), the ignorables left out, then NFD, full case folding,
    /// NFC, `i` + U+0307 made `i` and NFC again; tokens of 40 bytes or more dropped. Each
    /// token with the byte where its run starts.
    fn brute_folded(text: &str) -> Vec<(usize, String)> {
        use icu_properties::props::GeneralCategoryGroup as Group;
        use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
        let ignorable = |c: char| {
            c != '\u{200b}'
                && icu_properties::CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        };
        let category = |c| icu_properties::CodePointMapData::<GeneralCategory>::new().get(c);
        let base = |c: char| {
            !('\u{2000}'..='\u{206f}').contains(&c)
                && !is_mark(c)
                && (Group::Letter.contains(category(c))
                    || Group::Number.contains(category(c))
                    || c.is_alphanumeric())
        };
        let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
        let mut out = Vec::new();
        let mut start = None;
        let end = std::iter::once((text.len(), ' '));
        for (at, c) in text.char_indices().chain(end) {
            if ignorable(c) || is_mark(c) {
                continue;
            }
            if base(c) {
                start.get_or_insert(at);
                continue;
            }
            let Some(from) = start.take() else { continue };
            let kept: String = text[from..at].chars().filter(|&c| !ignorable(c)).collect();
            let nfd = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize(&kept);
            let folded = icu_casemap::CaseMapper::new()
                .fold_string(&nfd)
                .into_owned();
            let word = nfc.normalize(&nc(&nfc.normalize(&folded))).into_owned();
            if word.len() < MAX_WORD_BYTES {
                out.push((from, word));
            }
        }
        out
    }

    /// The bound [`folded_word_count`]'s shortcut stands on, checked on every code point: a
    /// character's token grows at most [`FOLD_GROWTH`] times its bytes. A run's token
    /// ([`fold_run`]) is the NFC of the full case folding (per code point) of the run or of the
    /// run's NFD; NFC is never longer than NFD (each character of an NFC stands for its own NFD
    /// in the NFD, which is never shorter: checked here too), and `i` + U+0307 made `i` and ignorables left out
    /// only shorten it. So the token is at most the sum over the run's characters of the larger
    /// of NFD(fold(c)) and NFD(fold(NFD(c))), each bounded here.
    #[test]
    fn a_token_is_at_most_fold_growth_times_its_run() {
        let nfd = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd();
        let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
        let fold = |s: &str| icu_casemap::CaseMapper::new().fold_string(s).into_owned();
        let mut worst = (0.0f64, 'a');
        let mut buf = [0u8; 4];
        for c in (0..=0x10_ffff).filter_map(char::from_u32) {
            let one = c.encode_utf8(&mut buf);
            let direct = nfd.normalize(&fold(one)).len();
            let decomposed: usize = (nfd.normalize(one).chars())
                .map(|d| nfd.normalize(&fold(d.encode_utf8(&mut [0u8; 4]))).len())
                .sum();
            // Every character NFC leaves or makes (U+037E, which NFC makes `;`, is none).
            if *nfc.normalize(one) == *one {
                assert!(
                    nfd.normalize(one).len() >= one.len(),
                    "U+{:04X}",
                    u32::from(c)
                );
            }
            let grown = direct.max(decomposed);
            let ratio = grown as f64 / c.len_utf8() as f64;
            if ratio > worst.0 {
                worst = (ratio, c);
            }
            assert!(
                grown <= FOLD_GROWTH * c.len_utf8(),
                "U+{:04X} grows to {grown} bytes from {}",
                u32::from(c),
                c.len_utf8()
            );
        }
        println!(
            "worst growth {:.2} at U+{:04X}",
            worst.0,
            u32::from(worst.1)
        );
    }

    /// `i` + U+0307 made `i`.
    fn nc(text: &str) -> String {
        text.replace("i\u{307}", "i")
    }

    fn folded_tokens(text: &str) -> Vec<String> {
        all(&mut Words::Folded.analyzer(), text)
            .into_iter()
            .map(|(t, ..)| t)
            .collect()
    }

    /// Audit 29, findings 2 and 3: a soft hyphen, a ZWNJ or a ZWJ split the word a reader
    /// sees whole, and `ΝΌΜΟΣ` was not `νόμος`, nor `İstanbul` `istanbul`.
    #[test]
    fn invisible_format_characters_join_their_word_and_case_is_folded() {
        // (text, the newest rules' words, the words of the rules before)
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al",
                &["international"],
                &["in", "ter", "na", "tion", "al"],
            ),
            (
                "Donau\u{ad}dampf\u{ad}schiff\u{ad}fahrt",
                &["donaudampfschifffahrt"],
                &["donau", "dampf", "schiff", "fahrt"],
            ),
            // Persian with ZWNJ, a Hindi conjunct with ZWJ, Bengali with ZWNJ.
            ("کتاب\u{200c}ها", &["کتابها"], &["کتاب", "ها"]),
            ("می\u{200c}خواهم", &["میخواهم"], &["می", "خواهم"]),
            ("क्\u{200d}ष", &["क्ष"], &["क्", "ष"]),
            ("ক্\u{200c}ষ", &["ক্ষ"], &["ক্", "ষ"]),
            // The word joiner, a direction mark, a BOM, the combining grapheme joiner.
            (
                "a\u{2060}b c\u{200e}d e\u{feff}f g\u{34f}h",
                &["ab", "cd", "ef", "gh"],
                &["a", "b", "c", "d", "e", "f", "g\u{34f}h"],
            ),
            // Final sigma, and capitals with their accent.
            ("ΝΌΜΟΣ νόμος", &["νόμοσ", "νόμοσ"], &["νόμοσ", "νόμος"]),
            // Turkish dotted İ, composed and not; dotless ı stays apart.
            (
                "İstanbul İSTANBUL I\u{307}stanbul istanbul",
                &["istanbul", "istanbul", "istanbul", "istanbul"],
                &[
                    "i\u{307}stanbul",
                    "i\u{307}stanbul",
                    "i\u{307}stanbul",
                    "istanbul",
                ],
            ),
            (
                "DİYARBAKIR Diyarbakır",
                &["diyarbakir", "diyarbakır"],
                &["di\u{307}yarbakir", "diyarbakır"],
            ),
            // Full folding: ß and ẞ are ss, a ligature its letters.
            (
                "Straße STRASSE ẞ ﬁle",
                &["strasse", "strasse", "ss", "file"],
                &["straße", "strasse", "ß", "ﬁle"],
            ),
            // An ignorable before a word starts none; one after it ends in it; a zero-width
            // space still parts words, as in Thai written without spaces.
            (
                "\u{ad}word\u{200c} a\u{200b}b",
                &["word", "a", "b"],
                &["word", "a", "b"],
            ),
            // A keycap loses its variation selector, a Hangul filler is no word.
            (
                "1\u{fe0f}\u{20e3} \u{3164}",
                &["1\u{20e3}"],
                &["1\u{fe0f}\u{20e3}", "\u{3164}"],
            ),
            // Marks around an ignorable compose once it is left out.
            ("e\u{ad}\u{301}", &["é"], &["e"]),
        ];
        for &(text, new, old) in cases {
            assert_eq!(folded_tokens(text), new, "{text:?} by the newest rules");
            assert_eq!(marks_tokens(text), old, "{text:?} by the rules before");
            assert_eq!(
                super::super::count_words(text, Words::Folded),
                new.len() as u64,
                "{text:?}"
            );
            let brute: Vec<String> = brute_folded(text).into_iter().map(|(_, w)| w).collect();
            assert_eq!(brute, new, "{text:?} by brute force");
        }
        // The iota below folds to ι in any canonical order of its marks (a case where
        // folding without decomposing first would tell them apart).
        let ypogegrammeni = ["ᾴ", "ά\u{345}", "α\u{301}\u{345}", "α\u{345}\u{301}", "ΆΙ"];
        for text in ypogegrammeni {
            assert_eq!(folded_tokens(text), ["άι"], "{text:?}");
        }
        // Offsets are the page's own bytes, the ignorables inside the run included.
        let all = all(&mut Words::Folded.analyzer(), "x in\u{ad}ter y");
        assert_eq!(all[1], ("inter".to_owned(), 1, 2, 9));
        // The length limit is measured on the token: 20 ß are 40 bytes as written and folded.
        assert_eq!(folded_tokens(&"ß".repeat(19)), ["ss".repeat(19)]);
        assert!(folded_tokens(&"ß".repeat(20)).is_empty());
        // 14 `ŉ` are 28 bytes, folded 42 (ʼn); 13 are 39.
        assert!(folded_tokens(&"ŉ".repeat(14)).is_empty());
        assert_eq!(folded_tokens(&"ŉ".repeat(13)).len(), 1);
        // Soft hyphens do not count towards it.
        let long = format!("{}\u{ad}", "a").repeat(39);
        assert_eq!(folded_tokens(&long), ["a".repeat(39)]);
        for text in [
            "ß".repeat(19),
            "ß".repeat(20),
            "ŉ".repeat(14),
            "ŉ".repeat(13),
            long,
        ] {
            assert_eq!(
                super::super::count_words(&text, Words::Folded),
                folded_tokens(&text).len() as u64,
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_newest_rules_agree_with_a_brute_force_scan_and_ignore_the_normal_form_on_random_texts() {
        let alphabet: Vec<char> = "aAiIbB9 \n.,-'ßẞÉé漢ü\u{301}\u{307}\u{345}🦀İıΣσςΝΌά\u{1fb4}\
             ᾳह\u{94d}\u{93f}\u{958}\u{ad}\u{200b}\u{200c}\u{200d}\u{2060}\u{fe0f}\u{3164}\u{34f}\
             ﬁŉکه"
            .chars()
            .collect();
        let nfd = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd();
        let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
        let mut rng = crate::testweb::rng::SplitMix64::new(29);
        let mut long = 0;
        for _ in 0..3000 {
            // Few gaps, so that runs near the length limit come up.
            let len = rng.below(90);
            let text: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            let want = brute_folded(&text);
            let got: Vec<(usize, String)> = all(&mut Words::Folded.analyzer(), &text)
                .into_iter()
                .map(|(t, _, from, _)| (from, t))
                .collect();
            assert_eq!(got, want, "{text:?}");
            assert_eq!(
                super::super::count_words(&text, Words::Folded),
                want.len() as u64,
                "{text:?}"
            );
            long += usize::from(want.iter().any(|(_, w)| w.len() > 30));
            // Canonically equivalent texts make the same words.
            let words = |t: &str| folded_tokens(t);
            assert_eq!(
                words(&nfd.normalize(&text)),
                words(&text),
                "{text:?} in NFD"
            );
            assert_eq!(
                words(&nfc.normalize(&text)),
                words(&text),
                "{text:?} in NFC"
            );
            // The cut agrees with the brute force's words.
            let max = rng.below(6) as usize;
            let mut seen = HashSet::new();
            let cut = want.iter().find_map(|(from, w)| {
                if seen.contains(w) {
                    return None;
                }
                if seen.len() == max {
                    return Some(*from);
                }
                seen.insert(w.clone());
                None
            });
            assert_eq!(
                distinct_words_cut(&text, max, Words::Folded),
                cut,
                "{text:?} at {max}"
            );
        }
        assert!(long > 50, "runs near the length limit must come up: {long}");
    }

    #[test]
    fn the_ignorables_and_the_characters_folding_leaves_are_unicodes_for_every_code_point() {
        for c in (char::from(128)..=char::MAX).filter(|c| !c.is_ascii()) {
            assert_eq!(
                folded_class_of(c) == Class::Ignorable,
                is_ignorable(c),
                "U+{:04X}",
                u32::from(c)
            );
            let mut one = [0; 4];
            let one = c.encode_utf8(&mut one);
            if folds_to_itself(one) {
                assert_eq!(
                    icu_casemap::CaseMapper::new().fold_string(one),
                    *one,
                    "U+{:04X}",
                    u32::from(c)
                );
            }
        }
        assert_eq!(folded_class_of('\u{200b}'), Class::Gap);
        assert!(folds_to_itself("हिन्दी") && !folds_to_itself("\u{345}"));
    }
}
