//! SGLang's expert parallelism (`--ep-size`, `--enable-ep-moe`; docs/engines.md "Expert
//! parallelism"), each figure derived by hand from the 0.5.23 sources (paths under
//! sglang/srt/): moe_tp_size = tp // ep (runtime_context.py:137-154), each rank (experts - fused
//! shared slots) / ep routed experts of moe_intermediate_size / moe_tp_size
//! (layers/moe/fused_moe_triton/layer.py:394-428), DeepSeek's shared experts a DeepseekV2MLP over
//! the whole TP group under EP on CUDA (models/deepseek_v2.py:861-896, 3385-3391), Qwen2-MoE's
//! a Qwen2MoeMLP over TP. So a rank holds E / ep experts x I / (tp / ep) = E x I / tp expert
//! rows, as at TP alone: the start-up is TP's wherever both divide, and differs where a
//! quantization block splits otherwise (a block-FP8 expert narrower than a block over TP, whole
//! over EP). The refusals: a release
//! before 0.5.1, a class not read, sizes SGLang cannot split, and `--enable-ep-moe` where the
//! release refuses it.

use circuit_hf::{ExpertSplit, ImportOptions, Parallel};
use circuit_ir::Circuit;
use engine_profile::detail::SglangFlags;
use engine_profile::{
    EngineError, EngineFlags, ModelFacts, RunSettings, StageCircuit, Startup, Verdict,
};

mod common;
use common::detail;

const GIB: f64 = (1u64 << 30) as f64;
const MIB: u64 = 1 << 20;
/// The H100's CUDA total (devices.toml) less the engine file's assumed CUDA context and the
/// communicators' bytes (world > 1).
const F_WORLD: u64 = 85_032_697_856 - 547_608_330 - 1_095_216_660;

fn config(name: &str) -> &'static str {
    match name {
        "qwen3-30b-a3b" => include_str!("../../data/models/qwen3-30b-a3b/config.json"),
        "deepseek-v2-lite" => include_str!("../../data/models/deepseek-v2-lite/config.json"),
        "deepseek-r1" => include_str!("../../data/checkpoints/deepseek-r1/config.json"),
        "mixtral" => include_str!("../../data/models/mixtral-8x7b-v0.1/config.json"),
        "qwen3-next" => {
            include_str!("../../data/checkpoints/qwen3-next-80b-a3b-instruct/config.json")
        }
        other => panic!("no config {other}"),
    }
}

/// `text` imported for SGLang `release` at TP `tp` with expert-parallel groups of `ep`, and a
/// run of SGLang's defaults on `device` with `--ep-size ep`.
fn layout_of(
    text: &str,
    release: &str,
    tp: u64,
    ep: u64,
    device: &str,
) -> Result<(Vec<Circuit>, RunSettings), circuit_hf::HfError> {
    let mut options = ImportOptions::default();
    options.load = engines::profile(release).unwrap().load_rules();
    options.parallel = Parallel {
        tp,
        pp: 1,
        dp: 1,
        expert_parallel: false,
    };
    if ep > 1 {
        options.experts = ExpertSplit::Groups { ep };
    }
    let sharded = circuit_hf::import_parallel(text, "config.json", &options, &[])?;
    let model: ModelFacts = sharded.imports[0].facts.clone();
    let circuits = sharded.imports.into_iter().map(|i| i.circuit).collect();
    let run = RunSettings {
        tensor_parallel_size: tp,
        engine_flags: Some(EngineFlags::Sglang(SglangFlags {
            ep_size: Some(ep),
            ..SglangFlags::default()
        })),
        ..RunSettings::new(
            kernel_families::Devices::builtin()
                .unwrap()
                .get(device)
                .unwrap()
                .clone(),
            model,
        )
    };
    Ok((circuits, run))
}

fn layout(name: &str, tp: u64, ep: u64) -> (Vec<Circuit>, RunSettings) {
    layout_of(config(name), "sglang-0.5.23", tp, ep, "h100-sxm").unwrap()
}

fn predict(release: &str, circuits: &[Circuit], run: &RunSettings) -> Result<Startup, EngineError> {
    engines::profile(release)
        .unwrap()
        .predict_layout(&StageCircuit::in_order(circuits), run)
}

fn dim(c: &Circuit, name: &str) -> u64 {
    c.dim(name).unwrap()
}

#[test]
fn qwen3_30b_a3b_tp2_ep2() {
    let (circuits, run) = layout("qwen3-30b-a3b", 2, 2);
    // Each rank: 128 / 2 = 64 experts of 768 / (2 / 2) = 768.
    assert_eq!(
        (
            dim(&circuits[0], "local_experts"),
            dim(&circuits[0], "moe_ffn")
        ),
        (64, 768)
    );
    // Per layer: q 2048 x 2048 and o 2048 x 2048 (16 heads of 128), k and v 256 x 2048 (2 KV
    // heads), q/k norms 2 x 128, two RMS norms 2 x 2048, the router 128 x 2048 whole, and 64
    // experts x 3 x 768 x 2048 = 301,989,888: 311,693,568 parameters; x 48 = 14,961,291,264.
    // The vocabulary 151,936 (a multiple of 64) over 2 ranks: embedding and head 75,968 x 2048
    // each, 311,164,928, and the final norm 2048: 15,272,458,240 parameters, 2 B each.
    assert_eq!(circuits[0].weight_bytes(), 30_544_916_480);
    let s = predict("sglang-0.5.23", &circuits, &run).unwrap();
    let d = detail(&s);
    // W is what the device's free memory loses: the caching allocator's segments for these
    // tensors and the float32 rope cache [40960, 128] = 20 MiB (30,565,888,000 B of requests;
    // sglang_audit.rs). The experts' w13, 64 x 2 x 768 x 2048 x 2 = 384 MiB, and w2, 192 MiB,
    // are 2 MiB multiples, as TP 2's 128 experts of 384 are, so every request is TP 2's alone:
    // the 48 o_proj shards of 8 MiB pair in 20 MiB segments (+96 MiB), embed_tokens and lm_head
    // 296.75 MiB each take 298 (+2 x 1.25 MiB), qkv_proj's 10 MiB is exact, and the small
    // requests (norms, q/k norms, the 512 KiB routers), 25,587,712 B, fill 18 segments of
    // 2 MiB (+36 MiB - 25,587,712 B): 30,681,333,760 B.
    assert_eq!(
        30_565_888_000 + 96 * MIB + 2 * (MIB + MIB / 4) + 36 * MIB - 25_587_712,
        30_681_333_760
    );
    assert_eq!(s.workers[0].weights, 30_681_333_760);
    // The rope cache grows to ceil((40960 + 256) / 128) x 128 = 41,216 rows: 131,072 B.
    assert_eq!(d.workers[0].after_load, 131_072);
    // mfs: reserve 512 + 8192 x 1.5 + 2 / 8 x 1024 + 256 x 2 + 58 x 8 = 14,032 MB (the reserve
    // reads no ep_size, arg_groups/memory_hook.py:357-399); round((81559 - 14032) / 81559, 3)
    // = 0.828. Cell 48 layers x 2 KV heads x (128 + 128) x 2 B = 49,152 B. rest = float32(F -
    // W - 131072) / 2^30 - float32(F) / 2^30 x 0.172 = 49.088531 - 77.662872 x 0.172 =
    // 35.730517 GiB; int(rest x 2^30) // 49152 = 780,545 tokens.
    assert_eq!(d.mem_fraction_static, 0.828);
    assert_eq!(d.cell_bytes, [49_152]);
    let rd = |b: u64| f64::from(b as f32) / GIB;
    let rest = rd(F_WORLD - 30_681_333_760 - 131_072) - rd(F_WORLD) * (1.0 - 0.828);
    assert_eq!((rest * GIB) as u64 / 49_152, 780_545);
    assert_eq!(s.kv_cache_tokens, 780_545);
    // max_running_requests = min(clamp(int(780545 / 40960 x 512), 2048, 4096), 780545 // 2).
    assert_eq!(d.max_running_requests, 4096);
    assert_eq!((d.ep_size, s.verdict.clone()), (2, Verdict::Starts));
    // E / ep x I / (tp / ep) = E x I / tp: TP 2 alone holds the same bytes and pool.
    let (alone, run_alone) = layout("qwen3-30b-a3b", 2, 1);
    assert_eq!(
        (dim(&alone[0], "local_experts"), dim(&alone[0], "moe_ffn")),
        (128, 384)
    );
    let tp = predict("sglang-0.5.23", &alone, &run_alone).unwrap();
    assert_eq!(
        (
            tp.workers[0].weights,
            tp.kv_cache_tokens,
            detail(&tp).ep_size
        ),
        (30_681_333_760, 780_545, 1)
    );
}

#[test]
fn deepseek_v2_lite_tp2_ep2_keeps_the_shared_experts_over_tp() {
    let (circuits, run) = layout("deepseek-v2-lite", 2, 2);
    // 64 routed experts / 2 = 32 a rank of 1408 / (2 / 2) = 1408; the two shared experts, one
    // DeepseekV2MLP of 2 x 1408 = 2816 over TP 2: 1408 (not fused: n_routed_experts is not
    // 256, models/deepseek_v2.py:3356-3371, and never under EP on CUDA, :3385-3391).
    let c = &circuits[0];
    assert_eq!(
        (
            dim(c, "local_experts"),
            dim(c, "moe_ffn"),
            dim(c, "shared_ffn")
        ),
        (32, 1408, 1408)
    );
    // Attention (MLA, 8 heads a rank): q_proj 8 x 192 x 2048 = 3,145,728, kv_a_proj_with_mqa
    // 576 x 2048 = 1,179,648 and its norm 512 whole, kv_b_proj 8 x 256 x 512 = 1,048,576,
    // o_proj 2048 x 1024 = 2,097,152, two norms 4096: 7,475,712. Layer 0 dense: 3 x 5472 x 2048
    // = 33,619,968. 26 MoE layers: router 64 x 2048 = 131,072, routed 32 x 3 x 1408 x 2048 =
    // 276,824,064, shared 3 x 1408 x 2048 = 8,650,752; with attention 293,081,600 each,
    // 7,620,121,600. Embedding and head 51,200 x 2048 each (102,400 over 2), 209,715,200, final
    // norm 2048: 7,870,934,528 parameters, 2 B each.
    assert_eq!(c.weight_bytes(), 15_741_869_056);
    let s = predict("sglang-0.5.23", &circuits, &run).unwrap();
    let (alone, run_alone) = layout("deepseek-v2-lite", 2, 1);
    assert_eq!(alone[0].weight_bytes(), 15_741_869_056);
    let tp = predict("sglang-0.5.23", &alone, &run_alone).unwrap();
    // The same loaded bytes (rope cache and MLA's w_kc / w_vc as at TP 2) and pool: MLA's
    // latent cell (512 + 64) x 2 B x 27 = 31,104 B.
    assert_eq!(s.workers[0].weights, tp.workers[0].weights);
    assert_eq!(detail(&s).cell_bytes, [31_104]);
    assert_eq!(s.kv_cache_tokens, tp.kv_cache_tokens);
    assert_eq!(s.verdict, Verdict::Starts);
}

#[test]
fn deepseek_r1_tp8_ep8_on_h200() {
    let (circuits, run) = layout_of(config("deepseek-r1"), "sglang-0.5.23", 8, 8, "h200").unwrap();
    let c = &circuits[0];
    // 256 / 8 = 32 routed experts of 2048 / (8 / 8) = 2048; the shared expert over TP 8: 256.
    assert_eq!(
        (
            dim(c, "local_experts"),
            dim(c, "moe_ffn"),
            dim(c, "shared_ffn")
        ),
        (32, 2048, 256)
    );
    // FP8 blocks of 128 x 128: an expert's w13 2 x 2048 x 7168 B + f32 scales [32, 56] x 4 =
    // 29,367,296, w2 7168 x 2048 + [56, 16] x 4 = 14,683,648: 44,050,944 B, x 32 =
    // 1,409,630,208 B a layer. At TP 8 alone: 256 experts x (2 x 256 x 7168 + [4, 56] x 4 +
    // 7168 x 256 + [56, 2] x 4) = 256 x 5,506,368 = the same 1,409,630,208.
    let (alone, run_alone) =
        layout_of(config("deepseek-r1"), "sglang-0.5.23", 8, 1, "h200").unwrap();
    assert_eq!(
        (dim(&alone[0], "local_experts"), dim(&alone[0], "moe_ffn")),
        (256, 256)
    );
    assert_eq!(c.weight_bytes(), alone[0].weight_bytes());
    // SGLang builds no multi-token-prediction layer (`[load] mtp_layers = "skipped"`,
    // deepseek_weight_loader.py:336-346): the expert-parallel groups hold layer 60, the last
    // decoder layer, and none of layer 61.
    let holds = |prefix: &str| c.tensors().values().any(|t| t.name.starts_with(prefix));
    assert_eq!(
        (holds("model.layers.60."), holds("model.layers.61.")),
        (true, false)
    );
    let s = predict("sglang-0.5.23", &circuits, &run).unwrap();
    let tp = predict("sglang-0.5.23", &alone, &run_alone).unwrap();
    assert_eq!(
        (s.workers[0].weights, s.kv_cache_tokens, s.verdict.clone()),
        (
            tp.workers[0].weights,
            tp.kv_cache_tokens,
            tp.verdict.clone()
        )
    );
    assert_eq!(detail(&s).ep_size, 8);
}

/// Qwen3-30B-A3B as a block-FP8 checkpoint (128 x 128 blocks): over TP 4 each of the 128
/// experts is 768 / 4 = 192 rows, a block and a half; with --ep-size 4 each of 32 experts stays
/// 768 rows whole (moe_tp_size 1), six blocks. Same weight bytes, fewer scales: the gate's and
/// up's scales [ceil(ffn / 128), 2048 / 128 = 16] f32 and the down's [16, ceil(ffn / 128)] are
/// at TP 4 128 x (2 x 2 x 16 + 16 x 2) x 4 B = 49,152 B a layer, at EP 4 32 x (2 x 6 x 16 + 16 x
/// 6) x 4 B = 36,864 B: 12,288 B less a layer, 589,824 B over the 48 layers. (SGLang raises for
/// the TP 4 split, 192 % 128 != 0: model_executor/model_runner_components/moe_ep_setup.py:
/// 150-176; that check is not modelled, docs/engines.md "Expert parallelism".)
#[test]
fn ep_keeps_a_block_quantized_expert_whole() {
    let mut config: serde_json::Value = serde_json::from_str(config("qwen3-30b-a3b")).unwrap();
    config["quantization_config"] = serde_json::json!({
        "quant_method": "fp8",
        "activation_scheme": "dynamic",
        "weight_block_size": [128, 128],
    });
    let text = config.to_string();
    let (tp, _) = layout_of(&text, "sglang-0.5.23", 4, 1, "h100-sxm").unwrap();
    assert_eq!(
        (dim(&tp[0], "local_experts"), dim(&tp[0], "moe_ffn")),
        (128, 192)
    );
    let (circuits, run) = layout_of(&text, "sglang-0.5.23", 4, 4, "h100-sxm").unwrap();
    assert_eq!(
        (
            dim(&circuits[0], "local_experts"),
            dim(&circuits[0], "moe_ffn")
        ),
        (32, 768)
    );
    assert_eq!(tp[0].weight_bytes() - circuits[0].weight_bytes(), 589_824);
    let s = predict("sglang-0.5.23", &circuits, &run).unwrap();
    assert_eq!((detail(&s).ep_size, s.verdict), (4, Verdict::Starts));
}

#[test]
fn sizes_sglang_cannot_split_are_refused() {
    // moe_tp_size = tp // ep: 3 does not divide TP 2.
    let e = layout_of(config("qwen3-30b-a3b"), "sglang-0.5.23", 2, 3, "h100-sxm").unwrap_err();
    assert_eq!(
        e.to_string(),
        "config.json: tensor_parallel_size = 2 is not divisible by expert_parallel_size = 3 (the expert-parallel groups need it: each of the ep ranks of a group holds as many experts, each split over tp / ep ranks)"
    );
    // Mixtral's 8 experts over 8 ranks hold one each; not over 16 with TP 16 (it would divide
    // the heads 32 and the FFN 14336 / 16 = 896 both, but the experts 8 % 16 != 0).
    let e = layout_of(config("mixtral"), "sglang-0.5.23", 16, 16, "h100-sxm").unwrap_err();
    assert!(
        e.to_string()
            .contains("num_experts = 8 is not divisible by expert_parallel_size = 16"),
        "{e}"
    );
    let (circuits, run) = layout("mixtral", 8, 8);
    assert_eq!(dim(&circuits[0], "local_experts"), 1);
    assert!(predict("sglang-0.5.23", &circuits, &run).is_ok());
}

#[test]
fn releases_and_classes_not_read_are_refused() {
    // 0.4.x: EPMoE under --enable-ep-moe, not read.
    let (circuits, run) = layout_of(
        config("qwen3-30b-a3b"),
        "sglang-0.4.10.post2",
        2,
        2,
        "h100-sxm",
    )
    .unwrap();
    assert_eq!(
        predict("sglang-0.4.10.post2", &circuits, &run)
            .unwrap_err()
            .to_string(),
        "--ep-size 2: SGLang 0.4.6-0.4.10.post2's expert parallelism (EPMoE under --enable-ep-moe, DeepSeek's shared-expert fusion) is not modelled; it is from 0.5.1"
    );
    // Qwen3-Next fuses its gated shared expert among the routed ones (models/qwen3_next.py:
    // 556-557), which these circuits do not hold.
    let (circuits, run) = layout("qwen3-next", 4, 4);
    let e = predict("sglang-0.5.23", &circuits, &run).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "SGLang 0.5.23: expert parallelism of Qwen3NextForCausalLM is not modelled"
        ),
        "{e}"
    );
    // Circuits imported without the groups do not pass for an --ep-size run.
    let (alone, mut run) = layout("qwen3-30b-a3b", 2, 1);
    run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
        ep_size: Some(2),
        ..SglangFlags::default()
    }));
    assert!(matches!(
        predict("sglang-0.5.23", &alone, &run),
        Err(EngineError::BadSetting { .. })
    ));
}

#[test]
fn enable_ep_moe_sets_ep_to_tp_where_the_release_takes_it() {
    // 0.5.2: server_args.py:408-409 sets ep_size = tp_size.
    let (circuits, mut run) =
        layout_of(config("qwen3-30b-a3b"), "sglang-0.5.2", 2, 2, "h100-sxm").unwrap();
    run.engine_flags = Some(EngineFlags::Sglang(SglangFlags {
        enable_ep_moe: true,
        ..SglangFlags::default()
    }));
    let s = predict("sglang-0.5.2", &circuits, &run).unwrap();
    assert_eq!(detail(&s).ep_size, 2);
    // 0.5.3-0.5.4 raise ValueError (a DeprecatedAction); 0.5.23 has no such flag.
    assert_eq!(
        predict("sglang-0.5.3", &circuits, &run)
            .unwrap_err()
            .to_string(),
        "--enable-ep-moe: SGLang 0.5.3-0.5.4 raise ValueError: NOTE: --enable-ep-moe is deprecated. Please set `--ep-size` to the same value as `--tp-size` instead."
    );
    assert!(
        predict("sglang-0.5.23", &circuits, &run)
            .unwrap_err()
            .to_string()
            .starts_with("--enable-ep-moe: SGLang 0.5.23 has no such flag")
    );
}
