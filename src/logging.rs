//! Logging: `tracing` to stderr, level from `-v`/`-q`, `RUST_LOG` for finer control.

use tracing_subscriber::EnvFilter;

/// Installs the stderr logger. Default: protokube's info lines and every crate's warnings;
/// `quiet` only errors, each `verbose` step more.
pub fn init(quiet: bool, verbose: u8) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn,protokube=info",
        (false, 1) => "warn,protokube=debug",
        (false, _) => "info,protokube=trace",
    };
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
