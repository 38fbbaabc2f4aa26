//! The `crawltop` binary: set the allocator, parse the arguments, run the verb, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before any thread: the arena bound applies to arenas made later.
    crawltop::allocator::tune();
    let args = crawltop::cli::Cli::parse();
    match crawltop::cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("crawltop: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
