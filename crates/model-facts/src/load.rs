//! [`LoadRules`]: how an engine holds a checkpoint's tensors once it has loaded them, where
//! that differs from the bytes the checkpoint stores. An engine's folder states them; the
//! importer applies them when it builds the per-rank circuits.
//!
//! Invariants: each rule names a mechanism by what it does (a kernel library's layout, the
//! tower layers built), never an engine; `LoadRules::default()` keeps the checkpoint as stored.

/// How an engine holds a checkpoint after loading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadRules {
    /// How MXFP4 routed experts are re-laid out for the engine's MoE kernels (None: as the
    /// checkpoint stores them).
    pub mxfp4_experts: Option<Mxfp4ExpertLayout>,
    /// Which parts of a multimodal checkpoint's vision tower the engine builds.
    pub vision_tower: TowerBuild,
    /// Whether the engine builds the checkpoint's multi-token-prediction layers.
    pub mtp_layers: MtpLayers,
    /// The kernel library GPTQ's linear modules are held for (its layout after loading):
    /// device-dependent, so the engine profile resolves it for one device.
    pub gptq_linears: LinearKernel,
    /// The kernel library AWQ's linear modules are held for: device-dependent likewise.
    pub awq_linears: LinearKernel,
}

/// The mixed-precision (weight-only) kernel library a format's linear modules are held for
/// once an engine has loaded them; what each keeps is per format (docs/quantization.md): for
/// GPTQ (symmetric, `qweight`/`qzeros`/`scales`/`g_idx`) as below, for AWQ Marlin keeps the
/// stored bytes and Machete holds the zero points unpacked, scaled, in 16 bits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LinearKernel {
    /// As the checkpoint stores them (a kernel that reads every stored tensor, or no device
    /// known).
    #[default]
    Stored,
    /// Machete's: the stored tensors, repacked in place (same bytes), where Machete can
    /// implement the module (group size -1, 64 or 128); [`LinearKernel::Marlin`] where not.
    Machete,
    /// Marlin's: `qweight` and `scales` repacked in place (same bytes), the symmetric
    /// `qzeros` dropped; under act order `g_idx` sorted in place beside an int32 sort index of
    /// the same length, both held once per fused module (the linears reading one input);
    /// without act order `g_idx` dropped.
    Marlin,
}

/// Whether an engine builds and loads a checkpoint's multi-token-prediction (MTP) layers
/// (DeepSeek-V3's `model.layers.<num_hidden_layers + j>`, Qwen3-Next's `mtp.*`, GLM-4.5's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MtpLayers {
    /// As the checkpoint stores them: held as weights.
    #[default]
    Held,
    /// Not built: the engine builds the main model alone and skips their tensors while
    /// loading (they load only into a speculative-decoding draft model).
    Skipped,
}

/// An MXFP4 expert layout a kernel library needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mxfp4ExpertLayout {
    /// triton_kernels' Hopper layouts (`HopperMXValueLayout`, `HopperMXScaleLayout`): values
    /// and scales swizzled into padded copies beside the loaded scales, f32 biases, each
    /// rank's expert intermediate size rounded up to `expert_ffn_multiple`.
    TritonHopper {
        /// The multiple a rank's expert intermediate size is rounded up to.
        expert_ffn_multiple: u64,
        /// The multiple the reduction width is rounded up to before the scales are swizzled
        /// (32: none, every width being a multiple of the MXFP4 block; 128 where the engine
        /// pads the scales for the kernel's unmasked 128-wide loads first).
        scale_in_multiple: u64,
    },
}

/// Which parts of a vision tower an engine builds and loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TowerBuild {
    /// Every layer and tensor the checkpoint stores.
    #[default]
    Whole,
    /// Only what the projector reads: the encoder layers up to the deepest feature layer,
    /// without the tensors after it (a final norm the features skip).
    ReadByProjector,
}
