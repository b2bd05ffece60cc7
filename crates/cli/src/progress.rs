//! Progress bars on stderr: the CLI's implementation of `nvmswap_core::progress::Progress`.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use nvmswap_core::progress::Progress;

/// One bar; `stage` resets it. Hidden when stderr is not a terminal, so logs and CI stay clean.
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new(prefix: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} {bar:30.cyan/blue} {percent:>3}% {msg} [{elapsed_precise}, eta {eta}]",
            )
            .expect("static template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        Bar { bar }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.bar.set_message(name.to_string());
    }

    fn advance(&self, done: u64) {
        self.bar.set_position(done);
    }

    fn message(&self, msg: &str) {
        self.bar.set_message(msg.to_string());
    }
}
