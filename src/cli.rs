//! The command line: clap arguments, validated into the library's options, one function a verb.
//!
//! It owns argument parsing, the runtime, signals and what is printed for a person or a script.
//! It never holds crawl logic: every verb calls the library.

use std::io::Write as _;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::testweb::{self, GenOptions, ServeOptions, Server};

#[derive(Debug, Parser)]
#[command(
    name = "crawltop",
    version,
    about = "A polite, fast web crawler with a live terminal dashboard"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a synthetic web: W sites of P pages with links inside and across sites, robots.txt
    /// files, and optionally a hostile site. A manifest.json beside them holds the right answers.
    GenSite(GenSiteArgs),
    /// Serve a generated web on loopback, one port per site, logging every request.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct GenSiteArgs {
    /// Folder to write the web into (created; must be empty unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Number of sites.
    #[arg(long, default_value_t = 4)]
    pub sites: usize,
    /// Pages per site (the index page included).
    #[arg(long, default_value_t = 50)]
    pub pages: usize,
    /// Seed: the same seed and sizes give the same web, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A UTF-8 text file to take page text from, instead of the embedded book.
    #[arg(long)]
    pub text: Option<PathBuf>,
    /// Add the hostile site (misbehaving paths) and a site whose robots.txt answers 500.
    #[arg(long)]
    pub hostile: bool,
    /// The Crawl-delay, in seconds, of the site that has one (site01).
    #[arg(long, default_value_t = 1.0)]
    pub crawl_delay: f64,
    /// Replace a web generated in --out before (never a folder without manifest.json).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The folder gen-site wrote.
    pub dir: PathBuf,
    /// Let the OS choose each site's port (the default; only 0 is accepted).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=0), conflicts_with = "base_port")]
    pub port: Option<u16>,
    /// Give the sites consecutive ports from N, in name order.
    #[arg(long)]
    pub base_port: Option<u16>,
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The command port (STATS, SHUTDOWN), on the same address; 0 lets the OS choose.
    #[arg(long, default_value_t = 0)]
    pub command_port: u16,
    /// Write every request as a JSON line to FILE.
    #[arg(long)]
    pub log: Option<PathBuf>,
}

/// Runs one verb.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::GenSite(args) => gen_site(&args),
        Command::Serve(args) => serve(args),
    }
}

fn gen_site(args: &GenSiteArgs) -> anyhow::Result<ExitCode> {
    let mut opts = GenOptions::new(args.sites, args.pages)
        .seed(args.seed)
        .hostile(args.hostile)
        .crawl_delay_s(args.crawl_delay);
    if let Some(path) = &args.text {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the text file {}", path.display()))?;
        opts = opts.text(text);
    }
    let manifest = testweb::generate(&args.out, &opts, args.force)?;
    let pages: usize = manifest.sites.iter().map(|s| s.pages.len()).sum();
    println!(
        "wrote {} sites to {} ({pages} reachable URLs); the right answers are in {}",
        manifest.sites.len(),
        args.out.display(),
        args.out.join(testweb::manifest::MANIFEST_FILE).display()
    );
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut opts = ServeOptions::new(&args.dir);
    opts.bind = args.bind;
    opts.base_port = args.base_port;
    opts.command_port = Some(args.command_port);
    opts.log_file = args.log;
    // A long-running server keeps counters, not every record.
    opts.keep_records = false;
    runtime()?.block_on(async move {
        let server = Server::start(opts).await?;
        let line = serde_json::to_string(server.listening())?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}")?;
        stdout.flush()?;
        drop(stdout);
        eprintln!(
            "serving {} sites from {}; stop with Ctrl-C, SIGTERM or SHUTDOWN on {}",
            server.sites().len(),
            args.dir.display(),
            server
                .command_addr()
                .map_or_else(|| "-".into(), |a| a.to_string())
        );
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot listen for SIGTERM")?;
        tokio::select! {
            () = server.shutdown_requested() => {}
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        server.shutdown();
        tokio::select! {
            () = server.finished() => {}
            _ = tokio::signal::ctrl_c() => {
                eprintln!("second interrupt: exiting without waiting");
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        let stats = server.stats();
        eprintln!(
            "served {} requests, {} bytes in {:.1} s",
            stats.requests, stats.bytes, stats.uptime_s
        );
        Ok(ExitCode::SUCCESS)
    })
}
