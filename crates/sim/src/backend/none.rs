//! Swap off: no swap area. Reclaim cannot store an anonymous page anywhere, so memory comes back
//! only from clean pages and from discarding tabs or killing apps (Chrome's and Android's low
//! memory killers), as on a device with swap disabled (seed 000's swap-off comparison; seed 001
//! Fig. 1's terminations without swap).

use nvmswap_core::config::SystemConfig;

use super::{BuildArgs, Env, Fault, Refused, Spent, SwapBackend, SwapIn};
use crate::metrics::BackendReport;
use crate::observe::Actor;
use crate::SimError;

pub struct SwapOff;

impl SwapOff {
    pub fn build(_: &SystemConfig, _: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        Ok(Box::new(SwapOff))
    }
}

impl SwapBackend for SwapOff {
    fn grow(&mut self, _pages: usize) {}

    fn swap_free_pages(&self) -> u64 {
        0
    }

    fn swap_used_pages(&self) -> u64 {
        0
    }

    fn store(&mut self, _: u32, _: u64, _: Actor, _: &mut Env) -> Result<Spent, Refused> {
        Err(Refused::no_slot())
    }

    fn fault(&mut self, _: u32, _: bool, _: u64, _: Actor, _: &mut Env) -> Fault {
        unreachable!("swap off holds no page, so no fault reaches it")
    }

    fn swap_in(&mut self, _: u32, _: bool, _: u64, _: Actor, _: &mut Env) -> SwapIn {
        unreachable!("swap off holds no page")
    }

    fn release(&mut self, _: u32, _: &mut Env) {
        unreachable!("swap off holds no page")
    }

    fn report(&self) -> BackendReport {
        BackendReport::default()
    }
}
