//! The parser alone (issue 11): the tree parser it replaced (`parse::dom`, html5ever through
//! scraper) against the streaming one (`parse::parse_html`, `lol_html`), on (a) a typical page of
//! a generated web, (b) an 8 MB page like a highlighted source listing (100,000+ `<span>`s in
//! a `<pre>`, a line anchor per line, links), (c) a docs-like page with 300+ links; the
//! streaming one also without the page's text (`new_no_text`, a crawl without an index).
//! (b) comes twice: as it is, its `<meta charset>` in its first bytes, and without it
//! (`source_8mb_no_charset`), a page whose encoding is decided by no header, BOM or prescan, so
//! the whole page is scanned once more for a late `<meta>` before it is parsed.
//! Criterion prints each as time and MiB/s (`thrpt`).
//!
//! Then peak memory: this binary runs itself again once per parser (`--peak old|new`), builds
//! the 8 MB page, resets its high-water mark (`/proc/self/clear_refs`) and parses the page
//! once; each child prints `VmHWM` over the parse from /proc/self/status, so one parser's freed
//! memory cannot hide the other's. `cargo bench --bench parse` (release); the peak alone:
//! `cargo bench --bench parse -- --peaks-only`.

use std::fmt::Write as _;
use std::hint::black_box;
use std::process::Command;

use crawltop::parse::{Options, Text, dom, parse_html, parse_html_with};
use crawltop::testweb::{GenOptions, generate};
use criterion::{Criterion, Throughput};
use url::Url;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--peak") {
        peak(args.get(i + 1).map_or("", String::as_str));
        return;
    }
    if !args.iter().any(|a| a == "--peaks-only") {
        let mut c = Criterion::default().configure_from_args();
        bench(&mut c);
        c.final_summary();
    }
    for parser in ["old", "new"] {
        let exe = std::env::current_exe().expect("this bench's path");
        let out = Command::new(exe)
            .args(["--peak", parser])
            .output()
            .expect("run the peak phase");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn bench(c: &mut Criterion) {
    let pages = [
        ("typical", typical_page()),
        ("source_8mb", source_page(true)),
        ("source_8mb_no_charset", source_page(false)),
        ("docs_300_links", docs_page()),
    ];
    let url = Url::parse("http://127.0.0.1:8000/dir/page.html").expect("url");
    let mut group = c.benchmark_group("parse");
    for (name, body) in &pages {
        group.throughput(Throughput::Bytes(body.len() as u64));
        if body.len() > 1 << 20 {
            group.sample_size(10);
        } else {
            group.sample_size(50);
        }
        group.bench_function(format!("{name}/old"), |b| {
            b.iter(|| black_box(dom::parse_html(black_box(body), Some("text/html"), &url)));
        });
        group.bench_function(format!("{name}/new"), |b| {
            b.iter(|| black_box(parse_html(black_box(body), Some("text/html"), &url)));
        });
        // What a crawl without an index asks for: everything but the page's text.
        group.bench_function(format!("{name}/new_no_text"), |b| {
            b.iter(|| {
                black_box(parse_html_with(
                    black_box(body),
                    Some("text/html"),
                    &url,
                    Options {
                        text: Text::Skip,
                        ..Options::default()
                    },
                ))
            });
        });
    }
    group.finish();
}

/// The median-sized HTML page of a generated web (defaults of `gen-site`: 4 sites of 50).
fn typical_page() -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let web = dir.path().join("web");
    generate(&web, &GenOptions::new(4, 50), false).expect("generate");
    let mut pages: Vec<Vec<u8>> = Vec::new();
    let mut stack = vec![web];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                pages.push(std::fs::read(&path).expect("read page"));
            }
        }
    }
    pages.sort_by_key(Vec::len);
    pages.swap_remove(pages.len() / 2)
}

/// About 8 MB of highlighted source: a `<pre>` of lines, each with its anchor, a few
/// `<span class>` tokens and, every tenth line, a link to another file; with `charset`, a
/// `<meta charset=utf-8>` in its head, as rustdoc writes.
fn source_page(charset: bool) -> Vec<u8> {
    const KINDS: [&str; 6] = ["kw", "ident", "string", "comment", "number", "punct"];
    const WORDS: [&str; 8] = [
        "fn",
        "parse_html",
        "\"text/html\"",
        "// a comment &amp; more",
        "42",
        "&lt;&gt;",
        "let",
        "self",
    ];
    let mut html = String::from(if charset {
        "<!DOCTYPE html><html><head><meta charset=utf-8>"
    } else {
        "<!DOCTYPE html><html><head>"
    });
    html.push_str(
        "<title>src/lib.rs - source</title>\
         <link rel=stylesheet href=/static/rustdoc.css></head><body class=src><nav>\
         <a href=/index.html>crate</a></nav><main><pre class=rust><code>",
    );
    let mut line = 0_usize;
    let mut state = 7_u64;
    while html.len() < 8_000_000 {
        line += 1;
        write!(html, "<a href=\"#{line}\" id=\"{line}\">{line}</a>").expect("write");
        for _ in 0..6 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let k = KINDS[(state >> 33) as usize % KINDS.len()];
            let w = WORDS[(state >> 40) as usize % WORDS.len()];
            write!(html, "<span class=\"{k}\">{w}</span> ").expect("write");
        }
        if line.is_multiple_of(10) {
            write!(
                html,
                "<a href=\"../other/mod{}.rs.html#{line}\">use</a>",
                line % 97
            )
            .expect("write");
        }
        html.push('\n');
    }
    html.push_str("</code></pre></main></body></html>");
    html.into_bytes()
}

/// A documentation page: a sidebar of 320 links, sections with code and cross-links, a
/// next/prev chain.
fn docs_page() -> Vec<u8> {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><meta charset=utf-8><title>Module std::collections</title>\
         <link rel=next href=hash_map.html><link rel=prev href=../cell.html></head><body>\
         <nav class=sidebar><ul>",
    );
    for i in 0..320 {
        write!(
            html,
            "<li><a href=\"item{i}.html\" title=\"item {i}\">Item{i}</a></li>"
        )
        .expect("write");
    }
    html.push_str("</ul></nav><main>");
    for s in 0..60 {
        write!(
            html,
            "<section id=s{s}><h2>Section {s}</h2><p>The <code>Vec&lt;T&gt;</code> type is a \
             <a href=\"../vec/struct.Vec.html#method.push{s}\">growable</a> array; see \
             <em>also</em> <a href=\"#s{}\">section</a>.</p><pre><code>let mut v = Vec::new();\n\
             v.push({s});\n</code></pre><table><tr><th>op<th>cost<tr><td>push<td>O(1)</table>\
             </section>",
            (s + 1) % 60
        )
        .expect("write");
    }
    html.push_str("</main></body></html>");
    html.into_bytes()
}

fn peak(parser: &str) {
    let body = source_page(true);
    let url = Url::parse("http://127.0.0.1:8000/src/lib.rs.html").expect("url");
    // Forget the peak of building the page: from here VmHWM is the parse's.
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the high-water mark");
    let before = status_kib("VmRSS:");
    let page = match parser {
        "old" => dom::parse_html(&body, Some("text/html"), &url),
        "new" => parse_html(&body, Some("text/html"), &url),
        other => panic!("--peak old|new, not {other:?}"),
    };
    let hwm = status_kib("VmHWM:");
    println!(
        "peak {parser}: {:.1} MB page, {} links, {} bytes of text: VmHWM {:.1} MiB ({:.1} MiB over the {:.1} MiB before the parse)",
        body.len() as f64 / 1e6,
        page.links.len(),
        page.text.len(),
        hwm as f64 / 1024.0,
        (hwm - before) as f64 / 1024.0,
        before as f64 / 1024.0,
    );
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a kB field")
}
