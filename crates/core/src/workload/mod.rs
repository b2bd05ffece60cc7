//! Workload definitions that run unchanged on every substrate: the Chromium memory-capacity
//! pressure test (tabs), page contents with a modelled compressibility, and (later) app relaunch.

pub mod content;
pub mod microbench;
pub mod tabs;
