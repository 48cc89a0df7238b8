//! The vLLM 0.19 encoder profile of the vision-language models of issue 32 (Mistral 3's
//! Pixtral, LLaVA-NeXT, Kimi-VL, Qwen2.5-VL, Qwen3-VL, Qwen3-VL-MoE), from the representative
//! configs under data/models, on an H100 at the device's defaults (8,192 batched tokens, 1,024
//! sequences, 0.9 utilization, the model's own max-model-len): the dummy items, what the
//! encoder holds and outputs, its own peak, the weights vLLM creates, and a start-up predicted
//! without refusal. Every figure is derived from vLLM's source by hand in the comments (no log
//! of these models ran); the terms are engines/vllm-0.19/engine.toml's encoder variants.
//!
//! The weights are the caching allocator's blocks (engine-profile's torch_allocator.rs): each
//! parameter is one request, rounded up to 512 bytes; one of at most 1 MiB comes from 2 MiB
//! small-pool segments, one under 10 MiB from 20 MiB segments, a larger one from a segment of
//! its size rounded up to 2 MiB; a free block is taken by best fit and split only when more
//! than 1 MiB (small pool: 512 bytes) would remain, else handed out whole. So beside the
//! tensors' bytes: a 512-byte block for each of the 7 f32 scalars per attention layer (4
//! bytes each, not in the checkpoint), a segment's tail of at most 1 MiB where a large tensor is not a multiple of
//! 2 MiB, and the rest of a free block a smaller tensor takes when at most 1 MiB would remain.

use circuit_hf::KvCacheDtype;
use circuit_ir::Circuit;
use engine_profile::{
    EncoderBytes, EngineError, EngineProfile, PeakSetBy, RunSettings, StageCircuit, Startup,
};

mod common;

fn profile() -> EngineProfile {
    engines::profile("vllm-0.19").unwrap()
}

fn config(name: &str) -> String {
    let path = format!(
        "{}/../data/models/{name}/config.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The model's circuits at TP `tp` as vLLM loads it, and the H100 run at the defaults.
fn layout(name: &str, tp: u64) -> (Vec<Circuit>, RunSettings) {
    let origin = format!("{name}/config.json");
    common::layout(
        profile().load_rules(),
        &config(name),
        &origin,
        tp,
        KvCacheDtype::Auto,
        "h100-sxm",
    )
}

fn predict(circuits: &[Circuit], run: &RunSettings) -> Startup {
    profile()
        .predict_layout(&StageCircuit::in_order(circuits), run)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn encoder(items: u64, video: bool, held: u64, outputs: u64, peak: u64) -> EncoderBytes {
    EncoderBytes {
        items,
        video,
        held,
        outputs,
        peak,
    }
}

/// The cuBLAS workspace, the one persistent term under an encoder's peak.
const CUBLAS: u64 = 32 * 1024 * 1024;

/// Mistral-Small-3.1-24B's Pixtral. The dummy image is 1540 x 1540: 55 x 55 = 3,025 tokens of
/// 12,100 patch rows, so the budget of 8,192 takes 2 images, one sequence of R = 24,200 rows.
/// Held: pixels 2 x 3 x 1540^2 x 2 = 28,459,200; outputs 2 x 3,025 x 5,120 x 2 = 61,952,000.
/// Own peak at TP 1: the dense mask 24,200^2 x 2 = 1,171,280,000, the rotary cos and sin 2 x
/// 24,200 x 64 x 2 = 6,195,200, and down_proj's point, 7 x 1,024 + 3 x 4,096 = 19,456 a row
/// (above the activation's 18,432, o_proj's 11,264 and the attention's 10,240: 24,200 is a
/// multiple of 8, no padded mask), 941,670,400: 2,119,145,600. With the cuBLAS workspace and
/// the pixels it is 2,181,159,232, above the sampler's side (2,177,077,440): the encoder sets
/// the peak. At TP 2: 7 x 1,024 + 3 x 2,048 + 1,024 = 14,336 a row, 693,862,400, the mask
/// unsplit: 1,871,337,600. One image (a budget of 4,096 tokens): R = 12,100 is not a multiple
/// of 8, so SDPA pads a copy of the mask to 12,104 columns: the attention's point, 4 x 1,024 +
/// 6 x 1,024 + 12,104 = 22,344 a row, is the layer's: 540,724,800, the mask 292,820,000 and
/// the rotary 3,097,600: 836,642,400. Weights: the checkpoint, 48,022,722,560, the rotary
/// cache 131,072 x 128 x 2 = 33,554,432 (32 MiB, a segment of its own, no tail), 280 scalars
/// (40 layers x 7) x 512 = 143,360, and the projector's linear_1: Pixtral's patch_conv
/// (1,024 x 3 x 14^2 x 2 = 1,204,224) opens a 20 MiB segment, the patch merger's 8,388,608
/// takes the next 8 MiB of it, and linear_1 (5,120 x 1,024 x 2 = 10,485,760) takes the
/// 11,378,688 left, whose 892,928 rest is not split: 48,057,313,280.
#[test]
fn pixtrals_dense_mask_sets_the_peak() {
    let (circuits, mut run) = layout("mistral-small-3.1-24b-instruct-2503", 1);
    let s = predict(&circuits, &run);
    let w = &s.workers[0];
    assert_eq!(
        w.encoder,
        encoder(2, false, 28_459_200, 61_952_000, 2_119_145_600)
    );
    assert_eq!(w.peak_set_by, PeakSetBy::Encoder);
    assert_eq!(w.activation_peak, CUBLAS + 28_459_200 + 2_119_145_600);
    assert_eq!(
        w.weights,
        48_022_722_560 + 33_554_432 + 280 * 512 + (11_378_688 - 10_485_760)
    );
    assert!(s.kv_cache_tokens > 0);
    run.max_num_batched_tokens = Some(4096);
    let one = predict(&circuits, &run).workers[0].encoder;
    assert_eq!((one.items, one.peak), (1, 836_642_400));
    let (circuits, run) = layout("mistral-small-3.1-24b-instruct-2503", 2);
    assert_eq!(
        predict(&circuits, &run).workers[0].encoder.peak,
        1_871_337_600
    );
}

/// Kimi-VL-A3B's MoonViT. The dummy image, 1024 x 1024 scaled to 897 and padded to 924, is
/// 66 x 66 = 4,356 patches and 1,089 tokens: 7 images (R = 30,492). Held: pixels 7 x 4,356 x
/// 588 x 2 = 35,858,592 and the 2-D rope cache made in the first forward, 512 x 512 x 36
/// complex64 = 75,497,472; outputs 7 x 1,089 x 2,048 x 2 = 31,223,808. Own peak: the patch
/// embedding 30,492 x 1,152 x 2 = 70,253,568, freqs_cis 30,492 x 36 x 8 = 8,781,696 and the
/// rotary's point, 2 x 1,152 + 13 x 1,152 = 17,280 a row (the MLP's 4 x 1,152 + 2 x 4,304 =
/// 13,216), 1,053,803,520: 1,132,838,784. The 163,840-word vocabulary's sampler sets the peak.
/// Weights: the checkpoint 32,815,315,424, the rotary cache 131,072 x 64 x 2 = 16,777,216,
/// MLA's absorbed W_UK/W_UV 27 x 16 x 256 x 512 x 2 = 113,246,208 (engine.toml's term), and the
/// blocks: 189 scalars (27 layers x 7) x 512 = 96,768; the shared experts' down_proj on 26
/// layers, 2,816 x 2,048 x 2 = 11,534,336 (11 MiB) in a 12 MiB segment whose 1 MiB tail is
/// not split: 26 x 1,048,576; the 26 f32 e_score_correction_bias of 256 bytes in 512: 26 x 256;
/// and the tower, MoonViT's 27 layers of wqkv 7,962,624, wo 2,654,208 and fc0/fc1 9,916,416
/// bytes, all under 10 MiB, carved from 20 MiB segments, one taking a free block whole when at
/// most 1 MiB of it would remain: wo 6,713,344, fc0/fc1 5,697,536, wqkv 425,984, the patch
/// embedding (1,354,752 in a 1,835,008 block) 480,256, and its 2,304-, 6,912- and 8,608-byte
/// norms and biases in 2,560, 7,168 and 8,704: 52,256; 13,369,376 in all.
#[test]
fn kimi_vls_moonvit_keeps_its_rope_cache() {
    let (circuits, run) = layout("kimi-vl-a3b-instruct", 1);
    let s = predict(&circuits, &run);
    let w = &s.workers[0];
    assert_eq!(
        w.encoder,
        encoder(7, false, 35_858_592 + 75_497_472, 31_223_808, 1_132_838_784)
    );
    assert_eq!(w.peak_set_by, PeakSetBy::Sampler);
    assert_eq!(
        w.weights,
        32_815_315_424
            + 16_777_216
            + 113_246_208
            + 189 * 512
            + 26 * 1_048_576
            + 26 * 256
            + 13_369_376
    );
    assert!(s.kv_cache_tokens > 0);
}

/// llava-v1.6-mistral-7b: 2 images of 2,928 tokens, each 5 tiles of 577 rows (R = 5,770).
/// Held: pixels 2 x 5 x 3 x 336^2 x 2 = 6,773,760; outputs 2 x 2,928 x 4,096 x 2 =
/// 47,972,352. Own peak: the encoder's input embeddings (one hidden state) and CLIP's
/// QuickGELU point, 1,024 + 3 x 1,024 + 3 x 4,096 = 16,384 a row: 189,071,360. Granite
/// Vision 3.2 2B: one image of 8,289 tokens, 11 tiles of 729 rows (R = 8,019); with 4 feature
/// layers the encoder keeps every hidden state: 26 beside the last layer's input, and the
/// SigLIP's tanh GELU point 3 x 1,152 + 2 x 4,304 = 12,064: 42,016 a row, 673,852,608. Weights
/// as vLLM builds the towers (no post LayerNorm, no head, no layer after the deepest feature
/// layer): llava 15,133,495,296 - 25,192,448 - 4,096 + its rotary 32,768 x 128 x 2 =
/// 15,116,687,360 bytes of tensors, and the blocks: 224 scalars (32 x 7) x 512; the embedding
/// and lm_head, 32,064 x 4,096 x 2 = 262,668,288 (250.5 MiB), each leave a 1.5 MiB tail of
/// their 252 MiB segment, which CLIP's patch embedding (1,204,224) and position embedding
/// (1,181,696) take whole: 368,640 + 391,168; 15,117,561,856. Granite 5,950,793,856 -
/// 30,476,704 - 4,608 + 131,072 x 64 x 2 = 5,937,089,760 bytes of tensors, and the blocks: 280
/// scalars (40 x 7) x 512; the SigLIP's 27 layers of qkv 7,962,624, out_proj 2,654,208 and
/// fc1/fc2 9,916,416 bytes carved from 20 MiB segments, a free block taken whole when at most
/// 1 MiB of it would remain: fc1/fc2 6,135,808, out_proj 5,697,536, the patch embedding
/// 726,016, its norms, biases and position embedding in 512-byte steps 51,488; 12,610,848:
/// 5,949,843,968.
#[test]
fn llava_next_keeps_its_feature_layers() {
    let (circuits, run) = layout("llava-v1.6-mistral-7b-hf", 1);
    let w = &predict(&circuits, &run).workers[0];
    assert_eq!(
        w.encoder,
        encoder(2, false, 6_773_760, 47_972_352, 189_071_360)
    );
    assert_eq!(w.weights, 15_116_687_360 + 224 * 512 + 368_640 + 391_168);
    let (circuits, run) = layout("granite-vision-3.2-2b", 1);
    let w = &predict(&circuits, &run).workers[0];
    assert_eq!(
        w.encoder,
        encoder(1, false, 9_732_096, 33_951_744, 673_852_608)
    );
    assert_eq!(w.weights, 5_937_089_760 + 280 * 512 + 12_610_848);
}

/// Qwen2.5-VL-7B profiles a video: at max-model-len 128,000 the most frames that fit are 14
/// (7 groups of 16,384 tokens, 114,688), and a video never gives fewer tokens than the image
/// (a tie goes to the video). R = 7 x 65,536 = 458,752. Held: pixels 458,752 x 1,176 x 2 =
/// 1,078,984,704 and the lru-cached cos and sin 458,752 x 80 x 2 = 73,400,320; outputs
/// 114,688 x 3,584 x 2 = 822,083,584. Own peak: the concatenated cos and sin, 73,400,320, and
/// down_proj's point 5 x 1,280 + 3 x 3,420 = 16,660 a row (the activation's 15,380, proj's
/// 14,080, norm2's 10,240), 15,285,616,640: 15,359,016,960, the worker's peak. At TP 2,
/// 5 x 1,280 + 3 x 1,710 + 1,280 = 12,810 a row: 11,826,626,560. At max-model-len 32,768:
/// 4 frames, 2 groups (R = 131,072): 20,971,520 + 131,072 x 16,660 x 2 = 4,388,290,560. With
/// videos limited to 0 the image is profiled (R = 65,536): 2,194,145,280. Weights: the
/// checkpoint 16,584,333,312, M-RoPE's cache, 4 x 128,000 x 128 x 2 = 131,072,000, and the
/// blocks. A large tensor's segment is rounded up to 2 MiB, a tail of at most 1 MiB not split:
/// M-RoPE's cache (125 MiB in 126) 1 MiB; on 28 layers gate_up_proj 2 x 18,944 x 3,584 x 2
/// (259 MiB in 260) 1 MiB, qkv_proj 4,608 x 3,584 x 2 (31.5 MiB in 32) and down_proj (129.5 MiB
/// in 130) 0.5 MiB each: 28 x 2 MiB; the embedding and lm_head, 152,064 x 3,584 x 2 (1,039.5
/// MiB), 0.5 MiB each; the merger's first linear, 5,120^2 x 2 (25 MiB in 26) 1 MiB. The tower's
/// attn.proj (1,280^2 x 2 = 3,276,800) opens a 20 MiB segment whose 17,694,720 rest
/// gate_up_proj (2 x 3,420 x 1,280 x 2 = 17,510,400) takes whole, 184,320 over, on blocks 2 to
/// 31: 30 x 184,320; its bias, 13,680 in 13,824: 32 x 144. And 196 scalars (28 x 7) x 512.
#[test]
fn qwen2_5_vl_profiles_a_video() {
    let (circuits, mut run) = layout("qwen2.5-vl-7b-instruct", 1);
    let s = predict(&circuits, &run);
    let w = &s.workers[0];
    assert_eq!(
        w.encoder,
        encoder(
            1,
            true,
            1_078_984_704 + 73_400_320,
            822_083_584,
            15_359_016_960
        )
    );
    assert_eq!(w.peak_set_by, PeakSetBy::Encoder);
    assert_eq!(
        w.activation_peak,
        CUBLAS + 1_078_984_704 + 73_400_320 + 15_359_016_960
    );
    assert_eq!(
        w.weights,
        16_584_333_312
            + 131_072_000
            + (1 + 28 * 2 + 1 + 1) * 1_048_576
            + 30 * 184_320
            + 32 * 144
            + 196 * 512
    );
    run.max_model_len = Some(32_768);
    let short = predict(&circuits, &run).workers[0].encoder;
    assert_eq!((short.video, short.peak), (true, 4_388_290_560));
    run.mm_video_limit_per_prompt = Some(0);
    let image = predict(&circuits, &run).workers[0].encoder;
    assert_eq!((image.video, image.peak), (false, 2_194_145_280));
    let (circuits, run) = layout("qwen2.5-vl-7b-instruct", 2);
    assert_eq!(
        predict(&circuits, &run).workers[0].encoder.peak,
        11_826_626_560
    );
}

/// Qwen3-VL-8B profiles an image: 16,384 tokens (65,536 patches) against the video's 12,288.
/// Held: pixels 65,536 x 1,536 x 2 = 201,326,592; outputs with the deepstack features 16,384
/// x 4 x 4,096 x 2 = 536,870,912. Own peak: pos_embeds 150,994,944, cos and sin 65,536 x 72 x
/// 2 = 9,437,184, the three deepstack features 3 x 16,384 x 4,096 x 2 = 402,653,184 and proj's
/// point 3 x 1,152 + 8 x 1,152 = 12,672 a row (the GELU's 12,064), 1,660,944,384:
/// 2,224,029,696. With images limited to 0 the video's group (49,152 patches, 12,288 tokens):
/// 113,246,208 + 7,077,888 + 301,989,888 + 1,245,708,288 = 1,668,022,272. Weights: the
/// checkpoint 17,534,247,392, M-RoPE's cache 4 x 262,144 x 128 x 2 = 268,435,456 and the
/// deepstack buffers 3 x 8,192 x 4,096 x 2 = 201,326,592, and the blocks: the embedding and
/// lm_head, 151,936 x 4,096 x 2 (1,187 MiB in 1,188), 1 MiB each; 252 scalars (36 x 7) x 512;
/// the 256-byte q_norm and k_norm in 512: 2 x 36 x 256; the tower (SigLIP-shaped: 27 blocks of
/// qkv 7,962,624, proj 2,654,208, fc1/fc2 9,916,416 bytes carved from 20 MiB segments, a free
/// block taken whole when at most 1 MiB of it would remain): proj 5,697,536, fc1/fc2 5,697,536
/// and its 2,304-, 6,912- and 8,608-byte norms and biases in 2,560, 7,168 and 8,704: 51,744;
/// 11,446,816. Qwen3-VL-30B-A3B: the same tower into 2,048 wide: deepstack 201,326,592, peak
/// 2,022,703,104; weights 62,141,508,064 + 268,435,456 + 100,663,296 and the blocks: its
/// embedding and lm_head (593.5 MiB in 594) 0.5 MiB each, 336 scalars (48 x 7) x 512, q_norm
/// and k_norm 2 x 48 x 256, and the tower's 11,446,816. At its 262,144 context it holds fewer KV tokens than one
/// request: a start-up predicted (not refused) that does not start.
#[test]
fn qwen3_vl_profiles_an_image_with_its_deepstack_features() {
    let (circuits, mut run) = layout("qwen3-vl-8b-instruct", 1);
    let s = predict(&circuits, &run);
    let w = &s.workers[0];
    assert_eq!(
        w.encoder,
        encoder(1, false, 201_326_592, 536_870_912, 2_224_029_696)
    );
    assert_eq!(w.peak_set_by, PeakSetBy::Sampler);
    assert_eq!(
        w.weights,
        17_534_247_392
            + 268_435_456
            + 201_326_592
            + 2 * 1_048_576
            + 252 * 512
            + 2 * 36 * 256
            + 11_446_816
    );
    run.mm_limit_per_prompt = Some(0);
    let video = predict(&circuits, &run).workers[0].encoder;
    assert_eq!(
        video,
        encoder(1, true, 150_994_944, 402_653_184, 1_668_022_272)
    );
    let (circuits, run) = layout("qwen3-vl-30b-a3b-instruct", 1);
    let s = predict(&circuits, &run);
    let w = &s.workers[0];
    assert_eq!((w.encoder.items, w.encoder.peak), (1, 2_022_703_104));
    assert_eq!(
        w.weights,
        62_141_508_064
            + 268_435_456
            + 100_663_296
            + 1_048_576
            + 336 * 512
            + 2 * 48 * 256
            + 11_446_816
    );
    assert!(matches!(
        s.verdict,
        engine_profile::Verdict::MaxModelLenTooLong { .. }
    ));
}

/// Without the engine file's dummy video, a tower that takes video is refused unless its videos
/// are limited to 0; skipping the encoder's profile needs no video rule. Every later release
/// keeps 0.19's per-class encoder entries but those it restates by class (0.29: Pixtral's), the
/// dummy video included.
#[test]
fn a_video_tower_needs_the_engine_files_dummy_video() {
    // The engine file without its dummy videos.
    let text: String = include_str!("../vllm-0.19/engine.toml")
        .lines()
        .filter(|l| !l.starts_with("video = {"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!text.contains("mm_video_group_tokens"));
    let stripped = EngineProfile::from_texts(&engine_profile::ProfileTexts {
        engine: vec![(&text, "engine.toml")],
        families: (include_str!("../vllm-0.19/families.toml"), "families.toml"),
        rules: (include_str!("../vllm-0.19/rules.toml"), "rules.toml"),
    })
    .unwrap();
    let (circuits, mut run) = layout("qwen2.5-vl-7b-instruct", 1);
    let stages = StageCircuit::in_order(&circuits);
    assert!(matches!(
        stripped.predict_layout(&stages, &run),
        Err(EngineError::EncoderProfileNotModelled { .. })
    ));
    run.mm_video_limit_per_prompt = Some(0);
    assert!(
        !stripped.predict_layout(&stages, &run).unwrap().workers[0]
            .encoder
            .video
    );
    run.skip_mm_profiling = true;
    run.mm_video_limit_per_prompt = None;
    assert_eq!(
        stripped.predict_layout(&stages, &run).unwrap().workers[0].encoder,
        EncoderBytes::default()
    );
    run.skip_mm_profiling = false;
    let own = predict(&circuits, &run).workers[0].encoder;
    assert!(own.video);
    // 0.25 and 0.26 run every dense model on the V2 runner, whose profile runs no encoder
    // before 0.27; the others profile the same dummy video with the same terms.
    for (release, expected) in [
        ("vllm==0.18.0", own),
        ("vllm==0.20.0", own),
        ("vllm==0.22.0", own),
        ("vllm==0.25.0", EncoderBytes::default()),
        ("vllm==0.27.0", own),
        ("vllm==0.29.0", own),
        ("vllm", own),
    ] {
        let later = engines::select(release).unwrap();
        let w = &later.predict_layout(&stages, &run).unwrap().workers[0];
        assert_eq!(w.encoder, expected, "{release}");
    }
    // Before 0.15 the towers' files differ from 0.19's and were not read: refused.
    let early = engines::select("vllm==0.13.0").unwrap();
    assert!(matches!(
        early.predict_layout(&stages, &run),
        Err(EngineError::EncoderClassRefused { .. })
    ));
}

/// Pixtral's profile follows the releases whose PixtralHF classes are 0.19's and whose wheel
/// has no xformers (0.15-0.18; 0.20-0.28 change only its weight loading); from 0.29 its
/// attention runs MMEncoderAttention without the dense mask, and before 0.15 the classes
/// differ (with xformers required up to 0.11.2), so its entry is refused there, with the
/// reason, while the other towers' entries stay.
#[test]
fn pixtrals_profile_is_refused_where_its_attention_is_not_0_19s() {
    let (circuits, mut run) = layout("mistral-small-3.1-24b-instruct-2503", 1);
    let stages = StageCircuit::in_order(&circuits);
    let own = predict(&circuits, &run).workers[0].encoder;
    assert_eq!(own.peak, 2_119_145_600);
    for release in [
        "vllm==0.15.0",
        "vllm==0.18.0",
        "vllm==0.20.0",
        "vllm==0.27.0",
        "vllm==0.28.0",
    ] {
        let later = engines::select(release).unwrap();
        let w = &later.predict_layout(&stages, &run).unwrap().workers[0];
        assert_eq!(w.encoder, own, "{release}");
    }
    for (release, why) in [
        ("vllm==0.29.0", "MMEncoderAttention"),
        ("vllm", "MMEncoderAttention"),
        ("vllm==0.14.1", "xformers"),
        ("vllm==0.10.1.1", "xformers"),
    ] {
        let other = engines::select(release).unwrap();
        let e = other.predict_layout(&stages, &run).unwrap_err();
        assert!(
            matches!(&e, EngineError::EncoderClassRefused { class, .. } if class == "Mistral3ForConditionalGeneration"),
            "{release}: {e}"
        );
        assert!(e.to_string().contains(why), "{e}");
    }
    run.skip_mm_profiling = true;
    let later = engines::select("vllm==0.29.0").unwrap();
    assert_eq!(
        later.predict_layout(&stages, &run).unwrap().workers[0].encoder,
        EncoderBytes::default()
    );
}

/// The largest max-model-len that starts, for a model whose dummy video grows with the
/// length: Qwen2.5-VL-7B at 0.4 of an H100 does not start at its 128,000 tokens (7 groups of
/// frames), but a shorter context profiles a shorter video. Requested ceil(85,032,697,856 x
/// 0.4) = 34,013,079,143 bytes. With 5 groups (81,920 to 98,303 tokens, R = 327,680) the
/// encoder's side is the cuBLAS workspace, the pixels and lru-cached cos/sin (327,680 x 2,512
/// = 823,132,160) and its peak (327,680 x (160 + 2 x 16,660) = 10,970,726,400):
/// 11,827,412,992. With the weights 16,782,905,856 (qwen2_5_vl_profiles_a_video) and non-torch
/// 268,435,456, 5,134,324,839 bytes remain: 5,595 blocks of 917,504, 89,520 tokens, above
/// 81,920. With 6 groups the peak
/// grows by 2,358,771,712 and about 3,100 blocks remain, fewer than 98,304 tokens take.
#[test]
fn the_largest_context_of_a_video_model_is_predicted_per_length() {
    let (circuits, mut run) = layout("qwen2.5-vl-7b-instruct", 1);
    run.gpu_memory_utilization = Some(0.4);
    let stages = StageCircuit::in_order(&circuits);
    let answers = profile().budget_answers(&stages, &run, 1).unwrap();
    let len = answers.largest_max_model_len.unwrap();
    assert_eq!(len, 89_520);
    let starts = |len: u64| {
        let s = predict(
            &circuits,
            &RunSettings {
                max_model_len: Some(len),
                ..run.clone()
            },
        );
        s.kv_layout.blocks_per_request <= s.kv_blocks
    };
    assert!(starts(len));
    assert!(!starts(len + 1));
    assert!(!starts(128_000));
}
