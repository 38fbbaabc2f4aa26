//! The temporary files the crawl's exports are written through (`export.rs`): named for
//! the file they become, so that one a kill left is known for what it was, and removed by the
//! next crawl that writes the same file (audit 32 L2: a `.crawltop-xDEUJ4` of `--urls-out` lines
//! stayed beside it for good).
//!
//! `DIR/stats.json` is written as `DIR/.stats.json.crawltop-XXXXXX` (six random letters and
//! digits, tempfile's), then renamed into place. A crawl starting with the same output path
//! removes every file of exactly that form beside it, and nothing else: not another output's,
//! not the mirror's `.crawltop-*` files, not a file a user named alike with another ending. A
//! second crawl writing the same path at the same moment could lose its temporary file to this:
//! two crawls given one `--stats-out` would overwrite each other's file anyway.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

/// How many random characters tempfile puts after the prefix (its default).
const RANDOM: usize = 6;

/// The temporary file's name before its random characters: `.NAME.crawltop-`.
pub fn prefix(path: &Path) -> OsString {
    let mut prefix = OsString::from(".");
    prefix.push(path.file_name().unwrap_or(OsStr::new("")));
    prefix.push(".crawltop-");
    prefix
}

/// Removes the temporary files of `path` (in `dir`, the folder it goes in) that an earlier
/// run left: a run killed between writing one and renaming it. A file that cannot be removed
/// stays, as it did before; the export itself says if the folder cannot be written.
pub fn remove(dir: &Path, path: &Path) {
    let prefix = prefix(path);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if is_left_by(&prefix, &name) && entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

fn is_left_by(prefix: &OsStr, name: &OsStr) -> bool {
    name.as_bytes()
        .strip_prefix(prefix.as_bytes())
        .is_some_and(|rest| rest.len() == RANDOM && rest.iter().all(u8::is_ascii_alphanumeric))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_temporary_file_of_the_same_output_is_taken_for_a_leftover() {
        let prefix = prefix(Path::new("out/stats.json"));
        assert_eq!(prefix, ".stats.json.crawltop-");
        let left = |name: &str| is_left_by(&prefix, OsStr::new(name));
        assert!(left(".stats.json.crawltop-xDEUJ4"));
        for other in [
            ".crawltop-xDEUJ4",
            ".urls.jsonl.crawltop-xDEUJ4",
            ".stats.json.crawltop-xDEUJ",
            ".stats.json.crawltop-xDEUJ45",
            ".stats.json.crawltop-xDE.J4",
            "stats.json",
            ".crawltop-sites",
        ] {
            assert!(!left(other), "{other}");
        }
    }

    #[test]
    fn a_leftover_beside_the_output_is_removed_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("stats.json");
        let keep = [
            ".urls.jsonl.crawltop-abc123",
            ".crawltop-abc123",
            "stats.json",
        ];
        for name in keep.iter().chain(&[".stats.json.crawltop-abc123"]) {
            std::fs::write(dir.path().join(name), b"x").expect("write");
        }
        std::fs::create_dir(dir.path().join(".stats.json.crawltop-dir123")).expect("mkdir");
        remove(dir.path(), &path);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("read")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".crawltop-abc123",
                ".stats.json.crawltop-dir123",
                ".urls.jsonl.crawltop-abc123",
                "stats.json"
            ]
        );
    }
}
