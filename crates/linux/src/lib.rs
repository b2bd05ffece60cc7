//! nvmswap-linux: the running kernel's own swap (zram, zswap, swap file, I/O schedulers) in a
//! memory cgroup, set up from a configuration and always restored afterwards.
