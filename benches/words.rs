//! What a word costs: the index's tokenizer and the exact counts (`wc`) over a typical English
//! page (16 KiB of the generator's text, nearly all ASCII) and a Hindi page of the same size
//! (Devanagari: three bytes a character, a virama or vowel sign in most words), and a page of
//! mixed scripts (German with soft hyphens, Persian with ZWNJ, Greek and Turkish capitals,
//! Russian, French), by each set of rules an index may have. The tokenizer runs on tantivy's
//! indexing thread and the counts on the index thread, once per page, so a slower word is a
//! slower crawl. Criterion prints each as time and MiB/s (`thrpt`). `cargo bench --bench words`.

use std::hint::black_box;

use crawltop::index::{Words, text_counts};
use crawltop::testweb::generator::DEFAULT_TEXT;
use criterion::{Criterion, Throughput};

/// Hindi prose, NFC, repeated to the English page's size.
const HINDI: &str = "हिन्दी भारत की एक प्रमुख भाषा है और देवनागरी लिपि में लिखी जाती है। भारत के संविधान में इसे संघ की राजभाषा का स्थान दिया गया है।\nहिन्दी और इसकी बोलियाँ उत्तर एवं मध्य भारत के विविध राज्यों में बोली जाती हैं। भारत और अन्य देशों में करोड़ों लोग हिन्दी बोलते, पढ़ते और लिखते हैं।\nफ़िजी, मॉरिशस, गयाना, सूरीनाम, नेपाल और संयुक्त अरब अमीरात की जनता भी हिन्दी बोलती है। इस भाषा का साहित्य बहुत समृद्ध है, जिसमें कविता, कहानी, उपन्यास और नाटक सभी शामिल हैं।\nप्रेमचन्द, निराला, महादेवी वर्मा और जयशंकर प्रसाद जैसे लेखकों ने हिन्दी साहित्य को नई ऊँचाइयों तक पहुँचाया। आज इंटरनेट पर भी हिन्दी में लिखी गई सामग्री तेज़ी से बढ़ रही है।\n";

/// Several scripts, with what [`Words::Folded`] adds work for: soft hyphens, ZWNJ, capitals
/// to fold (final sigma, dotted İ, ß), NFC text.
const MIXED: &str = "Die Donau\u{ad}dampf\u{ad}schiff\u{ad}fahrt fährt auf der Straße nach Wien, und das in\u{ad}ter\u{ad}na\u{ad}tio\u{ad}na\u{ad}le Publikum ÜBERALL.\nمن کتاب\u{200c}ها را می\u{200c}خواهم. کتاب\u{200c}ها خوب هستند و ما آنها را دوست داریم.\nΟ ΝΟΜΟΣ ΚΑΙ Ο ΚΟΣΜΟΣ: ο νόμος και ο κόσμος της Ελλάδας είναι παλιός.\nİSTANBUL İstanbul istanbul DİYARBAKIR Diyarbakır ve Ankara güzel şehirlerdir.\nМосква — столица России, а ПЕТЕРБУРГ стоит на Неве. Le café résumé à Paris.\n";

/// Each set of rules an index may have, by its schema's name: the oldest, `words_nfc`, and
/// the newest (`words_folded`).
const RULES: [(&str, Words); 3] = [
    ("old", Words::Alphanumeric),
    ("nfc", Words::Marks),
    ("folded", Words::Folded),
];

/// Bytes of each page.
const PAGE: usize = 16 << 10;

/// `text` repeated and cut to at most `PAGE` bytes, at a character boundary.
fn page(text: &str) -> String {
    let mut out = text.repeat(PAGE / text.len() + 1);
    let mut end = PAGE;
    while !out.is_char_boundary(end) {
        end -= 1;
    }
    out.truncate(end);
    out
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let pages = [
        ("english", page(DEFAULT_TEXT)),
        ("hindi", page(HINDI)),
        ("mixed", page(MIXED)),
    ];
    let mut group = c.benchmark_group("words");
    for ((name, text), (rules, words)) in pages.iter().flat_map(|p| RULES.map(move |r| (p, r))) {
        group.throughput(Throughput::Bytes(text.len() as u64));
        let mut analyzer = words.analyzer();
        group.bench_function(format!("tokenize/{name}/{rules}"), |b| {
            b.iter(|| {
                let mut n = 0usize;
                analyzer
                    .token_stream(black_box(text))
                    .process(&mut |t| n += t.text.len());
                n
            });
        });
        group.bench_function(format!("counts/{name}/{rules}"), |b| {
            b.iter(|| text_counts(black_box(text), words));
        });
    }
    group.finish();
    c.final_summary();
}
