//! SGLang's expert parallelism (`--ep-size`, and `--enable-ep-moe` in the releases that take
//! it) as a release's engine file states it (`[startup.sglang.expert_parallel]`, docs/engines.md
//! "Expert parallelism"): whether the release is modelled, the model classes whose experts are
//! placed as the stage circuits hold them, and the checks SGLang makes of the sizes.
//!
//! Invariants: the circuits are the caller's, imported with expert-parallel groups of the size
//! this module returns (circuit-hf's `ExpertSplit::Groups`); a stage whose `local_experts` is
//! not `experts / ep` is refused, never predicted; nothing else of the start-up reads the size
//! (SGLang's reserve, defaults and pool do not read ep_size: arg_groups/memory_hook.py:357-399
//! reads the attention DP size and the DeepEP all-to-all backend only); a release or class not
//! read is refused with the engine file's reason.

use serde::Deserialize;

use super::SglangFlags;
use crate::{EngineError, EngineProfile, StageCircuit};

/// `[startup.sglang.expert_parallel]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpertParallelDecl {
    /// Why the release's `--ep-size` above 1 is refused; absent: it is modelled.
    #[serde(default)]
    pub refused: Option<String>,
    /// The model classes (`architectures[0]`) whose experts the release places as
    /// expert-parallel groups do: `experts / ep` routed experts a rank, each split over
    /// `tp / ep` ranks, the shared experts one MLP over all `tp` ranks.
    pub classes: Vec<String>,
    /// What `--enable-ep-moe` does: `ep_equals_tp` (it sets ep_size to tp_size) or why the
    /// release refuses it.
    pub enable_ep_moe: String,
}

/// `[startup.sglang.expert_parallel]`, compiled.
#[derive(Debug, Clone)]
pub(crate) struct ExpertParallel {
    refused: Option<String>,
    classes: Vec<String>,
    enable_ep_moe_refused: Option<String>,
}

impl ExpertParallel {
    /// Compiles `decl` (None: the engine file states no expert parallelism, so it is refused).
    pub(crate) fn compile(decl: Option<&ExpertParallelDecl>) -> ExpertParallel {
        match decl {
            None => ExpertParallel {
                refused: Some("the engine file states no expert parallelism".to_owned()),
                classes: Vec::new(),
                enable_ep_moe_refused: Some(
                    "the engine file states no expert parallelism".to_owned(),
                ),
            },
            Some(d) => ExpertParallel {
                refused: d.refused.clone(),
                classes: d.classes.clone(),
                enable_ep_moe_refused: (d.enable_ep_moe != "ep_equals_tp")
                    .then(|| d.enable_ep_moe.clone()),
            },
        }
    }
}

/// The expert-parallel size the run asks for (`--enable-ep-moe` sets it to tp where the
/// release takes the flag), checked against the release, the model and the stage circuits.
pub(crate) fn expert_parallel_size(
    profile: &EngineProfile,
    facts: &ExpertParallel,
    flags: &SglangFlags,
    tp: u64,
    stages: &[StageCircuit<'_>],
    architecture: &str,
) -> Result<u64, EngineError> {
    let who = format!("SGLang {}", profile.version());
    if flags.enable_ep_moe
        && let Some(why) = &facts.enable_ep_moe_refused
    {
        return Err(EngineError::FlagRefused {
            flag: "--enable-ep-moe".to_owned(),
            why: why.clone(),
        });
    }
    let ep = if flags.enable_ep_moe {
        tp
    } else {
        flags.ep_size.unwrap_or(1)
    };
    let flag = if flags.enable_ep_moe {
        format!("--enable-ep-moe (ep_size = tp_size = {tp})")
    } else {
        format!("--ep-size {ep}")
    };
    let refused = |why: String| EngineError::FlagRefused {
        flag: flag.clone(),
        why,
    };
    if ep == 0 {
        return Err(refused(
            "SGLang's expert-parallel groups need at least one rank; give 1 or more".to_owned(),
        ));
    }
    if ep == 1 {
        return Ok(1);
    }
    if let Some(why) = &facts.refused {
        return Err(refused(why.clone()));
    }
    if !tp.is_multiple_of(ep) {
        // moe_tp_size = tp_size // ep_size (0.5.23 runtime_context.py:154; 0.5.1
        // distributed/parallel_state.py:1453): the groups tile the TP group.
        return Err(refused(format!(
            "{who} builds its MoE groups as tp_size // ep_size ranks each, so ep_size must divide --tp-size {tp}"
        )));
    }
    for s in stages {
        let c = s.circuit;
        let (Some(experts), Some(local)) = (c.dim("experts"), c.dim("local_experts")) else {
            return Err(refused(format!(
                "{}: the model has no experts for SGLang to place, so the flag would change nothing; drop it",
                c.name()
            )));
        };
        if experts.checked_div(ep) != Some(local) {
            return Err(EngineError::BadSetting {
                what: "stage circuits",
                value: format!("{}: {local} experts a rank", c.name()),
                why: "import them with the expert-parallel groups of the run's ep size (ImportOptions::experts)",
            });
        }
    }
    if !facts.classes.iter().any(|c| c == architecture) {
        return Err(EngineError::Refused {
            engine: "SGLang".to_owned(),
            version: profile.version().to_owned(),
            why: format!(
                "expert parallelism of {architecture} is not modelled (the classes read: {})",
                facts.classes.join(", ")
            ),
        });
    }
    Ok(ep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enable_ep_moe_is_refused_unless_it_sets_ep_to_tp() {
        let taken = ExpertParallelDecl {
            refused: None,
            classes: vec!["MixtralForCausalLM".to_owned()],
            enable_ep_moe: "ep_equals_tp".to_owned(),
        };
        assert_eq!(
            ExpertParallel::compile(Some(&taken)).enable_ep_moe_refused,
            None
        );
        let gone = ExpertParallelDecl {
            enable_ep_moe: "removed".to_owned(),
            ..taken
        };
        assert_eq!(
            ExpertParallel::compile(Some(&gone)).enable_ep_moe_refused,
            Some("removed".to_owned())
        );
        assert_eq!(
            ExpertParallel::compile(None).refused,
            Some("the engine file states no expert parallelism".to_owned())
        );
    }
}
