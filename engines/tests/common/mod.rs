//! Helpers the SGLang tests share (each test file is its own crate and takes what it uses):
//! a device of the table, a release's profile, a start-up's SGLang detail, a run with
//! SGLang's flags, and the tests' own replay of SGLang's token count.
#![allow(dead_code)]

use engine_profile::detail::{SglangFlags, SglangStartup};
use engine_profile::{EngineDetail, EngineFlags, EngineProfile, RunSettings, Startup};

const GIB: f64 = (1u64 << 30) as f64;

/// `name` from the device table.
pub fn device(name: &str) -> kernel_families::Device {
    kernel_families::Devices::builtin()
        .unwrap()
        .get(name)
        .unwrap()
        .clone()
}

/// The profile `spec` selects (`sglang==0.5.8`).
pub fn release(spec: &str) -> EngineProfile {
    engines::select(spec).unwrap()
}

/// The SGLang detail of a start-up.
pub fn detail(s: &Startup) -> &SglangStartup {
    match &s.detail {
        Some(EngineDetail::Sglang(d)) => d,
        None => panic!("an SGLang start-up without its detail"),
    }
}

/// `run` with SGLang's `flags`.
pub fn with_flags(mut run: RunSettings, flags: SglangFlags) -> RunSettings {
    run.engine_flags = Some(EngineFlags::Sglang(flags));
    run
}

/// SGLang's KV tokens replayed apart from the engine profile: `free` bytes before loading,
/// `loaded` taken by the load, the rest `A - F x (1 - mfs)` over `cell` bytes a token, the
/// free-memory figures read through float32 in a world larger than one
/// (utils/common.py get_available_gpu_memory's all-reduce).
pub fn tokens(free: u64, loaded: u64, mfs: f64, cell: u64, world_gt_1: bool) -> u64 {
    let read = |b: u64| {
        if world_gt_1 {
            f64::from(b as f32) / GIB
        } else {
            b as f64 / GIB
        }
    };
    let rest = read(free - loaded) - read(free) * (1.0 - mfs);
    (rest * GIB) as u64 / cell
}
