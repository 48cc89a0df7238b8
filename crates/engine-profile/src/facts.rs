//! The engine file compiled ([`Facts`]): every expression a [`Formula`], every mechanism and
//! dtype a typed value, the load rules as model-facts' [`LoadRules`]. Built once per profile by
//! [`Facts::compile`]; the prediction reads only these.
//!
//! Invariants: a file that names an unknown mechanism, layout or format, or gives a value no
//! run could use (a block size or step of 0, a slack below 1), is refused here naming the item,
//! never at prediction time; terms keep file order.

use circuit_ir::{Circuit, Format};
use model_facts::{LinearKernel, LoadRules, MtpLayers, Mxfp4ExpertLayout, TowerBuild};

use crate::variant::Conditions;

use crate::EngineError;
use crate::file::{
    Allocator, BudgetMechanism, CudaGraphEstimateMechanism, DefaultsRule, EngineFile, Execution,
    KvLayoutMechanism, ModelLenMechanism, NonTorchDecl, PrintedTokensMechanism, RotaryMechanism,
    SizeRange, StackedDecl, StageFilter, StartupCheckDecl, TermDecl, UnsettledDecl,
};
use crate::formula::{Env, Formula};
use crate::mechanisms::StartupFlow;

/// A byte term, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Term {
    pub(crate) formula: Formula,
    /// Tensors of `formula` bytes each (None: one).
    pub(crate) count: Option<Formula>,
    when_dim: Option<String>,
    stage: Option<StageFilter>,
    execution: Option<Execution>,
    pub(crate) from_forward: bool,
}

/// Where a worker's terms are summed: its pipeline stage of `stages`, run as `execution` says.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Where {
    pub(crate) stage: u64,
    pub(crate) stages: u64,
    pub(crate) execution: Execution,
}

impl Term {
    /// The bytes of one of its tensors and how many there are, with the names of `env`.
    pub(crate) fn tensors(&self, env: &Env<'_>) -> Result<(u64, u64), EngineError> {
        let bytes = self.formula.eval(env)?;
        let count = match &self.count {
            Some(c) => c.eval(env)?,
            None => 1,
        };
        Ok((bytes, count))
    }

    /// Whether the term counts for `circuit` at `at`.
    pub(crate) fn applies(&self, circuit: &Circuit, at: Where) -> bool {
        self.when_dim
            .as_deref()
            .is_none_or(|d| circuit.dim(d).is_some())
            && self.stage.is_none_or(|f| f.holds(at.stage, at.stages))
            && self.execution.is_none_or(|e| e == at.execution)
    }
}

/// The sum of the `terms` that count for `circuit` at `at`, `section` naming the total.
pub(crate) fn sum<'t>(
    section: &str,
    terms: impl IntoIterator<Item = &'t Term>,
    env: &Env<'_>,
    circuit: &Circuit,
    at: Where,
) -> Result<u64, EngineError> {
    terms
        .into_iter()
        .filter(|t| t.applies(circuit, at))
        .try_fold(0u64, |acc, t| {
            let (bytes, count) = t.tensors(env)?;
            bytes
                .checked_mul(count)
                .and_then(|b| acc.checked_add(b))
                .ok_or_else(|| EngineError::Overflow {
                    what: format!("{}: {section} total", circuit.name()),
                })
        })
}

/// The KV cache's facts.
#[derive(Debug, Clone)]
pub(crate) struct KvFacts {
    pub(crate) default_gpu_memory_utilization: f64,
    pub(crate) layout: KvLayoutMechanism,
    pub(crate) block_size: u64,
    pub(crate) subtract_cuda_graph_estimate: bool,
    pub(crate) hybrid_manager: bool,
    pub(crate) group_size_slack: f64,
    pub(crate) unify_page_sizes: bool,
    pub(crate) startup_check: StartupCheckDecl,
    pub(crate) per_request_full: Formula,
    pub(crate) per_request_sliding: Formula,
    pub(crate) per_request_chunked: Formula,
    pub(crate) per_request_recurrent: Formula,
    pub(crate) recurrent_attention_block: Formula,
    pub(crate) recurrent_block: Formula,
    pub(crate) budget: Option<BudgetMechanism>,
    /// `kv_cache.measured`: the margins and the memory in use before the snapshot.
    pub(crate) measured: Option<crate::mechanisms::MeasuredFacts>,
    pub(crate) printed_tokens: Option<PrintedTokensMechanism>,
    pub(crate) recurrent_prefix_caching_by_default: bool,
    /// The recurrent facts are the per-block layout under prefix caching (`align`).
    pub(crate) recurrent_align: bool,
}

/// The multimodal encoder's profile.
#[derive(Debug, Clone)]
pub(crate) struct EncoderFacts {
    pub(crate) profiled: bool,
    pub(crate) source: String,
    pub(crate) items: Formula,
    pub(crate) default_limit_per_prompt: u64,
    pub(crate) held: Vec<Term>,
    pub(crate) outputs: Vec<Term>,
    pub(crate) peak: Vec<Term>,
    pub(crate) architecture: Vec<EncoderArchitectureFacts>,
}

/// A model class's own encoder terms.
#[derive(Debug, Clone)]
pub(crate) struct EncoderArchitectureFacts {
    pub(crate) names: Vec<String>,
    pub(crate) held: Option<Vec<Term>>,
    pub(crate) outputs: Option<Vec<Term>>,
    pub(crate) peak: Option<Vec<Term>>,
    pub(crate) video: Option<VideoFacts>,
    pub(crate) refuse: Option<String>,
}

/// The encoder terms that hold for one model class.
pub(crate) struct ClassEncoder<'a> {
    pub(crate) held: &'a [Term],
    pub(crate) outputs: &'a [Term],
    pub(crate) peak: &'a [Term],
    pub(crate) video: Option<&'a VideoFacts>,
    /// Why the release's profile of the class is not modelled, when it is not.
    pub(crate) refuse: Option<&'a str>,
}

impl EncoderFacts {
    /// The terms for the model class `class`: its entry's where it gives them, the base's
    /// otherwise.
    pub(crate) fn for_class(&self, class: &str) -> ClassEncoder<'_> {
        let entry = self
            .architecture
            .iter()
            .find(|a| a.names.iter().any(|n| n == class));
        ClassEncoder {
            held: entry.and_then(|a| a.held.as_deref()).unwrap_or(&self.held),
            outputs: entry
                .and_then(|a| a.outputs.as_deref())
                .unwrap_or(&self.outputs),
            peak: entry.and_then(|a| a.peak.as_deref()).unwrap_or(&self.peak),
            video: entry.and_then(|a| a.video.as_ref()),
            refuse: entry.and_then(|a| a.refuse.as_deref()),
        }
    }
}

/// The encoder profile's dummy video.
#[derive(Debug, Clone)]
pub(crate) struct VideoFacts {
    pub(crate) groups: Formula,
    /// Whether the video is profiled when it gives as many tokens as an image.
    pub(crate) wins_tie: bool,
}

/// The profile run.
#[derive(Debug, Clone)]
pub(crate) struct ProfileRunFacts {
    pub(crate) logits_rows: Formula,
    pub(crate) persistent: Vec<Term>,
    pub(crate) forward_held: Vec<Term>,
    pub(crate) sampler_live: Vec<Term>,
    pub(crate) resident: Vec<Term>,
    pub(crate) encoder: Option<EncoderFacts>,
}

/// The CUDA-graph estimate.
#[derive(Debug, Clone)]
pub(crate) struct CudaGraphFacts {
    pub(crate) max_capture_size: Formula,
    pub(crate) architecture: Vec<(String, Formula)>,
    pub(crate) capture_sizes: Vec<SizeRange>,
    pub(crate) extra_sizes: Vec<Formula>,
    pub(crate) modes: Vec<(String, Formula)>,
    pub(crate) estimate: Option<CudaGraphEstimateMechanism>,
    pub(crate) first_capture_bytes: Formula,
    pub(crate) per_capture_bytes: Formula,
    pub(crate) min_per_capture_bytes: u64,
}

/// Everything the prediction reads of the engine file.
#[derive(Debug, Clone)]
pub(crate) struct Facts {
    pub(crate) engine: String,
    pub(crate) version: String,
    pub(crate) releases: Vec<String>,
    pub(crate) load: LoadRules,
    /// `[load] gptq_linears`: per device rule, GPTQ's linear layout (first holding wins).
    pub(crate) gptq_linears: Vec<(Conditions, LinearKernel)>,
    /// `[load] awq_linears`: the same for AWQ's linears.
    pub(crate) awq_linears: Vec<(Conditions, LinearKernel)>,
    pub(crate) model_len: ModelLenMechanism,
    pub(crate) defaults: Vec<DefaultsRule>,
    /// (batched tokens, sequences): the bounds on a defaulted setting.
    pub(crate) defaults_clamp: Option<(Formula, Formula)>,
    /// The runtime's named figures, in name order.
    pub(crate) runtime: Vec<(String, u64)>,
    pub(crate) created: Vec<Term>,
    /// How the rotary caches are sized (None: no cache beyond `created`).
    pub(crate) rotary_caches: Option<RotaryMechanism>,
    /// The allocator whose blocks the weights count (None: the tensors' bytes).
    pub(crate) allocator: Option<Allocator>,
    /// The allocator's split limit while the weights load, in bytes (None: none).
    pub(crate) allocator_max_split: Option<u64>,
    /// Checkpoint tensors held as one parameter.
    pub(crate) stacked: Vec<StackedDecl>,
    /// Endings of checkpoint tensor names freed while loading.
    pub(crate) released: Vec<String>,
    /// Per model class, the rotary cache's format when not the model dtype.
    pub(crate) rotary_dtype: Vec<(String, Format)>,
    pub(crate) unsettled: Vec<UnsettledDecl>,
    /// How the engine sizes its KV cache at start-up.
    pub(crate) flow: StartupFlow,
    /// The profile-run flow's facts (None for an engine with a flow of its own).
    run: Option<RunFacts>,
    origin: String,
}

/// The facts of the profile-run flow (`[kv_cache]`, `[profile_run]`, `[non_torch]`,
/// `[cuda_graph]`), which an engine with a start-up flow of its own does not have.
#[derive(Debug, Clone)]
pub(crate) struct RunFacts {
    pub(crate) kv: KvFacts,
    pub(crate) profile_run: ProfileRunFacts,
    pub(crate) non_torch: NonTorchDecl,
    pub(crate) cuda_graph: CudaGraphFacts,
}

impl Facts {
    /// The profile-run flow's facts, or an error naming the engine file when its flow is
    /// another (a caller of the profile-run prediction on such a profile).
    pub(crate) fn run(&self) -> Result<&RunFacts, EngineError> {
        self.run.as_ref().ok_or_else(|| EngineError::Toml {
            origin: self.origin.clone(),
            message: "its [startup] flow sizes the KV cache without a profile run, so it has no profile-run facts".to_owned(),
        })
    }
}

impl Facts {
    /// Compiles `file` (named `origin` in messages).
    pub(crate) fn compile(mut file: EngineFile, origin: &str) -> Result<Facts, EngineError> {
        let bad = |message: String| EngineError::Toml {
            origin: origin.to_owned(),
            message,
        };
        for u in &file.unsettled {
            u.when
                .check()
                .map_err(|e| bad(format!("unsettled `{}`: {e}", u.name)))?;
        }
        if file.schema != crate::file::SCHEMA {
            return Err(bad(format!(
                "schema = {}: only schema {} is known",
                file.schema,
                crate::file::SCHEMA
            )));
        }
        if file.releases.is_empty() {
            return Err(bad(
                "releases = []: name at least the release the facts were read from".to_owned(),
            ));
        }
        if let Some(st) = file.weights.stacked.iter().find(|st| {
            st.param.is_empty() || st.shards.is_empty() || st.shards.iter().any(String::is_empty)
        }) {
            return Err(bad(format!(
                "weights.stacked: param {:?} with shards {:?}: give a non-empty param and at least one non-empty shard",
                st.param, st.shards
            )));
        }
        // PyTorch takes no split limit below 20 MiB (kLargeBuffer; vLLM's
        // _scoped_allocator_max_split: "20 MiB is the minimum PyTorch allows"), and a limit
        // means nothing without the allocator it limits.
        let allocator_max_split = match file.weights.allocator_max_split_mib {
            None => None,
            Some(mib) if file.weights.allocator.is_none() => {
                return Err(bad(format!(
                    "weights.allocator_max_split_mib = {mib} without weights.allocator: a split limit needs the allocator it limits"
                )));
            }
            Some(mib) if mib < 20 => {
                return Err(bad(format!(
                    "weights.allocator_max_split_mib = {mib}: PyTorch's max_split_size_mb is at least 20"
                )));
            }
            Some(mib) => Some(mib.checked_mul(1 << 20).ok_or_else(|| {
                bad(format!(
                    "weights.allocator_max_split_mib = {mib}: overflows a byte count"
                ))
            })?),
        };
        if file.weights.released.iter().any(String::is_empty) {
            return Err(bad(
                "weights.released: an empty name ending would release every tensor".to_owned(),
            ));
        }
        let formula = |item: &str, text: &str| Formula::compile(origin, item, text);
        let terms = |section: &str, decls: &[TermDecl]| compile_terms(origin, section, decls);
        let flow = crate::mechanisms::compile_startup(&file.startup, origin)?;
        let run = match (
            &flow,
            file.kv_cache.take(),
            file.profile_run.take(),
            file.non_torch.take(),
            file.cuda_graph.take(),
        ) {
            (StartupFlow::ProfileRun, Some(kv), Some(run), Some(non_torch), Some(graphs)) => Some(
                compile_run(kv, run, non_torch, graphs, &file.defaults, origin)?,
            ),
            (StartupFlow::ProfileRun, ..) => {
                return Err(bad(
                    "the profile-run flow (the default [startup]) needs [kv_cache], [profile_run], [non_torch] and [cuda_graph]".to_owned(),
                ));
            }
            (_, None, None, None, None) if file.defaults.is_empty() => None,
            _ => {
                return Err(bad(
                    "[startup] names a flow without a profile run: [[defaults]], [kv_cache], [profile_run], [non_torch] and [cuda_graph] do not apply to it; remove them".to_owned(),
                ));
            }
        };
        let rotary_dtype = file
            .weights
            .architecture
            .iter()
            .map(|a| {
                let format: Format = a.rotary_dtype.parse().map_err(|e| {
                    bad(format!(
                        "weights.architecture.{}.rotary_dtype = {:?}: {e}",
                        a.name, a.rotary_dtype
                    ))
                })?;
                Ok((a.name.clone(), format))
            })
            .collect::<Result<_, EngineError>>()?;
        let defaults_clamp = match &file.defaults_clamp {
            None => None,
            Some(c) => Some((
                formula(
                    "defaults_clamp.max_num_batched_tokens",
                    &c.max_num_batched_tokens,
                )?,
                formula("defaults_clamp.max_num_seqs", &c.max_num_seqs)?,
            )),
        };
        Ok(Facts {
            load: load_rules(&file, origin)?,
            gptq_linears: linear_kernels(&file.load.gptq_linears, "gptq_linears", origin)?,
            awq_linears: linear_kernels(&file.load.awq_linears, "awq_linears", origin)?,
            defaults_clamp,
            runtime: file.runtime.clone().into_iter().collect(),
            created: terms("weights.created", &file.weights.created)?,
            rotary_caches: file.weights.rotary_caches,
            allocator: file.weights.allocator,
            allocator_max_split,
            stacked: file.weights.stacked.clone(),
            released: file.weights.released.clone(),
            engine: file.engine,
            version: file.version,
            releases: file.releases,
            model_len: file.model_len.rule,
            defaults: file.defaults,
            rotary_dtype,
            unsettled: file.unsettled,
            flow,
            run,
            origin: origin.to_owned(),
        })
    }
}

/// Compiles the profile-run flow's tables.
/// The terms `decls` of `section` compiled once (items named `section.name`, and
/// `section.name.count` for a count).
fn compile_terms(
    origin: &str,
    section: &str,
    decls: &[TermDecl],
) -> Result<Vec<Term>, EngineError> {
    let formula = |item: &str, text: &str| Formula::compile(origin, item, text);
    decls
        .iter()
        .map(|t| {
            Ok(Term {
                formula: formula(&format!("{section}.{}", t.name), &t.bytes)?,
                count: match &t.count {
                    Some(c) => Some(formula(&format!("{section}.{}.count", t.name), c)?),
                    None => None,
                },
                when_dim: t.when_dim.clone(),
                stage: t.stage,
                execution: t.execution,
                from_forward: t.from_forward,
            })
        })
        .collect()
}

fn compile_run(
    kv_decl: crate::file::KvCacheDecl,
    profile_run: crate::file::ProfileRunDecl,
    non_torch: NonTorchDecl,
    cuda_graph: crate::file::CudaGraphDecl,
    defaults: &[DefaultsRule],
    origin: &str,
) -> Result<RunFacts, EngineError> {
    let bad = |message: String| EngineError::Toml {
        origin: origin.to_owned(),
        message,
    };
    let slack = kv_decl.group_size_slack;
    if !(slack.is_finite() && slack >= 1.0) {
        return Err(bad(format!(
            "kv_cache.group_size_slack = {slack}: must be a finite number of at least 1"
        )));
    }
    if kv_decl.block_size == 0 {
        return Err(bad("kv_cache.block_size = 0: must be positive".to_owned()));
    }
    if defaults.is_empty() {
        return Err(bad(
            "defaults = []: give at least one rule (the last one without conditions)".to_owned(),
        ));
    }
    if let Some(r) = cuda_graph.capture_sizes.iter().find(|r| r.step == 0) {
        return Err(bad(format!(
            "cuda_graph.capture_sizes: range from {} has step 0: must be positive",
            r.start
        )));
    }
    let formula = |item: &str, text: &str| Formula::compile(origin, item, text);
    let terms = |section: &str, decls: &[TermDecl]| compile_terms(origin, section, decls);
    let kv = &kv_decl;
    let per = &kv.blocks_per_request;
    let util = kv.default_gpu_memory_utilization;
    if !(util > 0.0 && util <= 1.0) {
        return Err(bad(format!(
            "kv_cache.default_gpu_memory_utilization = {util}: must be in (0, 1]"
        )));
    }
    let measured = match (kv.budget, &kv.measured) {
        (Some(b), None) if b.needs_measured_margins() => {
            return Err(bad(format!(
                "kv_cache.budget = {:?} needs [kv_cache.measured] (margin_floor_bytes, margin_fraction, cuda_context_bytes, communicator_bytes)",
                b.name()
            )));
        }
        (_, Some(m)) if !(m.margin_fraction.is_finite() && m.margin_fraction >= 0.0) => {
            return Err(bad(format!(
                "kv_cache.measured.margin_fraction = {}: must be a finite number of at least 0",
                m.margin_fraction
            )));
        }
        (_, m) => m.as_ref().map(|m| crate::mechanisms::MeasuredFacts {
            margin_floor: m.margin_floor_bytes,
            margin_fraction: m.margin_fraction,
            cuda_context: m.cuda_context_bytes,
            communicators: m.communicator_bytes,
        }),
    };
    let kv = KvFacts {
        budget: kv.budget,
        measured,
        printed_tokens: kv.printed_tokens,
        recurrent_prefix_caching_by_default: kv.recurrent.prefix_caching_by_default,
        recurrent_align: kv.recurrent.align,
        default_gpu_memory_utilization: util,
        layout: kv.layout,
        block_size: kv.block_size,
        subtract_cuda_graph_estimate: kv.subtract_cuda_graph_estimate,
        hybrid_manager: kv.hybrid_manager,
        group_size_slack: slack,
        unify_page_sizes: kv.unify_page_sizes,
        startup_check: kv.startup_check,
        per_request_full: formula("kv_cache.blocks_per_request.full", &per.full)?,
        per_request_sliding: formula("kv_cache.blocks_per_request.sliding", &per.sliding)?,
        per_request_chunked: formula("kv_cache.blocks_per_request.chunked", &per.chunked)?,
        per_request_recurrent: formula("kv_cache.blocks_per_request.recurrent", &per.recurrent)?,
        recurrent_attention_block: formula(
            "kv_cache.recurrent.attention_block_size",
            &kv.recurrent.attention_block_size,
        )?,
        recurrent_block: formula("kv_cache.recurrent.block_size", &kv.recurrent.block_size)?,
    };
    let run = &profile_run;
    let encoder = match &run.encoder {
        None => None,
        Some(e) => Some(EncoderFacts {
            profiled: e.profiled,
            source: e.source.clone(),
            items: formula("profile_run.encoder.items", &e.items)?,
            default_limit_per_prompt: e.default_limit_per_prompt,
            held: terms("profile_run.encoder.held", &e.held)?,
            outputs: terms("profile_run.encoder.outputs", &e.outputs)?,
            peak: terms("profile_run.encoder.peak", &e.peak)?,
            architecture: e
                .architecture
                .iter()
                .map(|a| {
                    let item = |what: &str| {
                        format!(
                            "profile_run.encoder.architecture.{}.{what}",
                            a.names.first().map_or("", String::as_str)
                        )
                    };
                    let opt = |what: &str, t: &Option<Vec<TermDecl>>| {
                        t.as_ref().map(|t| terms(&item(what), t)).transpose()
                    };
                    Ok(EncoderArchitectureFacts {
                        names: a.names.clone(),
                        held: opt("held", &a.held)?,
                        outputs: opt("outputs", &a.outputs)?,
                        peak: opt("peak", &a.peak)?,
                        refuse: a.refuse.clone(),
                        video: match &a.video {
                            None => None,
                            Some(v) => Some(VideoFacts {
                                groups: formula(&item("video.groups"), &v.groups)?,
                                wins_tie: match v.tie.as_str() {
                                    "video" => true,
                                    "image" => false,
                                    other => {
                                        return Err(bad(format!(
                                            "{} = {other:?}: expected \"image\" or \"video\"",
                                            item("video.tie")
                                        )));
                                    }
                                },
                            }),
                        },
                    })
                })
                .collect::<Result<_, EngineError>>()?,
        }),
    };
    let profile_run = ProfileRunFacts {
        logits_rows: formula("profile_run.logits_rows", &run.logits_rows)?,
        persistent: terms("profile_run.persistent", &run.persistent)?,
        forward_held: terms("profile_run.forward_held", &run.forward_held)?,
        sampler_live: terms("profile_run.sampler_live", &run.sampler_live)?,
        resident: terms("profile_run.resident", &run.resident)?,
        encoder,
    };
    let g = &cuda_graph;
    let cuda_graph = CudaGraphFacts {
        max_capture_size: formula("cuda_graph.max_capture_size", &g.max_capture_size)?,
        architecture: g
            .architecture
            .iter()
            .map(|a| {
                let item = format!("cuda_graph.architecture.{}.max_capture_size", a.name);
                Ok((a.name.clone(), formula(&item, &a.max_capture_size)?))
            })
            .collect::<Result<_, EngineError>>()?,
        capture_sizes: g.capture_sizes.clone(),
        extra_sizes: g
            .extra_sizes
            .iter()
            .enumerate()
            .map(|(i, text)| formula(&format!("cuda_graph.extra_sizes[{i}]"), text))
            .collect::<Result<_, EngineError>>()?,
        estimate: g.estimate,
        modes: g
            .mode
            .iter()
            .map(|m| {
                let item = format!("cuda_graph.mode.{}.largest", m.name);
                Ok((m.name.clone(), formula(&item, &m.largest)?))
            })
            .collect::<Result<_, EngineError>>()?,
        first_capture_bytes: formula("cuda_graph.first_capture_bytes", &g.first_capture_bytes)?,
        per_capture_bytes: formula("cuda_graph.per_capture_bytes", &g.per_capture_bytes)?,
        min_per_capture_bytes: g.min_per_capture_bytes,
    };
    Ok(RunFacts {
        kv,
        profile_run,
        non_torch,
        cuda_graph,
    })
}

/// The `[load]` section as model-facts' rules.
fn load_rules(file: &EngineFile, origin: &str) -> Result<LoadRules, EngineError> {
    let bad = |message: String| EngineError::Toml {
        origin: origin.to_owned(),
        message,
    };
    let mxfp4_experts = match &file.load.mxfp4_experts {
        None => None,
        Some(m) => match m.layout.as_str() {
            "triton_hopper"
                if m.expert_ffn_multiple > 0
                    && m.scale_in_multiple.is_none_or(|k| k >= 32 && k % 32 == 0) =>
            {
                Some(Mxfp4ExpertLayout::TritonHopper {
                    expert_ffn_multiple: m.expert_ffn_multiple,
                    scale_in_multiple: m.scale_in_multiple.unwrap_or(32),
                })
            }
            "triton_hopper" if m.expert_ffn_multiple > 0 => {
                return Err(bad(format!(
                    "load.mxfp4_experts.scale_in_multiple = {}: must be a positive multiple of 32 (the MXFP4 block)",
                    m.scale_in_multiple.unwrap_or(0)
                )));
            }
            "triton_hopper" => {
                return Err(bad(
                    "load.mxfp4_experts.expert_ffn_multiple = 0: must be positive".to_owned(),
                ));
            }
            other => {
                return Err(bad(format!(
                    "load.mxfp4_experts.layout = {other:?}: the known layouts are \"triton_hopper\""
                )));
            }
        },
    };
    let vision_tower = match file.load.vision_tower.as_deref() {
        None | Some("whole") => TowerBuild::Whole,
        Some("read_by_projector") => TowerBuild::ReadByProjector,
        Some(other) => {
            return Err(bad(format!(
                "load.vision_tower = {other:?}: write \"whole\" or \"read_by_projector\""
            )));
        }
    };
    let mtp_layers = match file.load.mtp_layers.as_deref() {
        None | Some("held") => MtpLayers::Held,
        Some("skipped") => MtpLayers::Skipped,
        Some(other) => {
            return Err(bad(format!(
                "load.mtp_layers = {other:?}: write \"held\" or \"skipped\""
            )));
        }
    };
    Ok(LoadRules {
        mxfp4_experts,
        vision_tower,
        mtp_layers,
        gptq_linears: LinearKernel::Stored,
        awq_linears: LinearKernel::Stored,
    })
}

/// `[load] <key>` (`gptq_linears`, `awq_linears`): the device rules, in file order, with
/// their kernel library.
fn linear_kernels(
    rules: &[crate::file::LinearKernelDecl],
    key: &str,
    origin: &str,
) -> Result<Vec<(Conditions, LinearKernel)>, EngineError> {
    let bad = |message: String| EngineError::Toml {
        origin: origin.to_owned(),
        message,
    };
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            rule.when
                .check()
                .map_err(|m| bad(format!("load.{key}[{i}].{m}")))?;
            if !rule.when.device_only() {
                return Err(bad(format!(
                    "load.{key}[{i}].when: only device conditions (compute capability, vendor, total, product) may choose a load layout, which is fixed before the model is read"
                )));
            }
            let kernel = match rule.kernel.as_str() {
                "stored" => LinearKernel::Stored,
                "machete" => LinearKernel::Machete,
                "marlin" => LinearKernel::Marlin,
                other => {
                    return Err(bad(format!(
                        "load.{key}[{i}].kernel = {other:?}: write \"stored\", \"machete\" or \"marlin\""
                    )));
                }
            };
            Ok((rule.when.clone(), kernel))
        })
        .collect()
}
