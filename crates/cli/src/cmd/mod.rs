//! One module per subcommand: its flags (`Args`) and its `run`.

pub mod devices;
pub mod iosched;
pub mod linux;
pub mod microbench;
pub mod pheap;
pub mod pheap_dual;
pub mod pressure;
pub mod relaunch;
pub mod sweep;
pub mod validate;
pub mod wear;
pub mod workload;
