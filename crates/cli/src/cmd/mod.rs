//! One module per subcommand: its flags (`Args`) and its `run`.

pub mod iosched;
pub mod pressure;
pub mod wear;
