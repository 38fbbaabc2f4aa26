//! The `crawltop` binary: parse the arguments, run the verb, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = crawltop::cli::Cli::parse();
    match crawltop::cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            crawltop::say!("crawltop: error: {}", crawltop::cli::error_message(&err));
            ExitCode::from(2)
        }
    }
}
