//! One module per subcommand: its flags (`Args`) and its `run`.

pub mod devices;
pub mod pressure;
pub mod wear;
