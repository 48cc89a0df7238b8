//! What the GPU changes in SGLang's start-up beyond its memory (docs/engines.md, "SGLang",
//! "Attention backend and page size per GPU"): on sm100 (B200, GB200, B300) the default
//! attention backend of an MHA model is trtllm_mha from 0.5.7 and of DeepSeek V3/R1 trtllm_mla
//! from 0.5.3.post2, each snapping the page to 64; elsewhere, and before, the page stays 1. Each
//! figure is derived by hand in the comments, each fact cited in the releases' engine files.

use circuit_hf::KvCacheDtype;
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{EngineError, RunSettings, StageCircuit, Startup};

mod common;
use common::{detail, tokens, with_flags};

/// The B200's CUDA total (devices.toml, 191,514,017,792 B) less the assumed CUDA context
/// (engines/sglang-0.5.23/engine.toml `[startup.sglang.free_memory]`).
const F_B200: u64 = 191_514_017_792 - 547_608_330;

fn config(name: &str) -> &'static str {
    match name {
        "llama-3.1-8b" => include_str!("../../data/models/llama-3.1-8b/config.json"),
        "deepseek-v2-lite" => include_str!("../../data/models/deepseek-v2-lite/config.json"),
        "deepseek-r1" => include_str!("../../data/checkpoints/deepseek-r1/config.json"),
        "qwen3-next" => {
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json")
        }
        other => panic!("no config {other}"),
    }
}

/// `name` imported for `release` at TP `tp`, and a run of SGLang's defaults on `dev`.
fn layout(release: &str, name: &str, tp: u64, dev: &str) -> (Vec<Circuit>, RunSettings) {
    common::layout(
        common::release(release).load_rules(),
        config(name),
        &format!("{name}/config.json"),
        tp,
        KvCacheDtype::Auto,
        dev,
    )
}

fn predict(release: &str, circuits: &[Circuit], run: &RunSettings) -> Result<Startup, EngineError> {
    common::release(release).predict_layout(&StageCircuit::in_order(circuits), run)
}

fn with_page(run: RunSettings, page: u64) -> RunSettings {
    RunSettings {
        block_size: Some(page),
        ..with_flags(run, SglangFlags::default())
    }
}

#[test]
fn llama_3_1_8b_on_b200_pages_by_64() {
    let (circuits, run) = layout("sglang==0.5.23", "llama-3.1-8b", 1, "b200");
    let s = predict("sglang==0.5.23", &circuits, &run).unwrap();
    let d = detail(&s);
    // nvidia-smi 183,359 MiB (above 163,840): chunked 16384, decode max_bs 512; the reserve
    // 512 + 16384 x 1.5 + 1/8 GiB (128) + 512 x 2 + 74 prefill sizes x 8 = 26,832 MB; mfs =
    // round((183359 - 26832) / 183359, 3) = round(0.85366, 3) = 0.854.
    assert_eq!(d.gpu_mib, 183_359);
    assert_eq!(d.prefill_graph_sizes.len(), 74);
    assert_eq!(d.reserved_kib, 26_832 * 1024);
    assert_eq!(d.mem_fraction_static, 0.854);
    // The weights as on an H100 (sglang_0_5_23.rs): 16,129,196,032 B of segments, and the
    // rope cache's growth 131,072 B. F = 190,966,409,462 B; the rest over the cell 131,072 B
    // gives 1,121,185 tokens at page 1.
    assert_eq!(s.workers[0].weights, 16_129_196_032);
    let profiled = tokens(F_B200, 16_129_196_032 + 131_072, 0.854, 131_072, false);
    assert_eq!(profiled, 1_121_185);
    // trtllm_mha on sm100 (model_override_base.py:312-325) snaps the default page to 64
    // (overrides.py:1174-1187): 1,121,185 // 64 x 64 = 1,121,152 tokens (17,518 pages).
    assert_eq!(d.page_size, 64);
    assert_eq!(d.max_total_num_tokens, 1_121_152);
    assert_eq!(s.kv_cache_tokens, 1_121_152);
    // K = V = 32 layers x (1,121,152 + 64) rows x 8 heads x 128 x 2 B = 73,480,011,776 B
    // (memory_pool.py:2560-2576: size + page_size rows).
    assert_eq!(d.workers[0].k_bytes, 73_480_011_776);
    assert_eq!(d.workers[0].v_bytes, 73_480_011_776);
    // max_running_requests: min(clamp(int(1121152 / 131072 x 512) = 4379, 2048, 4096),
    // 1121152 // 2) = 4096.
    assert_eq!(d.max_running_requests, 4096);
}

#[test]
fn trtllm_mha_snaps_a_page_it_does_not_take() {
    let (circuits, run) = layout("sglang==0.5.23", "llama-3.1-8b", 1, "b200");
    let page = |release: &str, p: u64| {
        let s = predict(release, &circuits, &with_page(run.clone(), p)).unwrap();
        (detail(&s).page_size, detail(&s).max_total_num_tokens)
    };
    // 0.5.23 takes 16, 32, 64 or 128 (overrides.py:1183): --page-size 1 becomes 64, 32 stays
    // (1,121,185 // 32 x 32 = 1,121,184), 128 stays (1,121,185 // 128 x 128 = 1,121,152).
    assert_eq!(page("sglang==0.5.23", 1), (64, 1_121_152));
    assert_eq!(page("sglang==0.5.23", 32), (32, 1_121_184));
    assert_eq!(page("sglang==0.5.23", 128), (128, 1_121_152));
    assert_eq!(page("sglang==0.5.17", 128).0, 128);
    // 0.5.7-0.5.16 take 16, 32 or 64 (0.5.16 arg_groups/overrides.py:1739): 128 becomes 64.
    assert_eq!(page("sglang==0.5.16", 128).0, 64);
    assert_eq!(page("sglang==0.5.7", 1).0, 64);
    // 0.5.6 picks FlashInfer for MHA on sm100 (server_args.py:1293-1308), which takes any page.
    assert_eq!(page("sglang==0.5.6", 1).0, 1);
    assert_eq!(page("sglang==0.5.6", 128).0, 128);
}

#[test]
fn the_page_stays_1_off_sm100_and_before_0_5_7() {
    // H100 (fa3), L40S and A100 (FlashInfer), RTX 5090 (sm120: FlashInfer, trtllm_mha is
    // sm100 only, utils/common.py:309-313) at 0.5.23; B200 at 0.5.6 and 0.4.6.
    for (release, dev) in [
        ("sglang==0.5.23", "h100-sxm"),
        ("sglang==0.5.23", "l40s"),
        ("sglang==0.5.23", "a100-80gb"),
        ("sglang==0.5.23", "rtx5090"),
        ("sglang==0.5.6", "b200"),
        ("sglang==0.4.6", "b200"),
    ] {
        let (circuits, run) = layout(release, "llama-3.1-8b", 1, dev);
        let s = predict(release, &circuits, &run).unwrap();
        assert_eq!(detail(&s).page_size, 1, "{release} on {dev}");
    }
}

#[test]
fn mla_pages_on_sm100_by_class_and_release() {
    // DeepSeek-V2-Lite (DeepseekV2ForCausalLM) is not in the trtllm_mla classes
    // (model_overrides/deepseek_v2.py:37-50): FlashInfer MLA on sm100, page 1.
    let (circuits, run) = layout("sglang==0.5.23", "deepseek-v2-lite", 1, "b200");
    let s = predict("sglang==0.5.23", &circuits, &run).unwrap();
    assert_eq!(detail(&s).page_size, 1);
    // DeepSeek-R1 (DeepseekV3ForCausalLM) at TP 8: trtllm_mla (deepseek_v2.py:177-188), page
    // 64 (overrides.py:1155-1163): the tokens are the budget's over the cell 70,272 B
    // ((512 + 64) x 2 B x 61 layers), rounded down to 64.
    let (circuits, run) = layout("sglang==0.5.23", "deepseek-r1", 8, "b200");
    let s = predict("sglang==0.5.23", &circuits, &run).unwrap();
    let d = detail(&s);
    assert_eq!(d.page_size, 64);
    assert_eq!(d.cell_bytes, vec![70_272]);
    assert_eq!(d.max_total_num_tokens, d.pool_budget / 70_272 / 64 * 64);
    assert_eq!(d.max_total_num_tokens % 64, 0);
    // trtllm_mla takes 32 or 64 (overrides.py:1159): --page-size 32 stays, 128 becomes 64.
    for (given, page) in [(32, 32), (128, 64)] {
        let s = predict("sglang==0.5.23", &circuits, &with_page(run.clone(), given)).unwrap();
        assert_eq!(detail(&s).page_size, page, "--page-size {given}");
    }
    // 0.5.5 (0.5.4.post1-0.5.5.post3) and 0.5.6 alike (0.5.5 server_args.py:900-906, :1225).
    for release in ["sglang==0.5.6", "sglang==0.5.5"] {
        let (circuits, run) = layout(release, "deepseek-r1", 8, "b200");
        let s = predict(release, &circuits, &run).unwrap();
        assert_eq!(detail(&s).page_size, 64, "{release}");
    }
    // 0.5.2 picks the backend in the model runner, FlashInfer on sm100 (model_runner.py:483).
    let (circuits, run) = layout("sglang==0.5.2", "deepseek-r1", 8, "b200");
    let s = predict("sglang==0.5.2", &circuits, &run).unwrap();
    assert_eq!(detail(&s).page_size, 1);
}

#[test]
fn what_is_not_read_on_sm100_is_refused() {
    // The folder 0.5.3 holds 0.5.3-0.5.3.post1 (FlashInfer MLA, page 1) and 0.5.3.post2-0.5.4
    // (trtllm_mla, page 64).
    let (circuits, run) = layout("sglang==0.5.4", "deepseek-r1", 8, "b200");
    let e = predict("sglang==0.5.4", &circuits, &run).unwrap_err();
    assert!(
        e.to_string()
            .contains("DeepSeek V3 (MLA) on sm100 (compute capability 10.x) with SGLang 0.5.3-0.5.4: 0.5.3 and 0.5.3.post1 pick FlashInfer MLA at page 1"),
        "{e}"
    );
    // Qwen3-Next on Blackwell, every folder.
    for release in ["sglang==0.5.23", "sglang==0.5.2"] {
        let (circuits, run) = layout(release, "qwen3-next", 4, "b200");
        let e = predict(release, &circuits, &run).unwrap_err();
        assert!(
            e.to_string()
                .contains("a recurrent-state model (Qwen3-Next) from compute capability 10.0"),
            "{release}: {e}"
        );
    }
}
