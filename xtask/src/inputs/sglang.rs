//! SGLang's own flags (`python -m sglang.launch_server`), taken by `cargo xtask plan
//! --engine sglang`, and the run they give.
//!
//! Invariants: each flag changes the prediction or is refused with one line; they are refused
//! without an SGLang engine, and vLLM's engine flags are refused with SGLang alone where SGLang
//! has its own (docs/engines.md, "SGLang"); nothing here predicts or prints.

use engine_profile::EngineFlags;
use engine_profile::detail::SglangFlags;

use crate::CliError;
use crate::inputs::flags::PlanArgs;

/// SGLang's flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SglangArgs {
    /// With --engine sglang: tensor-parallel size (SGLang's --tp-size; --tp and
    /// --tensor-parallel-size are the same flag).
    ///
    /// Example: --tp-size 4
    #[arg(long, value_name = "N", conflicts_with = "tensor_parallel_size")]
    pub tp_size: Option<u64>,

    /// With --engine sglang: pipeline-parallel size (SGLang's --pp-size).
    ///
    /// Example: --pp-size 2
    #[arg(long, value_name = "N", conflicts_with = "pipeline_parallel_size")]
    pub pp_size: Option<u64>,

    /// With --engine sglang: data-parallel replicas (SGLang's --dp-size). Each replica is a
    /// TP x PP group of GPUs of its own that starts as one alone does; the output says the
    /// replicas, the GPUs and the totals over the replicas.
    ///
    /// Example: --dp-size 2
    #[arg(long, value_name = "N")]
    pub dp_size: Option<u64>,

    /// With --engine sglang: expert-parallel size (SGLang's --ep-size, from 0.5.1): each of
    /// the N ranks of a group inside the TP group holds experts / N routed experts, each split
    /// over tp / N ranks; shared experts stay split over tp.
    ///
    /// Example: --ep-size 8
    #[arg(long, value_name = "N")]
    pub ep_size: Option<u64>,

    /// With --engine sglang: expert parallelism over the whole TP group (SGLang 0.5.1-0.5.2's
    /// --enable-ep-moe, which sets --ep-size to --tp-size; later releases refuse it).
    ///
    /// Example: --enable-ep-moe
    #[arg(long)]
    pub enable_ep_moe: bool,

    /// With --engine sglang: fraction of the free memory before loading that the weights and
    /// the KV pool take [default: SGLang's, from nvidia-smi's memory, chunked prefill, CUDA
    /// graphs and TP x PP].
    ///
    /// Example: --mem-fraction-static 0.85
    #[arg(long, value_name = "FRACTION")]
    pub mem_fraction_static: Option<f64>,

    /// With --engine sglang: the context length [default: the model's, derived as SGLang
    /// derives it]; a longer one is refused as SGLang refuses it.
    ///
    /// Example: --context-length 131072
    #[arg(long, value_name = "TOKENS")]
    pub context_length: Option<u64>,

    /// With --engine sglang: tokens per prefill chunk [default: SGLang's for the device].
    ///
    /// Example: --chunked-prefill-size 16384
    #[arg(long, value_name = "TOKENS")]
    pub chunked_prefill_size: Option<u64>,

    /// With --engine sglang: the most running requests [default: derived from the pool].
    ///
    /// Example: --max-running-requests 256
    #[arg(long, value_name = "N")]
    pub max_running_requests: Option<u64>,

    /// With --engine sglang: a cap on the KV pool's tokens.
    ///
    /// Example: --max-total-tokens 200000
    #[arg(long, value_name = "TOKENS")]
    pub max_total_tokens: Option<u64>,

    /// With --engine sglang: tokens per KV page [default: SGLang's, 1 on CUDA].
    ///
    /// Example: --page-size 16
    #[arg(long, value_name = "TOKENS")]
    pub page_size: Option<u64>,

    /// With --engine sglang: the largest decode batch captured in a CUDA graph (the releases
    /// that have the flag; 0.5.20 on refuse it as ambiguous).
    ///
    /// Example: --cuda-graph-max-bs 128
    #[arg(long, value_name = "N")]
    pub cuda_graph_max_bs: Option<u64>,

    /// With --engine sglang: the recurrent-state pool's share of the memory left after the
    /// weights, against the KV cache's (SGLang's --mamba-full-memory-ratio; hybrid models
    /// such as Qwen3-Next only) [default: the release's, 0.9].
    ///
    /// Example: --mamba-full-memory-ratio 0.5
    #[arg(long, value_name = "RATIO")]
    pub mamba_full_memory_ratio: Option<f64>,

    /// With --engine sglang: the recurrent-state pool's slots, in place of the release's rule
    /// (SGLang's --max-mamba-cache-size; hybrid models such as Qwen3-Next only).
    ///
    /// Example: --max-mamba-cache-size 600
    #[arg(long, value_name = "SLOTS")]
    pub max_mamba_cache_size: Option<u64>,

    /// With --engine sglang: capture no CUDA graph (its reserve leaves mem_fraction_static's
    /// default).
    ///
    /// Example: --disable-cuda-graph
    #[arg(long)]
    pub disable_cuda_graph: bool,

    /// With --engine sglang: prefix caching off (SGLang's --disable-radix-cache). No byte of a
    /// model whose every layer keeps a full cache depends on it (the radix tree only indexes
    /// the pool); refused with a hybrid sliding-window or recurrent-state pool, which SGLang
    /// sizes by it.
    ///
    /// Example: --disable-radix-cache
    #[arg(long)]
    pub disable_radix_cache: bool,
    /// With --engine sglang: a hybrid sliding-window pool's SWA tokens per full-attention
    /// token, in (0, 1] [default: the release's, 0.8]; another value is refused for a model
    /// SGLang gives no hybrid pool.
    ///
    /// Example: --swa-full-tokens-ratio 0.5
    #[arg(long, value_name = "RATIO")]
    pub swa_full_tokens_ratio: Option<f64>,

    /// With --engine sglang: a full KV cache for every layer of a model SGLang would give a
    /// hybrid sliding-window pool (any other model has one already).
    ///
    /// Example: --disable-hybrid-swa-memory
    #[arg(long)]
    pub disable_hybrid_swa_memory: bool,
}

impl SglangArgs {
    /// The SGLang flags given, by name (for refusals).
    fn given(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut add = |set: bool, name| {
            if set {
                out.push(name);
            }
        };
        add(self.tp_size.is_some(), "--tp-size");
        add(self.pp_size.is_some(), "--pp-size");
        add(self.dp_size.is_some(), "--dp-size");
        add(self.ep_size.is_some(), "--ep-size");
        add(self.enable_ep_moe, "--enable-ep-moe");
        add(self.mem_fraction_static.is_some(), "--mem-fraction-static");
        add(self.context_length.is_some(), "--context-length");
        add(
            self.chunked_prefill_size.is_some(),
            "--chunked-prefill-size",
        );
        add(
            self.max_running_requests.is_some(),
            "--max-running-requests",
        );
        add(self.max_total_tokens.is_some(), "--max-total-tokens");
        add(self.page_size.is_some(), "--page-size");
        add(self.cuda_graph_max_bs.is_some(), "--cuda-graph-max-bs");
        add(self.disable_cuda_graph, "--disable-cuda-graph");
        add(self.disable_radix_cache, "--disable-radix-cache");
        add(
            self.mamba_full_memory_ratio.is_some(),
            "--mamba-full-memory-ratio",
        );
        add(
            self.max_mamba_cache_size.is_some(),
            "--max-mamba-cache-size",
        );
        add(
            self.swa_full_tokens_ratio.is_some(),
            "--swa-full-tokens-ratio",
        );
        add(
            self.disable_hybrid_swa_memory,
            "--disable-hybrid-swa-memory",
        );
        out
    }
}

/// The engines `--engine` names (`vllm`, `sglang==0.5.22`, `vllm,sglang`), in order.
pub fn engines_named(spec: &str) -> Vec<&str> {
    spec.split(',').map(str::trim).collect()
}

/// Whether `spec` (one engine) is SGLang.
pub fn is_sglang(spec: &str) -> bool {
    spec.split("==")
        .next()
        .is_some_and(|e| e.trim() == "sglang")
}

/// Refuses SGLang's flags without an SGLang engine, and vLLM's engine flags (those SGLang has
/// its own for, or no use of) when SGLang is the only engine.
pub fn check(args: &PlanArgs) -> Result<(), CliError> {
    let s = &args.sglang;
    let named = args.engine.engine.as_deref().map(engines_named);
    let any_sglang = named
        .as_ref()
        .is_some_and(|n| n.iter().any(|e| is_sglang(e)));
    let only_sglang = named
        .as_ref()
        .is_some_and(|n| n.iter().all(|e| is_sglang(e)));
    if let Some(flag) = s.given().first()
        && !any_sglang
    {
        return Err(format!(
            "{flag} is SGLang's flag: give --engine sglang (or --engine vllm,sglang to compare)"
        )
        .into());
    }
    if any_sglang
        && let Some(flag) = [
            (args.svg.is_some(), "--svg"),
            (args.arena_svg.is_some(), "--arena-svg"),
        ]
        .iter()
        .find_map(|(set, flag)| set.then_some(flag))
    {
        return Err(format!(
            "{flag} with --engine sglang: the charts draw a profile run's terms, and SGLang runs none; drop {flag}"
        )
        .into());
    }
    // A replica starts as one alone does (apply's comment): where the answer is one GPU's
    // start-up or a TP size, the replicas would change nothing.
    if any_sglang && let Some(dp) = s.dp_size.filter(|&dp| dp > 1) {
        if !only_sglang {
            return Err(format!(
                "--dp-size {dp} with two engines: the columns compare one replica's start-up, which --dp-size does not change; drop --dp-size"
            )
            .into());
        }
        if args.engine.devices.is_some() {
            return Err(format!(
                "--dp-size {dp} with --devices: the table finds the smallest --tp-size of one replica, which --dp-size does not change; drop --dp-size"
            )
            .into());
        }
    }
    // The expert-parallel groups change the circuits SGLang's column imports; with two
    // engines the columns share one layout, and the --devices search varies tp, which
    // --enable-ep-moe's ep follows.
    if any_sglang && (s.ep_size.is_some_and(|ep| ep > 1) || s.enable_ep_moe) {
        let flag = if s.enable_ep_moe {
            "--enable-ep-moe".to_owned()
        } else {
            format!("--ep-size {}", s.ep_size.unwrap_or(1))
        };
        if !only_sglang {
            return Err(format!(
                "{flag} with two engines: the columns compare one layout, and vLLM's expert parallelism (--enable-expert-parallel) places the experts otherwise; compare without it"
            )
            .into());
        }
        if args.engine.devices.is_some() {
            return Err(format!(
                "{flag} with --devices: the table searches --tp-size per device, which the expert-parallel groups must divide; give --tp-size and --ep-size for one device instead"
            )
            .into());
        }
        if s.enable_ep_moe && args.engine.smallest_tp {
            return Err(
                "--enable-ep-moe with --smallest-tp: its ep size follows the TP size searched, which is not modelled; give --ep-size N (the search skips sizes N does not divide)"
                    .into(),
            );
        }
    }
    if !only_sglang {
        return Ok(());
    }
    let e = &args.engine;
    let vllm_own: [(bool, &str, &str); 12] = [
        (
            e.gpu_memory_utilization.is_some(),
            "--gpu-memory-utilization",
            "--mem-fraction-static (a fraction of the free memory before loading)",
        ),
        (
            e.max_num_batched_tokens.is_some(),
            "--max-num-batched-tokens",
            "--chunked-prefill-size",
        ),
        (
            e.max_num_seqs.is_some(),
            "--max-num-seqs",
            "--max-running-requests",
        ),
        (
            args.max_model_len.is_some(),
            "--max-model-len",
            "--context-length",
        ),
        (e.block_size.is_some(), "--block-size", "--page-size"),
        (e.enforce_eager, "--enforce-eager", "--disable-cuda-graph"),
        (
            e.skip_mm_profiling,
            "--skip-mm-profiling",
            "no such flag: it runs no profile",
        ),
        (
            e.enable_prefix_caching || e.no_enable_prefix_caching,
            "--enable-prefix-caching",
            "none that changes its memory: the radix cache lives in the pool",
        ),
        (
            e.largest_max_num_seqs,
            "--largest-max-num-seqs",
            "none to search: max_running_requests follows from the pool (see its line)",
        ),
        (
            args.limit_mm_per_prompt.is_some(),
            "--limit-mm-per-prompt",
            "none modelled: multimodal models are refused for SGLang",
        ),
        (
            args.parallel.enable_expert_parallel,
            "--enable-expert-parallel",
            "--ep-size",
        ),
        (
            args.parallel.data_parallel_size != 1,
            "--data-parallel-size",
            "--dp-size (replicas, each a TP group of its own)",
        ),
    ];
    if let Some((_, flag, theirs)) = vllm_own.iter().find(|(set, _, _)| *set) {
        return Err(
            format!("{flag} is vLLM's flag; with --engine sglang SGLang's is {theirs}").into(),
        );
    }
    if args.kv_cache_dtype == "fp8" {
        return Err(
            "--kv-cache-dtype fp8: SGLang names its fp8 caches fp8_e4m3 and fp8_e5m2".into(),
        );
    }
    Ok(())
}

/// The run settings SGLang's flags give, over the generic ones (`run` holds the layout, the
/// device and the model).
pub fn apply(
    args: &PlanArgs,
    mut run: engine_profile::RunSettings,
) -> Result<engine_profile::RunSettings, CliError> {
    let s = &args.sglang;
    run.max_num_batched_tokens = s.chunked_prefill_size;
    run.max_num_seqs = s.max_running_requests;
    run.max_model_len = s.context_length;
    run.block_size = s.page_size;
    run.enforce_eager = s.disable_cuda_graph;
    run.gpu_memory_utilization = None;
    run.skip_mm_profiling = false;
    run.mm_limit_per_prompt = None;
    run.enable_prefix_caching = None;
    run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
        mem_fraction_static: s.mem_fraction_static,
        max_total_tokens: s.max_total_tokens,
        cuda_graph_max_bs: s.cuda_graph_max_bs,
        dp_size: s.dp_size,
        ep_size: s.ep_size,
        enable_ep_moe: s.enable_ep_moe,
        disable_radix_cache: s.disable_radix_cache,
        mamba_full_memory_ratio: s.mamba_full_memory_ratio,
        max_mamba_cache_size: s.max_mamba_cache_size,
        swa_full_tokens_ratio: s.swa_full_tokens_ratio,
        disable_hybrid_swa_memory: s.disable_hybrid_swa_memory,
        quantization: (args.engine.quantization != "none")
            .then(|| args.engine.quantization.clone()),
    }));
    Ok(run)
}

/// How the circuits place the experts: expert-parallel groups of `--ep-size` ranks (or of
/// the TP size with `--enable-ep-moe`), as SGLang's FusedMoE holds them; the engine profile
/// checks the release and the model class (crates/engine-profile/src/sglang/parallel.rs).
pub fn experts(args: &PlanArgs) -> circuit_hf::ExpertSplit {
    let s = &args.sglang;
    let ep = if s.enable_ep_moe {
        layout(args).tp
    } else {
        s.ep_size.unwrap_or(1)
    };
    if ep == 1 {
        circuit_hf::ExpertSplit::Parallel
    } else {
        circuit_hf::ExpertSplit::Groups { ep }
    }
}

/// Whether every engine `--engine` names is SGLang: `--quantization` then names SGLang's
/// method, which the engine profile checks against the checkpoint
/// (crates/engine-profile/src/sglang/quantization.rs), not vLLM's online FP8.
pub fn only_sglang(args: &PlanArgs) -> bool {
    args.engine
        .engine
        .as_deref()
        .is_some_and(|spec| engines_named(spec).iter().all(|e| is_sglang(e)))
}

/// The layout: SGLang's `--tp-size` / `--pp-size` when given, else the generic `--tp` /
/// `--pp` (which clap keeps from being given together), over the generic flags' layout.
pub fn layout(args: &PlanArgs) -> circuit_hf::Parallel {
    let mut p = args.parallel.parallel();
    if let Some(tp) = args.sglang.tp_size {
        p.tp = tp;
    }
    if let Some(pp) = args.sglang.pp_size {
        p.pp = pp;
    }
    p
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `cargo xtask plan` with `flags`, parsed.
    fn plan(flags: &[&str]) -> PlanArgs {
        let mut argv = vec!["xtask", "plan", "--hf-config", "config.json"];
        argv.extend_from_slice(flags);
        match crate::Cli::try_parse_from(argv).unwrap().command {
            crate::Command::Plan(args) => *args,
            _ => panic!("not a plan"),
        }
    }

    fn refusal(flags: &[&str]) -> String {
        check(&plan(flags)).unwrap_err().to_string()
    }

    #[test]
    fn each_engine_refuses_the_other_engines_flags_by_name() {
        assert_eq!(
            refusal(&["--engine", "vllm", "--mem-fraction-static", "0.8"]),
            "--mem-fraction-static is SGLang's flag: give --engine sglang (or --engine vllm,sglang to compare)"
        );
        assert_eq!(
            refusal(&["--mem-fraction-static", "0.8"]),
            "--mem-fraction-static is SGLang's flag: give --engine sglang (or --engine vllm,sglang to compare)"
        );
        assert_eq!(
            refusal(&["--engine", "sglang", "--max-num-seqs", "8"]),
            "--max-num-seqs is vLLM's flag; with --engine sglang SGLang's is --max-running-requests"
        );
        assert_eq!(
            refusal(&[
                "--engine",
                "sglang==0.5.22",
                "--gpu-memory-utilization",
                "0.9"
            ]),
            "--gpu-memory-utilization is vLLM's flag; with --engine sglang SGLang's is --mem-fraction-static (a fraction of the free memory before loading)"
        );
        assert_eq!(
            refusal(&["--engine", "sglang", "--kv-cache-dtype", "fp8"]),
            "--kv-cache-dtype fp8: SGLang names its fp8 caches fp8_e4m3 and fp8_e5m2"
        );
        assert_eq!(
            refusal(&["--engine", "vllm,sglang", "--svg", "chart.svg"]),
            "--svg with --engine sglang: the charts draw a profile run's terms, and SGLang runs none; drop --svg"
        );
        // Side by side each engine takes its own flags.
        assert!(
            check(&plan(&[
                "--engine",
                "vllm,sglang",
                "--max-num-seqs",
                "8",
                "--max-running-requests",
                "8"
            ]))
            .is_ok()
        );
    }

    #[test]
    fn expert_parallel_flags_give_the_groups_or_one_line() {
        let ep = plan(&["--engine", "sglang", "--tp-size", "8", "--ep-size", "4"]);
        check(&ep).unwrap();
        assert_eq!(experts(&ep), circuit_hf::ExpertSplit::Groups { ep: 4 });
        // --enable-ep-moe: ep = tp (the engine file says whether the release takes it).
        let all = plan(&["--engine", "sglang", "--tp-size", "8", "--enable-ep-moe"]);
        assert_eq!(experts(&all), circuit_hf::ExpertSplit::Groups { ep: 8 });
        let one = plan(&["--engine", "sglang", "--ep-size", "1"]);
        assert_eq!(experts(&one), circuit_hf::ExpertSplit::Parallel);
        assert_eq!(
            refusal(&[
                "--engine",
                "sglang",
                "--ep-size",
                "2",
                "--devices",
                "h100,a100-80gb"
            ]),
            "--ep-size 2 with --devices: the table searches --tp-size per device, which the expert-parallel groups must divide; give --tp-size and --ep-size for one device instead"
        );
        assert_eq!(
            refusal(&["--engine", "sglang", "--enable-ep-moe", "--smallest-tp"]),
            "--enable-ep-moe with --smallest-tp: its ep size follows the TP size searched, which is not modelled; give --ep-size N (the search skips sizes N does not divide)"
        );
        assert_eq!(
            refusal(&["--engine", "vllm", "--enable-ep-moe"]),
            "--enable-ep-moe is SGLang's flag: give --engine sglang (or --engine vllm,sglang to compare)"
        );
    }

    #[test]
    fn sglang_flags_give_the_run_and_the_layout() {
        let args = plan(&[
            "--engine",
            "sglang",
            "--tp-size",
            "4",
            "--context-length",
            "8192",
            "--page-size",
            "16",
            "--disable-cuda-graph",
            "--max-total-tokens",
            "100000",
        ]);
        check(&args).unwrap();
        assert_eq!(layout(&args).tp, 4);
        let model = circuit_hf::import(
            include_str!("../../../data/models/llama-3.1-8b/config.json"),
            "config.json",
        )
        .unwrap()
        .facts;
        let generic = engine_profile::RunSettings {
            tensor_parallel_size: 4,
            ..engine_profile::RunSettings::new(
                crate::inputs::settings::device(&args).unwrap(),
                model,
            )
        };
        let run = apply(&args, generic).unwrap();
        assert_eq!(
            (run.max_model_len, run.block_size, run.enforce_eager),
            (Some(8192), Some(16), true)
        );
        assert_eq!(
            run.engine_flags,
            Some(EngineFlags::Sglang(SglangFlags {
                mem_fraction_static: None,
                max_total_tokens: Some(100_000),
                cuda_graph_max_bs: None,
                dp_size: None,
                ep_size: None,
                enable_ep_moe: false,
                disable_radix_cache: false,
                mamba_full_memory_ratio: None,
                max_mamba_cache_size: None,
                swa_full_tokens_ratio: None,
                disable_hybrid_swa_memory: false,
                quantization: None,
            }))
        );
        // The state pool's flags reach the engine profile (which refuses them for a model
        // without recurrent state), and are SGLang's alone.
        let mamba = plan(&[
            "--engine",
            "sglang",
            "--mamba-full-memory-ratio",
            "0.5",
            "--max-mamba-cache-size",
            "600",
        ]);
        check(&mamba).unwrap();
        assert_eq!(
            apply(&mamba, run.clone()).unwrap().engine_flags,
            Some(EngineFlags::Sglang(SglangFlags {
                mamba_full_memory_ratio: Some(0.5),
                max_mamba_cache_size: Some(600),
                ..SglangFlags::default()
            }))
        );
        assert_eq!(
            refusal(&["--engine", "vllm", "--max-mamba-cache-size", "600"]),
            "--max-mamba-cache-size is SGLang's flag: give --engine sglang (or --engine vllm,sglang to compare)"
        );
        // --dp-size reaches the engine profile, which says the replicas; vLLM's flag and the
        // modes where the replicas would change nothing are refused in one line.
        let dp = plan(&["--engine", "sglang", "--dp-size", "2"]);
        check(&dp).unwrap();
        let run = apply(&dp, run).unwrap();
        assert_eq!(
            run.engine_flags,
            Some(EngineFlags::Sglang(SglangFlags {
                dp_size: Some(2),
                ..SglangFlags::default()
            }))
        );
        assert_eq!(
            refusal(&["--engine", "sglang", "--data-parallel-size", "2"]),
            "--data-parallel-size is vLLM's flag; with --engine sglang SGLang's is --dp-size (replicas, each a TP group of its own)"
        );
        assert_eq!(
            refusal(&["--engine", "vllm,sglang", "--dp-size", "2"]),
            "--dp-size 2 with two engines: the columns compare one replica's start-up, which --dp-size does not change; drop --dp-size"
        );
        assert_eq!(
            refusal(&[
                "--engine",
                "sglang",
                "--dp-size",
                "2",
                "--devices",
                "h100-sxm"
            ]),
            "--dp-size 2 with --devices: the table finds the smallest --tp-size of one replica, which --dp-size does not change; drop --dp-size"
        );
    }

    /// SGLang's launcher lines (engines/sglang-0.5.23/serve_flags.toml): each spelling gives
    /// the same plan arguments, hence the same prediction, as the flags written by hand.
    #[test]
    fn sglang_launcher_lines_predict_what_their_flags_predict() {
        use crate::inputs::serve_line::{PlanCommand, apply};
        use clap::{CommandFactory, FromArgMatches};
        use std::ffi::OsString;
        let data = crate::inputs::model::repository_data();
        let sources = crate::inputs::model::ModelSources {
            cwd: std::env::temp_dir(),
            hub: None,
            data: data.clone(),
        };
        let config = data.join("models/llama-3.1-8b/config.json");
        let read = |text: &str| {
            let argv: Vec<OsString> = ["xtask", "plan", "--format", "json", "--", text]
                .iter()
                .map(OsString::from)
                .collect();
            let given = PlanCommand::try_parse_from(&argv[1..]).unwrap().args;
            apply(given, &argv, &sources).map_err(|e| e.to_string())
        };
        let by_hand = |flags: &[&str]| {
            let mut words: Vec<String> = ["plan", "--format", "json", "--engine", "sglang==0.5.23"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            words.push("--hf-config".into());
            words.push(config.display().to_string());
            words.extend(flags.iter().map(|s| s.to_string()));
            let matches = PlanCommand::command().try_get_matches_from(&words).unwrap();
            let mut a = PlanCommand::from_arg_matches(&matches).unwrap().args;
            a.given = crate::inputs::modes::given(&matches);
            a
        };
        let plain = |mut a: PlanArgs| {
            a.serve = None;
            a.serve_line.clear();
            format!("{a:?}")
        };
        let issue = [
            "--tp-size",
            "4",
            "--mem-fraction-static",
            "0.85",
            "--context-length",
            "131072",
        ];
        for text in [
            // The issue's line: `--tp` is argparse's unique prefix of --tp-size.
            "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 4 --mem-fraction-static 0.85 --context-length 131072 --port 30000",
            "python3 -m sglang.launch_server --model meta-llama/Llama-3.1-8B-Instruct --tp-size=4 --mem-fraction-static=0.85 --context-length 128Ki --host 0.0.0.0 --trust-remote-code --enable-metrics",
            "sglang serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 4 --mem-fraction-static 0.85 --context-length 131072 --json-model-override-args '{}' --log-level warning",
        ] {
            let got = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(
                got.serve.as_ref().unwrap().config,
                config.display().to_string()
            );
            assert_eq!(plain(got), plain(by_hand(&issue)), "{text}");
        }
        let note =
            read("sglang serve meta-llama/Llama-3.1-8B-Instruct --port 30000 --trust-remote-code")
                .unwrap()
                .serve
                .unwrap();
        assert_eq!(note.line.release, "SGLang 0.5.23");
        assert_eq!(note.line.ignored, ["--port 30000", "--trust-remote-code"]);
        // What SGLang refuses, or the prediction cannot follow, is one line.
        let e = |text: &str| read(text).unwrap_err();
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE"),
            "the serve line: `--speculative-algorithm EAGLE` is refused: speculative decoding's draft model and its KV cache are not modelled (SGLang 0.5.23, arg_groups/fields/spec.py:31)"
        );
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --kv-cache-dtype nvfp4"),
            "the serve line: `--kv-cache-dtype nvfp4` is refused: only auto and the one-byte fp8 caches are modelled (SGLang 0.5.23, arg_groups/fields/model.py:197)"
        );
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --cuda-graph-max-bs 8"),
            "the serve line: `--cuda-graph-max-bs` is ambiguous: SGLang 0.5.23 reads it as the start of --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill and refuses the line; write the flag in full"
        );
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --context-length 1.5Ki"),
            "the serve line: `--context-length 1.5Ki`: `1.5Ki`: decimals are not allowed with IEC suffixes like 'Ki', so SGLang 0.5.23 refuses the line"
        );
        assert_eq!(
            e("python -m sglang.launch_server --port 30000"),
            "the serve line: the line names no model and SGLang 0.5.23 has no default"
        );
        // `--dp-size 2` is taken; with attention data parallelism
        // it stays refused.
        let dp = read("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --dp-size 2").unwrap();
        assert_eq!(dp.sglang.dp_size, Some(2));
        assert!(check(&dp).and_then(|()| apply_layout_check(&dp)).is_ok());
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --dp-size 2 --enable-dp-attention"),
            "the serve line: `--enable-dp-attention` is refused: attention data parallelism is not modelled (attention TP = tp / dp: each rank holds the attention weights and KV heads of tp / dp ranks, the reserve adds max_bs x dp x 3 MB and --max-running-requests divides by dp); plain --dp-size replicas are (SGLang 0.5.23, server_args.py:419)"
        );
        // A launch over several nodes is refused (SGLang refuses DP replicas across nodes);
        // `--nnodes 1` is the default and changes nothing.
        assert_eq!(
            e("python -m sglang.launch_server --model-path m --tp 16 --nnodes 2 --node-rank 0"),
            "the serve line: `--nnodes 2` is refused: a launch over several nodes is not modelled (SGLang then asserts that the GPUs divide among the nodes and refuses data-parallel replicas across nodes: 0.5.23 arg_groups/validation_hook.py:179, 199; 0.4.6 server_args.py:1222-1227) (SGLang 0.5.23, arg_groups/fields/parallel.py:43)"
        );
        assert!(read("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --nnodes 1").is_ok());
        // The release is named as for vLLM, before `--` (a line names none: the newest reads
        // it, as above); that release reads the line and predicts it.
        let engine_of = |before: &[&str]| {
            let mut argv: Vec<OsString> = vec!["xtask".into(), "plan".into()];
            argv.extend(before.iter().map(OsString::from));
            argv.extend([
                "--".into(),
                "sglang serve --model-path meta-llama/Llama-3.1-8B-Instruct".into(),
            ]);
            let given = PlanCommand::try_parse_from(&argv[1..]).unwrap().args;
            apply(given, &argv, &sources)
                .map(|a| a.engine.engine.unwrap())
                .map_err(|e| e.to_string())
        };
        assert_eq!(engine_of(&[]).unwrap(), "sglang==0.5.23");
        assert_eq!(
            engine_of(&["--engine", "sglang"]).unwrap(),
            "sglang==0.5.23"
        );
        assert_eq!(
            engine_of(&["--engine", "sglang==0.5.9"]).unwrap(),
            "sglang==0.5.9"
        );
        assert_eq!(
            engine_of(&["--engine", "sglang==0.5.4.post1"]).unwrap_err(),
            "the serve line: the serve line starts with `sglang serve --model-path`, not a launcher the planner knows (`python -m sglang.launch_server`)"
        );
    }

    /// Every SGLang release modelled reads its own launcher line: each older folder's
    /// serve_flags.toml states what its releases' parsers (dumped from their own
    /// ServerArgs.add_cli_args) register differently from the folder it extends.
    #[test]
    fn each_sglang_release_reads_the_flags_its_parser_registers() {
        use crate::inputs::serve_line::{parse, split_words};
        use crate::inputs::serve_table::{Class, ServeTable};
        let mut read = 0;
        for r in engines::catalogue().unwrap() {
            for v in r.releases.iter().filter(|_| r.engine == "sglang") {
                ServeTable::of_release(&format!("sglang=={v}"))
                    .unwrap_or_else(|e| panic!("{v}: {e}"));
                read += 1;
            }
        }
        assert_eq!(read, 62);
        let line = |v: &str, text: &str| {
            let t = ServeTable::of_release(&format!("sglang=={v}")).unwrap();
            parse(&split_words(text).unwrap(), &[t])
        };
        // The `sglang` console script arrives with 0.5.5 (sglang/cli/ in the wheel); its
        // `serve` takes a first positional word as the model from 0.5.16 (cli/serve.py:63-67
        // in 0.5.23).
        assert_eq!(
            line("0.5.4.post1", "sglang serve --model-path m").unwrap_err(),
            "the serve line starts with `sglang serve --model-path`, not a launcher the planner knows (`python -m sglang.launch_server`)"
        );
        assert_eq!(
            line("0.5.5", "sglang serve --model-path m").unwrap().model,
            "m"
        );
        assert_eq!(
            line("0.5.15", "sglang serve m").unwrap_err(),
            "`m`: this launcher reads the model from --model-path only; SGLang 0.5.15 refuses the line (unrecognized arguments): write --model-path m"
        );
        // 0.4.6 (engines/sglang-0.4.6): the launcher module only, its own flags.
        assert_eq!(
            line(
                "0.4.6",
                "python -m sglang.launch_server --model-path m --tp 2 --port 1"
            )
            .unwrap()
            .flags,
            ["--tp-size", "2"]
        );
        assert_eq!(line("0.5.16", "sglang serve m").unwrap().model, "m");
        // Only a first word is the model: elsewhere argparse meets it and refuses the line.
        assert_eq!(
            line("0.5.23", "sglang serve --tp 2 m").unwrap_err(),
            "`m`: this launcher reads the model from --model-path only; SGLang 0.5.23 refuses the line (unrecognized arguments): write --model-path m"
        );
        // --cuda-graph-max-bs: modelled where it is a flag (0.5.9), a prefix of two flags
        // from 0.5.20 (refused as ambiguous, above).
        let t = ServeTable::of_release("sglang==0.5.9").unwrap();
        assert_eq!(
            t.flag("--cuda-graph-max-bs").map(|(_, f)| f.class),
            Some(Class::Modelled)
        );
        assert_eq!(
            line(
                "0.5.9",
                "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 64"
            )
            .unwrap()
            .flags,
            ["--cuda-graph-max-bs", "64"]
        );
        // A flag of a later release, on an earlier one; one an earlier release had.
        assert_eq!(
            line(
                "0.4.9",
                "python -m sglang.launch_server --model-path m --attn-cp-size 2"
            )
            .unwrap_err(),
            "`--attn-cp-size` is not a flag of SGLang 0.4.9 (0.5.9 was the first release with it): it refuses the line (unrecognized arguments); drop it"
        );
        let t = ServeTable::of_release("sglang==0.5.23").unwrap();
        assert_eq!(t.absent["--cuda-graph-max-bs"], "0.5.19");
        // Each flag is cited in its own release's sources (a folder's `[at]`): 0.5.23
        // registers --tp-size from a dataclass field, 0.5.9 by an add_argument call.
        assert_eq!(t.flags["--tp-size"].at, "arg_groups/fields/parallel.py:45");
        let t = ServeTable::of_release("sglang==0.5.9").unwrap();
        assert_eq!(t.flags["--tp-size"].at, "server_args.py:3303");
    }

    /// With SGLang alone, `--quantization` names SGLang's method (the engine profile checks
    /// it against the checkpoint, engines/tests/sglang_0_5_23.rs): nothing is quantized
    /// while importing; side by side, vLLM's column still takes its own.
    #[test]
    fn sglang_quantization_quantizes_nothing_while_importing() {
        // SGLang alone: the import quantizes nothing (vLLM's online FP8 is not SGLang's);
        // side by side vLLM's column still takes its own.
        let sglang = plan(&["--engine", "sglang", "--quantization", "compressed-tensors"]);
        assert_eq!(
            crate::inputs::settings::import_options(&sglang)
                .unwrap()
                .online_quantization,
            circuit_hf::OnlineQuantization::None
        );
        let both = plan(&["--engine", "vllm,sglang", "--quantization", "fp8"]);
        assert_eq!(
            crate::inputs::settings::import_options(&both)
                .unwrap()
                .online_quantization,
            circuit_hf::OnlineQuantization::Fp8
        );
    }

    /// The flags classed one by one (docs/generators/sglang/gen.py `PER_FLAG`), each as its
    /// own release reads it: ignored where the release reads it only at run time, refused
    /// where it sizes memory, the line naming the flag, why and where.
    #[test]
    fn sglang_flags_are_classed_as_each_release_reads_them() {
        use crate::inputs::serve_line::{parse, split_words};
        use crate::inputs::serve_table::ServeTable;
        let line = |v: &str, text: &str| {
            let t = ServeTable::of_release(&format!("sglang=={v}")).unwrap();
            parse(&split_words(text).unwrap(), &[t])
        };
        let launch = "python -m sglang.launch_server --model-path m";
        // Run-time only: the scheduler mixes decode into prefill, binds NUMA nodes, sets
        // torch's matmul precision; a flag no code reads.
        let ok = line(
            "0.5.23",
            &format!("{launch} --enable-mixed-chunk --numa-node 0 --enable-tf32-matmul --num-continuous-decode-steps 4"),
        )
        .unwrap();
        assert_eq!(
            ok.ignored,
            [
                "--enable-mixed-chunk",
                "--numa-node 0",
                "--enable-tf32-matmul",
                "--num-continuous-decode-steps 4"
            ]
        );
        // --max-prefill-tokens: the scheduler's budget alone in 0.4.6; from 0.5.3 it sizes
        // mem_fraction_static's activation reserve with chunked prefill off.
        let old = line("0.4.6", &format!("{launch} --max-prefill-tokens 8192")).unwrap();
        assert_eq!(old.ignored, ["--max-prefill-tokens 8192"]);
        assert_eq!(
            line("0.5.23", &format!("{launch} --max-prefill-tokens 8192")).unwrap_err(),
            "`--max-prefill-tokens 8192` is refused: it sizes mem_fraction_static's activation reserve when chunked prefill is off (arg_groups/memory_hook.py:307) and the prefill workspaces some attention and MoE backends take, which are not modelled (SGLang 0.5.23, arg_groups/fields/schedule.py:71)"
        );
        // --config merges a YAML file's options into the line: never ignored.
        assert_eq!(
            line("0.5.23", &format!("{launch} --config serve.yaml")).unwrap_err(),
            "`--config serve.yaml` is refused: SGLang merges the YAML file's options into the line (server_args.py:683, prepare_server_args), which the planner does not read: write them on the line instead (SGLang 0.5.23, server_args.py:402)"
        );
        // Modelled: --disable-radix-cache and --quantization reach the planner's flags.
        assert_eq!(
            line(
                "0.5.9",
                &format!("{launch} --disable-radix-cache --quantization fp8")
            )
            .unwrap()
            .flags,
            ["--disable-radix-cache", "--quantization", "fp8"]
        );
    }

    /// `apply`'s refusals of a layout, on a generic run.
    fn apply_layout_check(args: &PlanArgs) -> Result<(), CliError> {
        let model = circuit_hf::import(
            include_str!("../../../data/models/llama-3.1-8b/config.json"),
            "config.json",
        )
        .unwrap()
        .facts;
        let run =
            engine_profile::RunSettings::new(crate::inputs::settings::device(args).unwrap(), model);
        apply(args, run).map(|_| ())
    }
}
