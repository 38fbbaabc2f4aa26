//! The architecture page (`docs/ARCHITECTURE.md`) checked against the code, for the parts a
//! machine can check: every module is on the map, every test it names exists, the engine never
//! knows a terminal exists, the engine's rooms import each other in one direction only, and no
//! code points at a document the repository does not hold.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn architecture() -> String {
    read(&root().join("docs/ARCHITECTURE.md"))
}

#[test]
fn the_module_map_names_every_module_of_the_library() {
    let doc = architecture();
    let lib = read(&root().join("src/lib.rs"));
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert!(
        modules.len() > 10,
        "src/lib.rs lists its modules: {modules:?}"
    );
    let missing: Vec<&&str> = modules
        .iter()
        .filter(|m| !doc.contains(&format!("| `{m}` |")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's module map lacks {missing:?}"
    );
}

#[test]
fn every_test_the_architecture_page_names_exists() {
    let doc = architecture();
    let invariants = doc
        .split("\n## ")
        .find(|section| section.starts_with("Invariants"))
        .expect("docs/ARCHITECTURE.md has a section on the invariants");
    let mut code = String::new();
    for dir in ["src", "tests"] {
        for f in rust_files(&root().join(dir)) {
            code.push_str(&read(&f));
        }
    }
    // Test names are written in backticks and contain an underscore; file names in the same
    // table do not.
    let named: BTreeSet<&str> = invariants
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            w.contains('_')
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .collect();
    assert!(named.len() > 15, "the page names its tests: {named:?}");
    let missing: Vec<&&str> = named
        .iter()
        .filter(|name| !code.contains(&format!("fn {name}(")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names tests that do not exist: {missing:?}"
    );
}

#[test]
fn only_the_dashboard_knows_a_terminal_exists() {
    let src = root().join("src");
    let offenders: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| !f.starts_with(src.join("dashboard")))
        .filter(|f| {
            let text = read(f);
            text.contains("ratatui") || text.contains("crossterm")
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "terminal crates used outside src/dashboard: {offenders:?}"
    );
}

#[test]
fn no_code_points_at_a_document_the_repository_does_not_hold() {
    let mut offenders = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for f in rust_files(&root().join(dir)) {
            // Spelled in two halves so that this file does not name it.
            if read(&f).contains(concat!("DESIGN", ".md")) {
                offenders.push(f.display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "code points at a design document the repository does not hold (docs/ARCHITECTURE.md is the one it holds): {offenders:?}"
    );
}

/// The sibling rooms of `src/engine/` that a file refers to (`super::NAME`,
/// `crate::engine::NAME`), by room name.
fn engine_rooms_used(text: &str, rooms: &BTreeSet<String>, depth: usize) -> BTreeSet<String> {
    let mut prefixes = vec!["crate::engine::".to_string()];
    prefixes.push(if depth == 0 {
        "super::".to_string()
    } else {
        "super::super::".to_string()
    });
    let mut used = BTreeSet::new();
    for prefix in &prefixes {
        for (i, _) in text.match_indices(prefix.as_str()) {
            let rest = &text[i + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if rooms.contains(&name) {
                used.insert(name);
            }
            // `use super::{a, b::C}`: every name in the braces that is a room.
            if rest.starts_with('{')
                && let Some(end) = rest.find('}')
            {
                for part in rest[1..end].split(',') {
                    let head = part.trim().split("::").next().unwrap_or("").trim();
                    if rooms.contains(head) {
                        used.insert(head.to_string());
                    }
                }
            }
        }
    }
    used
}

#[test]
fn the_engines_rooms_import_each_other_in_one_direction() {
    let engine = root().join("src/engine");
    // A room is a direct child of src/engine: a file `NAME.rs` or a folder `NAME/`.
    let mut rooms = BTreeSet::new();
    for entry in std::fs::read_dir(&engine).expect("src/engine") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("a name")
            .to_string();
        if name != "mod" {
            rooms.insert(name);
        }
    }
    assert!(
        rooms.contains("model"),
        "src/engine/model.rs holds the object model"
    );
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in rust_files(&engine) {
        let rel = f.strip_prefix(&engine).expect("below engine");
        let mut parts = rel.components();
        let first = parts
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a component");
        if first == "mod.rs" {
            continue;
        }
        let room = first.trim_end_matches(".rs").to_string();
        // Files inside a room's folder reach siblings through `super::super::`, except the
        // folder's own mod.rs, which is one level up.
        let depth = usize::from(rel.components().count() > 1 && !rel.ends_with("mod.rs"));
        let used = engine_rooms_used(&read(&f), &rooms, depth);
        uses.entry(room.clone())
            .or_default()
            .extend(used.into_iter().filter(|u| *u != room));
    }
    assert!(
        uses.get("model").is_none_or(BTreeSet::is_empty),
        "the object model imports no other room of the engine: {:?}",
        uses.get("model")
    );
    // No cycle: repeatedly remove rooms that use nothing left.
    let mut left = uses.clone();
    loop {
        let leaves: Vec<String> = left
            .iter()
            .filter(|(_, used)| used.iter().all(|u| !left.contains_key(u)))
            .map(|(room, _)| room.clone())
            .collect();
        if leaves.is_empty() {
            break;
        }
        for l in leaves {
            left.remove(&l);
        }
    }
    assert!(
        left.is_empty(),
        "rooms of src/engine import each other in a circle: {left:?} (all uses: {uses:?})"
    );
}
