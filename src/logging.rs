//! Logging: `tracing` to stderr, level from `-v`/`-q`, `RUST_LOG` for finer control. Text lines
//! (timestamped when stderr is neither a terminal nor the journal; to the journal each line
//! starts with its syslog priority, `<3>` error … `<7>` debug, which journald reads as the
//! line's priority), or with `--log-format json` one JSON object per line: `ts` (RFC 3339),
//! `level`, `msg`, `target` and the event's fields.

use std::fmt;
use std::io::IsTerminal as _;
use std::time::SystemTime;

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

/// `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// Installs the stderr logger. Default: protokube's own lines from info up; `quiet` only its
/// errors, each `verbose` step more. The libraries' own lines (kube-rs logs every answer that
/// is not a success at error level) only with `-vv`: what they say reaches the operator as
/// protokube's own warning or error, naming the cause once, and a healthy node stays quiet.
pub fn init(quiet: bool, verbose: u8, format: LogFormat) {
    let level = match (quiet, verbose) {
        (true, _) => "off,protokube=error",
        (false, 0) => "off,protokube=info",
        (false, 1) => "off,protokube=debug",
        (false, _) => "debug,protokube=trace",
    };
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let terminal = std::io::stderr().is_terminal();
    let _ = match format {
        LogFormat::Json => builder.event_format(JsonLines).try_init(),
        LogFormat::Text if stderr_is_journal() => builder.event_format(JournalLines).try_init(),
        LogFormat::Text if terminal => builder
            .with_target(false)
            .without_time()
            .with_ansi(true)
            .try_init(),
        LogFormat::Text => builder.with_target(false).with_ansi(false).try_init(),
    };
}

/// Whether stderr is systemd's journal stream, as the binary found it at its start.
static STDERR_IS_JOURNAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Records whether stderr is systemd's journal stream (the node says: `JOURNAL_STREAM` names
/// its device and inode); the first answer stands.
pub fn set_stderr_is_journal(journal: bool) {
    let _ = STDERR_IS_JOURNAL.set(journal);
}

/// Whether stderr is systemd's journal stream (not known: not).
fn stderr_is_journal() -> bool {
    STDERR_IS_JOURNAL.get().copied().unwrap_or(false)
}

/// Prints a `protokube: error: …` line on stderr; to the journal with the error priority
/// (`<3>`), so `journalctl -p err` finds it.
pub fn print_error_line(line: &str) {
    if stderr_is_journal() {
        eprintln!("<3>{line}");
    } else {
        eprintln!("{line}");
    }
}

/// The syslog priority journald reads from a line's `<N>` prefix.
pub(crate) fn syslog_priority(level: tracing::Level) -> u8 {
    match level {
        tracing::Level::ERROR => 3,
        tracing::Level::WARN => 4,
        tracing::Level::INFO => 6,
        tracing::Level::DEBUG | tracing::Level::TRACE => 7,
    }
}

/// Lines for the journal: `<priority>LEVEL message fields`, no timestamp (journald stamps).
struct JournalLines;

impl<S, N> FormatEvent<S, N> for JournalLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let level = *event.metadata().level();
        write!(writer, "<{}>{level:>5} ", syslog_priority(level))?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The JSON line format.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = JsonFields::default();
        event.record(&mut fields);
        let metadata = event.metadata();
        let mut line = serde_json::Map::new();
        let ts = humantime::format_rfc3339_micros(SystemTime::now()).to_string();
        line.insert("ts".into(), ts.into());
        line.insert(
            "level".into(),
            metadata.level().as_str().to_lowercase().into(),
        );
        line.insert("msg".into(), fields.message.into());
        line.insert("target".into(), metadata.target().into());
        for (key, value) in fields.fields {
            // An event field never hides one of the line's own keys.
            let key = match key.as_str() {
                "ts" | "level" | "msg" | "target" => format!("field.{key}"),
                _ => key,
            };
            line.insert(key, value);
        }
        writeln!(writer, "{}", serde_json::Value::Object(line))
    }
}

/// An event's message and fields as JSON values.
#[derive(Default)]
struct JsonFields {
    message: String,
    fields: Vec<(String, serde_json::Value)>,
}

impl JsonFields {
    fn add(&mut self, field: &Field, value: serde_json::Value) {
        self.fields.push((field.name().to_owned(), value));
    }
}

impl Visit for JsonFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            _ => self.add(field, value.into()),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.add(field, value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.add(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.add(field, value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.add(field, value.into());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            _ => self.add(field, format!("{value:?}").into()),
        }
    }
}
