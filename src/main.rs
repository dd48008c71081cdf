//! The `protokube` binary: parse, set up logging, start the runtime, then a command that ends
//! (one run) or what does not end (the old daemon's loop, the gossip member); print the report
//! (failed runs too) and map the outcome to an exit code.

use std::io::Write as _;
use std::process::ExitCode;

use protokube::{Cli, ExitCode as Code, OutputFormat, Report};

fn main() -> ExitCode {
    protokube::set_stderr_is_journal(protokube::stderr_is_journal());
    let cli = match Cli::parse_args() {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() => {
            // clap exits 2 on usage errors; 2 means "changed" here, so usage errors are 64.
            let line = protokube::usage_error_line(&err);
            protokube::print_error_line(&line);
            let (output, command) = protokube::scan_args(std::env::args_os().skip(1));
            if output != OutputFormat::Text {
                let mut report = Report::new(&command, false);
                report.error = Some(protokube::ReportError {
                    message: line.trim_start_matches("protokube: error: ").to_owned(),
                    exit_code: Code::Usage.code(),
                });
                print_report(&report, output);
            }
            return ExitCode::from(Code::Usage.code());
        }
        Err(err) => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::from(Code::Done.code());
        }
    };
    if cli.is_legacy() && std::env::args_os().len() <= 1 {
        // Bare `protokube` is someone at a shell, not nodeup's unit (which always passes flags).
        protokube::print_error_line(
            "protokube: error: a subcommand is required (`protokube sync`, …); see `protokube --help`",
        );
        return ExitCode::from(Code::Usage.code());
    }
    if cli.is_version() {
        return print_version(cli.output());
    }
    protokube::init_logging(cli.quiet(), cli.verbosity(), cli.log_format());
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            protokube::print_error_line(&format!(
                "protokube: error: starting the async runtime: {err}"
            ));
            return ExitCode::from(Code::Failed.code());
        }
    };
    if cli.is_legacy() {
        // nodeup's unit: sync every minute until stopped; each run's report and error as usual.
        let output = cli.output();
        let daemon = protokube::serve_legacy(&cli, protokube::DAEMON_INTERVAL, |report, _| {
            print_report(report, output);
        });
        return match runtime.block_on(daemon) {
            Ok(()) => ExitCode::from(Code::Done.code()),
            Err(err) => {
                protokube::print_error_line(&protokube::error_line(&err));
                ExitCode::from(Code::for_error(&err).code())
            }
        };
    }
    let mut report = Report::new(cli.to_run().name(), cli.dry_run());
    let started = std::time::SystemTime::now();
    let clock = std::time::Instant::now();
    // `gossip` does not end (or, `--once`, leaves when done): the serve wing runs it.
    let result = if matches!(cli.to_run(), protokube::Command::Gossip(_)) {
        runtime.block_on(protokube::serve_gossip(&cli, &mut report))
    } else {
        runtime.block_on(protokube::run_once(&cli, &mut report))
    };
    if let Err(err) = &result {
        protokube::record_error(&mut report, err);
    }
    let code = protokube::conclude(&cli, &report, &result, started, clock.elapsed());
    if !print_report(&report, cli.output()) && result.is_ok() {
        return ExitCode::from(Code::Failed.code());
    }
    ExitCode::from(code.code())
}

/// `protokube version`: the build, as text or one JSON (or YAML) object.
fn print_version(output: OutputFormat) -> ExitCode {
    let info = protokube::BuildInfo::current();
    let text = match output {
        OutputFormat::Text => Ok(info.text()),
        OutputFormat::Json => serde_json::to_string_pretty(&info)
            .map(|t| t + "\n")
            .map_err(|e| e.to_string()),
        OutputFormat::Yaml => yaml_serde::to_string(&info).map_err(|e| e.to_string()),
    };
    match text {
        Ok(text) => {
            print!("{text}");
            ExitCode::from(Code::Done.code())
        }
        Err(err) => {
            protokube::print_error_line(&format!("protokube: error: rendering the version: {err}"));
            ExitCode::from(Code::Failed.code())
        }
    }
}

/// Prints the report on stdout; false (with a line on stderr) when that fails.
fn print_report(report: &Report, output: OutputFormat) -> bool {
    let text = match report.render(output) {
        Ok(text) => text,
        Err(err) => {
            protokube::print_error_line(&protokube::error_line(
                &err.context("rendering the report"),
            ));
            return false;
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        protokube::print_error_line(&format!(
            "protokube: error: writing the report to stdout: {err}"
        ));
        return false;
    }
    true
}
