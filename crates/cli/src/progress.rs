//! Progress and diagnostics on stderr: the CLI's implementation of
//! `nvmswap_core::progress::Progress`, and the `tracing` subscriber that `-q`/`-v` filter.
//!
//! On a terminal a run shows a bar with its real length (tabs, then switches, for the pressure
//! test; page writes for `wear`) and an ETA from the measured rate. When stderr is not a
//! terminal (a log, CI) nothing is redrawn: each run prints one line when it ends. `-q` hides
//! both; `-v` adds debug diagnostics.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nvmswap_core::progress::Progress;

/// 0 = quiet (-q), 1 = normal, 2 = verbose (-v), 3 = trace (-vv).
static VERBOSITY: AtomicU8 = AtomicU8::new(1);

/// Sets the verbosity from `-q`/`-v` and installs the diagnostics subscriber (warnings always,
/// info unless quiet, debug with -v, trace with -vv).
pub fn init(quiet: bool, verbose: u8) {
    let level = if quiet { 0 } else { 1 + verbose.min(2) };
    VERBOSITY.store(level, Ordering::Relaxed);
    let max = match level {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(|| crate::output::Stderr)
        .with_max_level(max)
        .with_ansi(std::io::stderr().is_terminal())
        .event_format(Plain)
        .try_init();
}

/// Where bars draw: stderr, or nowhere with -q (indicatif itself draws nothing off a terminal).
pub fn draw_target() -> ProgressDrawTarget {
    if quiet() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    }
}

fn quiet() -> bool {
    VERBOSITY.load(Ordering::Relaxed) == 0
}

/// Diagnostics as people read them: info as a plain line, the others prefixed with their level
/// (`warning:`, `debug:`), no timestamps (the run's own figures carry time).
struct Plain;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Plain
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        match *event.metadata().level() {
            tracing::Level::ERROR => write!(w, "nvmswap: error: ")?,
            tracing::Level::WARN => write!(w, "nvmswap: warning: ")?,
            tracing::Level::INFO => {}
            tracing::Level::DEBUG => write!(w, "debug: ")?,
            tracing::Level::TRACE => write!(w, "trace: ")?,
        }
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// One run's bar. Until a stage says its length it is a spinner (never a bar that shows 100 %
/// and then jumps back to 0 %).
pub struct Bar {
    bar: ProgressBar,
    label: String,
    /// Redraw in place (stderr is a terminal and not -q); else one line at the end.
    live: bool,
    started: Instant,
}

const BAR_STYLE: &str =
    "{prefix:>16} {bar:30.cyan/blue} {pos:>5}/{len:<5} {msg} [{elapsed_precise}, eta {eta}]";
const SPINNER_STYLE: &str = "{prefix:>16} {spinner} {msg} [{elapsed_precise}]";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .expect("static template is valid")
        .progress_chars("=> ")
}

impl Bar {
    pub fn new(prefix: &str) -> Self {
        let live = !quiet() && std::io::stderr().is_terminal();
        let target = if live {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(style(SPINNER_STYLE));
        bar.set_prefix(prefix.to_string());
        if live {
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
        }
        Bar {
            bar,
            label: prefix.to_string(),
            live,
            started: Instant::now(),
        }
    }

    /// Ends the bar; off a terminal, prints the run's one line (unless -q).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if !self.live && !quiet() {
            let pos = self.bar.position();
            let msg = self.bar.message();
            let units = if msg.is_empty() {
                String::new()
            } else {
                format!(", {msg}")
            };
            tracing::info!(
                "{}: done in {:.1} s ({pos} steps{units})",
                self.label,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        if total == 0 {
            self.bar.set_style(style(SPINNER_STYLE));
            self.bar.unset_length();
        } else {
            self.bar.set_style(style(BAR_STYLE));
            self.bar.set_length(total);
        }
        // A fresh rate estimate: the ETA of a new stage is not the old stage's.
        self.bar.reset();
        self.bar.set_message(name.to_string());
        tracing::debug!("{}: stage {name} ({total} steps)", self.label);
    }

    fn set_total(&self, total: u64) {
        if total > 0 && self.bar.length() != Some(total) {
            if self.bar.length().is_none() {
                self.bar.set_style(style(BAR_STYLE));
            }
            self.bar.set_length(total);
        }
    }

    fn advance(&self, done: u64) {
        self.bar.set_position(done);
    }

    fn message(&self, msg: &str) {
        self.bar.set_message(msg.to_string());
    }
}
