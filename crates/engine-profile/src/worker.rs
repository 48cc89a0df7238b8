//! One worker of a stage predicted, in named phases: the names its terms read; the weights as
//! loaded; the forward planned at the profile run's rows; the persistent, held, sampler and
//! encoder terms; the activation peak and what sets it; the CUDA-graph estimate; the KV bytes
//! and blocks that remain.
//!
//! Invariants: the forward's live bytes are the planned activation arena of the stage's
//! circuit (memory-plan with the profile's families and rules) at `max_num_batched_tokens`
//! rows, with the logits nodes (the `lm_head` feeding the circuit's output and every node
//! between it and that output) at `min(n, logits_rows)` rows: never a closed formula; every sum
//! is checked.

use circuit_ir::{Circuit, CircuitBuilder, ExprText, NodeIdx, Op};
use memory_plan::{PlanConfig, Planner};

use crate::facts::{Where, sum};
use crate::formula::Env;
use crate::startup::Settled;
use crate::{EngineError, EngineProfile, Execution, PeakSetBy, RunSettings, StageCircuit, Worker};

/// The bytes of the profile run's parts on one worker.
struct Parts {
    forward_live: u64,
    forward_held: u64,
    sampler_live: u64,
    /// Persistent terms that exist before the forward (under an encoder's peak too).
    persistent_before_forward: u64,
    persistent: u64,
    encoder: crate::EncoderBytes,
}

impl Parts {
    /// The activation peak and the part that sets it: the encoder only when its own run is
    /// above all after it, else the forward (on a tie) or the sampler. The encoder runs first,
    /// beside its inputs; its outputs stay, with its inputs, through the forward and the
    /// sampler (the profile run keeps both until it returns).
    fn peak(&self, circuit: &Circuit) -> Result<(u64, PeakSetBy), EngineError> {
        let overflow = || EngineError::Overflow {
            what: format!("{}: activation peak", circuit.name()),
        };
        let forward = self
            .forward_live
            .checked_add(self.forward_held)
            .ok_or_else(overflow)?;
        let e = &self.encoder;
        let after_encoder = e
            .held
            .checked_add(e.outputs)
            .and_then(|v| v.checked_add(forward.max(self.sampler_live)))
            .and_then(|v| v.checked_add(self.persistent))
            .ok_or_else(overflow)?;
        let during_encoder = self
            .persistent_before_forward
            .checked_add(e.held)
            .and_then(|v| v.checked_add(e.peak))
            .ok_or_else(overflow)?;
        let set_by = if during_encoder > after_encoder {
            PeakSetBy::Encoder
        } else if forward >= self.sampler_live {
            PeakSetBy::Forward
        } else {
            PeakSetBy::Sampler
        };
        Ok((after_encoder.max(during_encoder), set_by))
    }
}

impl EngineProfile {
    /// What a worker of `stage` allocates (rank fields 0: the caller sets them).
    pub(crate) fn stage_worker(
        &self,
        stage: &StageCircuit<'_>,
        settled: &Settled,
        block_bytes: u64,
    ) -> Result<Worker, EngineError> {
        let circuit = stage.circuit;
        let at = Where {
            stage: stage.stage,
            stages: settled.stages,
            execution: settled.execution,
        };
        let device_figure = |e: EngineError| device_figure_missing(e, &settled.device);
        let mut env = self.stage_env(circuit, settled)?;
        let weights = self
            .loaded_weights(circuit, settled, &env, at)
            .map_err(device_figure)?;
        let logits_rows = self.facts.run()?.profile_run.logits_rows.eval(&env)?;
        let (forward_live, kernel_launches) = self.forward_live(
            circuit,
            settled.tokens,
            logits_rows,
            settled.device.sm_count,
        )?;
        let parts = self
            .profile_parts(circuit, settled, &env, at, forward_live)
            .map_err(device_figure)?;
        let (activation_peak, peak_set_by) = parts.peak(circuit)?;
        env.extend([("kernel_launches", kernel_launches)]);
        let cuda_graph = match settled.execution {
            Execution::Compiled => self.cuda_graph(&settled.model.architecture, &env)?,
            // An eager forward captures no graph and profiles no capture (vLLM's
            // --enforce-eager: cudagraph_mode NONE).
            Execution::Eager => crate::CudaGraphEstimate::default(),
        };
        let resident = sum(
            "profile_run.resident",
            &self.facts.run()?.profile_run.resident,
            &env,
            circuit,
            at,
        )?;
        let overflow = || EngineError::Overflow {
            what: format!("{}: non-KV bytes", circuit.name()),
        };
        let kv = &self.facts.run()?.kv;
        let (kv_cache, counted_non_kv) = match kv.budget {
            // The requested memory less weights, the run's peak and non-torch memory, and the
            // CUDA-graph estimate where the engine subtracts it.
            None => {
                let mut counted = weights
                    .checked_add(activation_peak)
                    .and_then(|v| v.checked_add(settled.non_torch))
                    .ok_or_else(overflow)?;
                if kv.subtract_cuda_graph_estimate {
                    counted = counted.checked_add(cuda_graph.total).ok_or_else(overflow)?;
                }
                (settled.requested.saturating_sub(counted), counted)
            }
            Some(mechanism) => crate::mechanisms::kv_budget(
                mechanism,
                &crate::mechanisms::BudgetInputs {
                    requested: settled.requested,
                    device_total: settled.device_total,
                    weights,
                    resident,
                    activation_peak,
                    persistent: parts.persistent,
                    non_torch: settled.non_torch,
                    cuda_graph: cuda_graph.total,
                    subtract_cuda_graph: kv.subtract_cuda_graph_estimate,
                    world_size: settled
                        .tp
                        .checked_mul(settled.stages)
                        .ok_or_else(overflow)?,
                    measured: kv.measured,
                },
            )
            .ok_or_else(overflow)?,
        };
        Ok(Worker {
            rank: 0,
            tp_rank: 0,
            pp_stage: stage.stage,
            weights,
            activation_peak,
            peak_set_by,
            forward_live: parts.forward_live,
            forward_held: parts.forward_held,
            sampler_live: parts.sampler_live,
            persistent: parts.persistent,
            resident,
            counted_non_kv,
            encoder: parts.encoder,
            non_torch: settled.non_torch,
            kv_cache,
            blocks: kv_cache.checked_div(block_bytes).unwrap_or(0),
            block_bytes,
            kernel_launches,
            cuda_graph,
        })
    }

    /// The names a stage's terms read: the run's, the device's and the model's, over the
    /// circuit's dims (`hidden`, `vocab`, `head_dim` must be among them).
    fn stage_env<'c>(
        &'c self,
        circuit: &'c Circuit,
        settled: &Settled,
    ) -> Result<Env<'c>, EngineError> {
        let need = |name: &'static str, why: &'static str| {
            circuit.dim(name).ok_or_else(|| EngineError::MissingDim {
                circuit: circuit.name().to_owned(),
                dim: name,
                why,
            })
        };
        need("hidden", "the engine file's activation terms")?;
        need("vocab", "the logits")?;
        let head_dim = need("head_dim", "the rotary cache")?;
        let rotary_dim = circuit.dim("qk_rope_head_dim").unwrap_or(head_dim);
        let model = &settled.model;
        // Attention layers: the cache layers holding per-token state.
        let attention_layers = crate::kv_layout::cache_layers(circuit, 0, model)?
            .iter()
            .filter(|l| l.kind != crate::LayerKind::Recurrent)
            .count() as u64;
        let mut names = vec![
            ("attention_layers", attention_layers),
            ("tokens", settled.tokens),
            ("max_num_seqs", settled.seqs),
            ("requests", settled.requests),
            ("max_model_len", settled.max_model_len),
            ("block_size", settled.block_size),
            ("vocab_size", model.vocab_size),
            ("dtype_bytes", settled.dtype_bytes),
            ("rotary_dim", rotary_dim),
            ("rotary_dtype_bytes", settled.rotary_dtype_bytes),
            ("max_position_embeddings", model.max_position_embeddings),
            ("sm_count", settled.device.sm_count),
        ];
        if let Some(l2) = settled.device.l2_cache_bytes {
            names.push(("l2_cache_bytes", l2));
        }
        Ok(Env::new(names, circuit).with_runtime(&self.facts.runtime))
    }

    /// The weights as loaded: the rotary caches and the other tensors the engine creates, and
    /// the circuit's tensors, each parameter (the checkpoint tensors `weights.stacked` puts in
    /// one) one allocation, in that order; the sum of the allocator's blocks
    /// (`weights.allocator`), else of their bytes.
    fn loaded_weights(
        &self,
        circuit: &Circuit,
        settled: &Settled,
        env: &Env<'_>,
        at: Where,
    ) -> Result<u64, EngineError> {
        let overflow = || EngineError::Overflow {
            what: format!("{}: weights", circuit.name()),
        };
        let mut allocations: Vec<u64> = Vec::new();
        if let Some(mechanism) = self.facts.rotary_caches {
            for r in &settled.model.rotary {
                let rows = crate::mechanisms::rotary_cache_rows(mechanism, &r.set, &settled.model)
                    .map_err(|what| {
                        crate::kv_layout::not_modelled(
                            circuit,
                            format!("the rotary cache of {what}"),
                        )
                    })?;
                let bytes = rows
                    .checked_mul(r.rotary_dim)
                    .and_then(|b| b.checked_mul(settled.rotary_dtype_bytes))
                    .ok_or_else(overflow)?;
                allocations.push(bytes);
            }
        }
        for term in self.facts.created.iter().filter(|t| t.applies(circuit, at)) {
            let (bytes, count) = term.tensors(env)?;
            let count = usize::try_from(count).map_err(|_| overflow())?;
            allocations.try_reserve(count).map_err(|_| overflow())?;
            allocations.extend(std::iter::repeat_n(bytes, count));
        }
        allocations.extend(
            parameters(circuit, &self.facts.stacked, &self.facts.released).ok_or_else(overflow)?,
        );
        held_bytes(
            self.facts.allocator,
            self.facts.allocator_max_split,
            &allocations,
        )
        .ok_or_else(overflow)
    }

    /// The profile run's parts besides the planned forward.
    fn profile_parts(
        &self,
        circuit: &Circuit,
        settled: &Settled,
        env: &Env<'_>,
        at: Where,
        forward_live: u64,
    ) -> Result<Parts, EngineError> {
        let run = &self.facts.run()?.profile_run;
        let persistent_of = |from_forward: bool| {
            sum(
                "profile_run.persistent",
                run.persistent
                    .iter()
                    .filter(|t| t.from_forward == from_forward),
                env,
                circuit,
                at,
            )
        };
        let persistent_before_forward = persistent_of(false)?;
        let persistent = persistent_before_forward
            .checked_add(persistent_of(true)?)
            .ok_or_else(|| EngineError::Overflow {
                what: format!("{}: persistent bytes", circuit.name()),
            })?;
        Ok(Parts {
            forward_live,
            forward_held: sum(
                "profile_run.forward_held",
                &run.forward_held,
                env,
                circuit,
                at,
            )?,
            sampler_live: sum(
                "profile_run.sampler_live",
                &run.sampler_live,
                env,
                circuit,
                at,
            )?,
            persistent_before_forward,
            persistent,
            encoder: self.encoder_run(settled, env, circuit, at)?,
        })
    }

    /// The forward's live bytes at `tokens` rows with the logits nodes at `logits_rows` rows
    /// (the planned activation arena of the circuit as the profile run shapes it), and its
    /// kernel launches (the fusion plan's groups that run a kernel).
    fn forward_live(
        &self,
        circuit: &Circuit,
        tokens: u64,
        logits_rows: u64,
        sm_count: u64,
    ) -> Result<(u64, u64), EngineError> {
        let plan_err = |message: String| EngineError::Plan {
            circuit: circuit.name().to_owned(),
            rows: tokens,
            message,
        };
        let shaped = profile_circuit(circuit, logits_rows).map_err(plan_err)?;
        let planner = Planner::new(
            &shaped,
            &self.families,
            &self.rules,
            self.rules.defaults(),
            PlanConfig::new(sm_count),
        )
        .map_err(|e| plan_err(e.to_string()))?;
        let plan = planner.plan(tokens).map_err(|e| plan_err(e.to_string()))?;
        // The kernel-less groups (weights_only nodes: a vision tower, MTP layers; the engine
        // plans with no other placeholder) launch nothing a graph would record.
        let launches = plan.groups - plan.placeholders;
        Ok((plan.totals.activations, launches as u64))
    }
}

/// The device figures a term may read, with what they are in words.
const DEVICE_FIGURES: &[(&str, &str)] = &[(
    "l2_cache_bytes",
    "L2 cache size (torch.compile's autotuning flushes it; --enforce-eager runs without it)",
)];

/// A term reading a device figure the table does not give is a refusal naming the device and
/// the figure, not an unbound name.
fn device_figure_missing(e: EngineError, device: &kernel_families::Device) -> EngineError {
    match e {
        EngineError::UnboundName { item, name, .. }
            if DEVICE_FIGURES.iter().any(|(n, _)| *n == name) =>
        {
            let what = DEVICE_FIGURES
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, w)| w);
            EngineError::DeviceNotModelled {
                device: device.name.clone(),
                why: format!(
                    "its {what} is not in the device table, and the engine file's {item} reads it"
                ),
            }
        }
        other => other,
    }
}

/// One worker's profile run laid out for a picture: the forward as the profile run shapes it
/// (the logits nodes at the logits rows), its planned arena at the profile rows, and each term
/// the run holds beside it, named as the engine file names it (`profile_run.sampler_live.logits`).
#[derive(Debug, Clone)]
pub struct ProfileRunMap {
    /// The pipeline stage.
    pub stage: u64,
    /// The stage's circuit as the profile run computes it (the arena's buffers name its nodes
    /// and edges).
    pub circuit: Circuit,
    /// The forward's arena at the profile run's rows.
    pub arena: memory_plan::ArenaLayout,
    /// Terms held across the whole run (`profile_run.persistent`), those the forward allocates
    /// included.
    pub persistent: Vec<(String, u64)>,
    /// Terms held beside the forward at its peak (`profile_run.forward_held`).
    pub forward_held: Vec<(String, u64)>,
    /// Terms live at the sampler, after the forward (`profile_run.sampler_live`).
    pub sampler_live: Vec<(String, u64)>,
    /// What the multimodal encoder's run holds, before the forward (all zero without one).
    pub encoder: crate::EncoderBytes,
}

impl EngineProfile {
    /// The profile run of a worker of pipeline stage `stage` under `run`, laid out for a
    /// picture (the same forward and terms [`EngineProfile::predict_layout`] sums).
    pub fn profile_run_map(
        &self,
        stages: &[StageCircuit<'_>],
        run: &RunSettings,
        stage: u64,
    ) -> Result<ProfileRunMap, EngineError> {
        let profile = self.resolve_for(stages, run)?;
        let profile = profile.as_ref();
        let settled = profile.settle(stages, run)?;
        let Some(found) = stages.iter().find(|s| s.stage == stage) else {
            return Err(EngineError::BadSetting {
                what: "stage",
                value: stage.to_string(),
                why: "not a stage of the layout",
            });
        };
        let circuit = found.circuit;
        let at = Where {
            stage,
            stages: settled.stages,
            execution: settled.execution,
        };
        let env = profile.stage_env(circuit, &settled)?;
        let logits_rows = profile.facts.run()?.profile_run.logits_rows.eval(&env)?;
        let plan_err = |message: String| EngineError::Plan {
            circuit: circuit.name().to_owned(),
            rows: settled.tokens,
            message,
        };
        let shaped = profile_circuit(circuit, logits_rows).map_err(plan_err)?;
        let arena = {
            let planner = Planner::new(
                &shaped,
                &profile.families,
                &profile.rules,
                profile.rules.defaults(),
                PlanConfig::new(settled.device.sm_count),
            )
            .map_err(|e| plan_err(e.to_string()))?;
            planner
                .arena_layout(settled.tokens)
                .map_err(|e| plan_err(e.to_string()))?
        };
        let device_figure = |e: EngineError| device_figure_missing(e, &settled.device);
        let named = |terms: &[crate::facts::Term]| -> Result<Vec<(String, u64)>, EngineError> {
            terms
                .iter()
                .filter(|t| t.applies(circuit, at))
                .map(|t| {
                    let bytes = t.formula.eval(&env).map_err(device_figure)?;
                    Ok((t.formula.item().to_owned(), bytes))
                })
                .collect()
        };
        let run_facts = &profile.facts.run()?.profile_run;
        Ok(ProfileRunMap {
            stage,
            persistent: named(&run_facts.persistent)?,
            forward_held: named(&run_facts.forward_held)?,
            sampler_live: named(&run_facts.sampler_live)?,
            encoder: profile
                .encoder_run(&settled, &env, circuit, at)
                .map_err(device_figure)?,
            arena,
            circuit: shaped,
        })
    }
}

/// The bytes `allocations` (made one after another, none freed) hold as `allocator` counts
/// them: the caching allocator's blocks or segments (under the split limit `max_split`), else
/// their sum (`None` on overflow).
pub(crate) fn held_bytes(
    allocator: Option<crate::file::Allocator>,
    max_split: Option<u64>,
    allocations: &[u64],
) -> Option<u64> {
    let Some(kind) = allocator else {
        return allocations
            .iter()
            .try_fold(0u64, |acc, &b| acc.checked_add(b));
    };
    let mut a = match max_split {
        None => crate::torch_allocator::CachingAllocator::default(),
        Some(m) => crate::torch_allocator::CachingAllocator::with_max_split(m),
    };
    for &b in allocations {
        a.malloc(b)?;
    }
    Some(match kind {
        crate::file::Allocator::TorchCaching => a.allocated(),
        crate::file::Allocator::TorchCachingSegments => a.reserved(),
    })
}

/// The bytes of each parameter the engine allocates for `circuit`'s tensors, in the order of
/// their first tensor: a tensor whose name contains a shard of a `stacked` rule (the first
/// rule and shard found) belongs to the parameter named with the rule's `param` in its place,
/// with every other tensor of that name; any other tensor is a parameter of its own; a tensor
/// whose name ends with one of `released` is read and freed while loading, so held by none
/// (`None` on overflow).
pub(crate) fn parameters(
    circuit: &Circuit,
    stacked: &[crate::file::StackedDecl],
    released: &[String],
) -> Option<Vec<u64>> {
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut bytes: Vec<u64> = Vec::new();
    for t in circuit.tensors().values() {
        if released.iter().any(|end| t.name.ends_with(end.as_str())) {
            continue;
        }
        let param = stacked.iter().find_map(|rule| {
            rule.shards
                .iter()
                .find(|shard| t.name.contains(shard.as_str()))
                .map(|shard| t.name.replacen(shard.as_str(), &rule.param, 1))
        });
        let name = param.unwrap_or_else(|| t.name.clone());
        match index.get(&name) {
            Some(&i) => bytes[i] = bytes[i].checked_add(t.bytes)?,
            None => {
                index.insert(name, bytes.len());
                bytes.push(t.bytes);
            }
        }
    }
    Some(bytes)
}

/// The nodes that compute logits: each `lm_head` node from which a circuit output is reached,
/// and every node on the way from it to that output (a soft-cap, a scale, the all-gather of a
/// tensor-parallel vocabulary).
fn logits_nodes(circuit: &Circuit) -> Vec<NodeIdx> {
    let (nodes, edges) = (circuit.nodes(), circuit.edges());
    // Downstream of an lm_head: its outputs' readers, and theirs.
    let mut downstream: Vec<NodeIdx> = nodes
        .iter()
        .filter(|(_, n)| n.op == Op::LmHead)
        .map(|(i, _)| i)
        .collect();
    let mut i = 0;
    while i < downstream.len() {
        for &e in &nodes[downstream[i]].outputs {
            for &reader in &edges[e].readers {
                if !downstream.contains(&reader) {
                    downstream.push(reader);
                }
            }
        }
        i += 1;
    }
    // Of those, the ones a circuit output is reached from: walking back from the outputs'
    // producers through downstream nodes only, up to the lm_head.
    let mut found: Vec<NodeIdx> = circuit
        .outputs()
        .iter()
        .filter_map(|&e| edges[e].producer)
        .filter(|p| downstream.contains(p))
        .collect();
    let mut i = 0;
    while i < found.len() {
        let node = &nodes[found[i]];
        if node.op != Op::LmHead {
            for &e in &node.inputs {
                if let Some(p) = edges[e].producer
                    && downstream.contains(&p)
                    && !found.contains(&p)
                {
                    found.push(p);
                }
            }
        }
        i += 1;
    }
    found.sort_unstable();
    found.dedup();
    found
}

/// The circuit as the profile run computes it: the logits nodes at `min(n, logits_rows)` rows,
/// the last token of each request.
fn profile_circuit(circuit: &Circuit, logits_rows: u64) -> Result<Circuit, String> {
    let targets: Vec<(String, String)> = logits_nodes(circuit)
        .into_iter()
        .map(|i| {
            let node = &circuit.nodes()[i];
            let block = circuit.instances()[node.instance].block.clone();
            (block, node.local.clone())
        })
        .collect();
    let mut decl = circuit.decl().clone();
    for block in &mut decl.blocks {
        for node in &mut block.nodes {
            if !targets.contains(&(block.name.clone(), node.id.clone())) {
                continue;
            }
            for out in &mut node.outputs {
                out.rows = ExprText::from(format!("min({}, {logits_rows})", out.rows.as_str()));
            }
        }
    }
    CircuitBuilder::from_decl(decl, circuit.name())
        .build()
        .map_err(|e| e.to_string())
}
