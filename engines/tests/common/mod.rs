//! Helpers the engine tests share (each test file is its own crate and takes what it uses):
//! a device of the table, a release's profile, a model imported at a TP size as an engine
//! loads it with a run of the engine's defaults, a start-up's SGLang detail, a run with
//! SGLang's flags, and the tests' own replay of SGLang's token count.
#![allow(dead_code)]

use circuit_hf::{ImportOptions, KvCacheDtype, Parallel};
use circuit_ir::Circuit;
use engine_profile::detail::{SglangFlags, SglangStartup};
use engine_profile::{EngineDetail, EngineFlags, EngineProfile, LoadRules, RunSettings, Startup};

const GIB: f64 = (1u64 << 30) as f64;

/// SGLang's free memory before loading on an H100 (engines/sglang-0.5.23/engine.toml
/// `[startup.sglang.free_memory]`): the CUDA total (devices.toml) less the assumed CUDA
/// context.
pub const F_TP1: u64 = 85_032_697_856 - 547_608_330;
/// The same less the assumed communicators' bytes at world > 1.
pub const F_WORLD: u64 = F_TP1 - 1_095_216_660;

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

/// `config` (read as `origin`) split over `tp` ranks and held as an engine with `load` rules
/// holds it, with `kv` cache storage: the stage circuits, and a run of the engine's defaults
/// at that TP size on the device `dev`.
pub fn layout(
    load: LoadRules,
    config: &str,
    origin: &str,
    tp: u64,
    kv: KvCacheDtype,
    dev: &str,
) -> (Vec<Circuit>, RunSettings) {
    let mut options = ImportOptions::default();
    options.load = load;
    options.kv_cache_dtype = kv;
    options.parallel = Parallel {
        tp,
        pp: 1,
        dp: 1,
        expert_parallel: false,
    };
    let sharded = circuit_hf::import_parallel(config, origin, &options, &[]).unwrap();
    let model = sharded.imports[0].facts.clone();
    let circuits = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let run = RunSettings {
        tensor_parallel_size: tp,
        ..RunSettings::new(device(dev), model)
    };
    (circuits, run)
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
