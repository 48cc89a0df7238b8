//! The example registry (`examples/llama-3.1-8b/families.toml`) against the example circuit:
//! it loads, reads only names the circuit defines, covers every kernel the fusion rules use,
//! and gives hand-computed workspace values on an H100 SXM (132 SMs).

use circuit_ir::{Circuit, Op};
use kernel_families::{BoundFamilies, Devices, Families, FamilyIdx};

const FAMILIES: &str = include_str!("../../../examples/llama-3.1-8b/families.toml");
const CIRCUIT: &str = include_str!("../../../examples/llama-3.1-8b/circuit.toml");

fn circuit() -> Circuit {
    Circuit::from_toml(CIRCUIT, "examples/llama-3.1-8b/circuit.toml").unwrap()
}

fn families() -> Families {
    Families::from_toml(FAMILIES, "examples/llama-3.1-8b/families.toml").unwrap()
}

fn on(device: &str) -> (Families, BoundFamilies) {
    let f = families();
    let sm = Devices::builtin().unwrap().get(device).unwrap().sm_count;
    let b = f.bind(&circuit(), sm).unwrap();
    (f, b)
}

/// The index of workspace `name` in family `id`.
fn ws(f: &Families, id: &str, name: &str) -> (FamilyIdx, usize) {
    let fam = f.find(id).unwrap();
    let i = f.families()[fam]
        .workspaces
        .iter()
        .position(|w| w.name == name)
        .unwrap();
    (fam, i)
}

#[test]
fn loads_and_checks_clean_against_the_example_circuit() {
    let f = families();
    assert_eq!(f.check(&circuit()), []);
    assert_eq!(f.len(), 12);
    // At least one workspace is arena scratch, and every workspace says why.
    let all: Vec<_> = f.families().values().flat_map(|x| &x.workspaces).collect();
    assert!(all.iter().any(|w| w.arena));
    assert!(all.iter().any(|w| !w.arena));
    assert!(all.iter().all(|w| w.why.len() > 40));
}

#[test]
fn every_kernel_of_the_fusion_rules_has_its_family() {
    let f = families();
    let expect = [
        (
            "gemm_bf16_sm90",
            "cublaslt_gemm",
            &[Op::Linear, Op::LmHead][..],
        ),
        ("splitk_gemm_bf16", "splitk_gemm", &[Op::Linear, Op::LmHead]),
        (
            "gemm_silu_mul_bf16",
            "gemm_swiglu",
            &[Op::Linear, Op::SiluMul],
        ),
        ("rms_norm_bf16", "rms_norm", &[Op::RmsNorm, Op::ResidualAdd]),
        (
            "fused_add_rms_norm_bf16",
            "rms_norm",
            &[Op::RmsNorm, Op::ResidualAdd],
        ),
        ("rope_bf16", "rope_kv", &[Op::Rope, Op::KvWrite]),
        ("kv_write_bf16", "rope_kv", &[Op::Rope, Op::KvWrite]),
        ("rope_kv_write_bf16", "rope_kv", &[Op::Rope, Op::KvWrite]),
        ("flash_decode_bf16", "flash_decode", &[Op::Attention]),
        (
            "flash_attn_varlen_bf16",
            "flash_attn_varlen",
            &[Op::Attention],
        ),
        (
            "silu_mul_bf16",
            "elementwise",
            &[Op::SiluMul, Op::ResidualAdd],
        ),
        (
            "residual_add_bf16",
            "elementwise",
            &[Op::SiluMul, Op::ResidualAdd],
        ),
        ("embedding_bf16", "embedding", &[Op::Embed]),
    ];
    for (kernel, family, ops) in expect {
        for &op in ops {
            let got = f
                .of_group(&[kernel], "cuda", op)
                .map(|i| &f.families()[i].id);
            assert_eq!(got.map(String::as_str), Some(family), "{kernel} {op}");
        }
    }
    // Kernel-less groups: torch host work and Triton element-wise kernels.
    let host = |emitter: &str, op| {
        f.of_group::<&str>(&[], emitter, op)
            .map(|i| f.families()[i].id.as_str())
    };
    assert_eq!(host("torch", Op::Sample), Some("torch_sample"));
    for op in [
        Op::Embed,
        Op::Copy,
        Op::Concat,
        Op::Split,
        Op::Scale,
        Op::Softcap,
    ] {
        assert_eq!(host("torch", op), Some("torch_host"), "{op}");
    }
    for op in [
        Op::SiluMul,
        Op::GeluMul,
        Op::ResidualAdd,
        Op::Scale,
        Op::Softcap,
        Op::Copy,
    ] {
        assert_eq!(host("triton", op), Some("triton_elementwise"), "{op}");
    }
    assert_eq!(host("torch", Op::Linear), None);
}

#[test]
fn cublaslt_workspace_is_32_mib() {
    let (f, b) = on("h100-sxm");
    let (fam, i) = ws(&f, "cublaslt_gemm", "cublaslt_workspace");
    assert_eq!(b.constant_value(fam, i), Some(33_554_432));
    assert_eq!(b.workspace_value(fam, i, 4096, 4096).unwrap(), 33_554_432);
    assert!(!f.families()[fam].workspaces[i].arena);
}

#[test]
fn flash_decode_on_h100() {
    let (f, b) = on("h100-sxm");
    let out = ws(&f, "flash_decode", "out_accum");
    let lse = ws(&f, "flash_decode", "lse_accum");
    let v = |(fam, i): (FamilyIdx, usize), n| b.workspace_value(fam, i, n, 4096).unwrap();
    // n = 1: 8 blocks (kv_heads), 264 slots -> 33 splits.
    // out: 4 * 1 * 32 * 128 * 33; lse: 4 * 1 * 32 * 33.
    assert_eq!(v(out, 1), 540_672);
    assert_eq!(v(lse, 1), 4_224);
    // n = 16: 128 blocks -> 3 splits: 4 * 16 * 32 * 128 * 3 and 4 * 16 * 32 * 3.
    assert_eq!(v(out, 16), 786_432);
    assert_eq!(v(lse, 16), 6_144);
    // n = 26: 208 blocks < 0.8 * 264 -> 2 splits: 4 * 26 * 32 * 128 * 2.
    assert_eq!(v(out, 26), 851_968);
    // n = 27: 216 blocks >= 211.2 -> no split, no accumulators; likewise at 64.
    assert_eq!(v(out, 27), 0);
    assert_eq!(v(lse, 27), 0);
    assert_eq!(v(out, 64), 0);
    assert_eq!(v(out, 0), 0);
}

#[test]
fn flash_decode_follows_the_sm_count() {
    // B200, 148 SMs: 296 slots over 8 blocks -> 37 splits: 4 * 32 * 128 * 37.
    let (f, b) = on("b200");
    let (fam, i) = ws(&f, "flash_decode", "out_accum");
    assert_eq!(b.workspace_value(fam, i, 1, 4096).unwrap(), 606_208);
    // L4, 58 SMs: n = 1 -> ceil(116 / 8) = 15 splits: 4 * 32 * 128 * 15; n = 12 (96 blocks
    // >= 0.8 * 116) -> none.
    let (f, b) = on("l4");
    let (fam, i) = ws(&f, "flash_decode", "out_accum");
    assert_eq!(b.workspace_value(fam, i, 1, 4096).unwrap(), 245_760);
    assert_eq!(b.workspace_value(fam, i, 12, 4096).unwrap(), 0);
}

#[test]
fn splitk_partials_on_h100() {
    let (f, b) = on("h100-sxm");
    let (fam, i) = ws(&f, "splitk_gemm", "partials");
    let v = |n, k| b.workspace_value(fam, i, n, k).unwrap();
    // k = 4096 (q/k/v/gate/up/lm_head): 4 splits; 4 * 1 * 128,256 (vocab) * 4.
    assert_eq!(v(1, 4096), 2_052_096);
    // k = 14,336 (down_proj): 14 splits would be 7,182,336; one wave of 64x128 fp32 tiles
    // on 132 SMs caps it at 4 * 64 * 128 * 132.
    assert_eq!(v(1, 14336), 4_325_376);
    assert_eq!(v(512, 4096), 4_325_376);
    // n = 513: 9 row tiles x 8 column tiles > 132 / 2: no split, no partials.
    assert_eq!(v(513, 14336), 0);
    // k < 2048: fewer than two parts of 1024.
    assert_eq!(v(1, 1024), 0);
}

#[test]
fn prefill_lse_and_sampling() {
    let (f, b) = on("h100-sxm");
    let (fam, i) = ws(&f, "flash_attn_varlen", "softmax_lse");
    // 4 * 4096 * 32.
    assert_eq!(b.workspace_value(fam, i, 4096, 4096).unwrap(), 524_288);
    let (fam, i) = ws(&f, "torch_sample", "fp32_probs");
    // 8 * 4 rows * 128,256 logits.
    assert_eq!(b.workspace_value(fam, i, 4, 128_256).unwrap(), 4_104_192);
}

/// The term memory-plan will build (docs/memory.md, "Workspaces"): for every node a group runs
/// with a family, each workspace at (n, k = the node's input width); one term per (family,
/// workspace), the largest value. Here every linear runs split-K and every attention decode.
#[test]
fn terms_over_the_example_nodes() {
    let (f, b) = on("h100-sxm");
    let c = circuit();
    let mut splitk = 0;
    let mut decode = 0;
    let mut nodes = 0;
    for (node, data) in c.nodes() {
        let kernel = match data.op {
            Op::Linear | Op::LmHead => "splitk_gemm_bf16",
            Op::Attention => "flash_decode_bf16",
            _ => continue,
        };
        let fam = f.of_group(&[kernel], "cuda", data.op).unwrap();
        let k = c.node_k(node);
        for i in 0..b.workspace_count(fam) {
            let v = b.workspace_value(fam, i, 1, k).unwrap();
            if f.families()[fam].id == "splitk_gemm" {
                splitk = v.max(splitk);
            } else if f.families()[fam].workspaces[i].name == "out_accum" {
                decode = v.max(decode);
            }
        }
        nodes += 1;
    }
    assert_eq!(nodes, 32 * 8 + 1);
    // down_proj (k = ffn) sets the split-K term; every attention node gives the same.
    assert_eq!(splitk, 4_325_376);
    assert_eq!(decode, 540_672);
}
