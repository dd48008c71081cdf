//! The `protokube` binary: parse, set up logging, run, map the outcome to an exit code.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;
use protokube::cli::Cli;
use protokube::error::ExitCode as Code;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() => {
            // clap exits 2 on usage errors; 2 means "changed" here, so usage errors are 64.
            eprintln!("{}", protokube::cli::usage_error_line(&err));
            return ExitCode::from(Code::Usage.code());
        }
        Err(err) => {
            // --help and --version.
            let _ = err.print();
            return ExitCode::from(Code::Done.code());
        }
    };
    protokube::logging::init(&cli.global);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("protokube: error: starting the async runtime: {err}");
            return ExitCode::from(Code::Failed.code());
        }
    };
    let code = match runtime.block_on(protokube::run(&cli)) {
        Ok(report) => match report.render(cli.global.output) {
            Ok(text) => {
                let mut stdout = std::io::stdout().lock();
                if let Err(err) = stdout
                    .write_all(text.as_bytes())
                    .and_then(|()| stdout.flush())
                {
                    eprintln!("protokube: error: writing the report to stdout: {err}");
                    Code::Failed
                } else {
                    protokube::exit_code(&cli, &report)
                }
            }
            Err(err) => {
                eprintln!(
                    "{}",
                    protokube::error_line(&err.context("rendering the report"))
                );
                Code::Failed
            }
        },
        Err(err) => {
            eprintln!("{}", protokube::error_line(&err));
            Code::for_error(&err)
        }
    };
    ExitCode::from(code.code())
}
