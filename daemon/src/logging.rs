//! Logs: to stderr, filtered by `log_level` (or else `RUST_LOG`, or else `info`), as text or
//! one JSON object per line. Two layers, each behind a filter a reload can change: the one of
//! the format in use has the level, the other is off.

use crate::config::{LogFormat, parse_log_level};
use std::sync::OnceLock;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, fmt, reload};

/// The filters of the two log layers, text and JSON: the one in use has the log level, the
/// other is off. A reload sets them anew.
struct LogHandles {
    text: SetFilter,
    json: SetFilter,
}

type SetFilter = Box<dyn Fn(EnvFilter) -> Result<(), reload::Error> + Send + Sync>;

static LOG: OnceLock<LogHandles> = OnceLock::new();

fn filters(level: &str, format: LogFormat) -> (EnvFilter, EnvFilter) {
    let level = parse_log_level(level).unwrap_or_else(|_| EnvFilter::new("info"));
    match format {
        LogFormat::Text => (level, EnvFilter::new("off")),
        LogFormat::Json => (EnvFilter::new("off"), level),
    }
}

/// Install the log subscriber, logging at `level` in `format` on stderr. A second call (in
/// tests) is ignored.
pub fn init_logging(level: &str, format: LogFormat) {
    let (text, json) = filters(level, format);
    let (text, text_handle) = reload::Layer::new(text);
    let (json, json_handle) = reload::Layer::new(json);
    let installed = tracing_subscriber::registry()
        .with(
            fmt::layer()
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_writer(std::io::stderr)
                .with_filter(text),
        )
        .with(
            fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .with_filter(json),
        )
        .try_init();
    if installed.is_ok() {
        let _ = LOG.set(LogHandles {
            text: Box::new(move |f| text_handle.reload(f)),
            json: Box::new(move |f| json_handle.reload(f)),
        });
    }
}

/// Log at `level` in `format` from now on (a reload). Without [`init_logging`] (in tests), does
/// nothing.
pub fn set_logging(level: &str, format: LogFormat) -> Result<(), String> {
    let Some(handles) = LOG.get() else {
        return Ok(());
    };
    let (text, json) = filters(level, format);
    (handles.text)(text).map_err(|e| e.to_string())?;
    (handles.json)(json).map_err(|e| e.to_string())
}
