//! SGLang's recurrent-state ("mamba") pool beside the KV cache (`[startup.sglang.mamba]`,
//! docs/engines.md "Recurrent state"): how many state slots K a release sizes (a share of the
//! rest by `--mamba-full-memory-ratio`, or a fixed count), what the rest loses before the KV
//! tokens are counted, what the pool allocates, how K caps `max_running_requests`, and the
//! errors SGLang raises; `--mamba-full-memory-ratio` and `--max-mamba-cache-size` as the
//! release takes them.
//!
//! Invariants: every number that differs between releases is the engine file's (the rule, the
//! ratio's default, the slots held beyond K, the pool's bytes as formulas, the slots a request
//! takes, the messages), never a release test in Rust; the arithmetic follows SGLang's own
//! types (the rest is a GiB float, K a float floor made an integer); every byte count is
//! checked u64; a flag the release or the model gives no meaning is refused naming it.

use serde::Deserialize;

use super::SglangFlags;
use crate::EngineError;
use crate::formula::{Env, Formula};

const GIB: f64 = (1u64 << 30) as f64;

/// How a release finds K, the slot count, without `--max-mamba-cache-size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotRule {
    /// A share of the rest (`[startup.sglang.mamba.ratio]`): `budget = rest x r / (1 + r)`
    /// (r = `--mamba-full-memory-ratio`), `K = int((budget - less_slots x slot) // slot)`.
    Ratio,
    /// A count (`[startup.sglang.mamba.fixed]`): `--max-running-requests` when given, else
    /// `default_slots`.
    Fixed,
}

/// The ratio rule's numbers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatioDecl {
    /// `--mamba-full-memory-ratio`'s default.
    pub default: f64,
    /// Slots taken off the budget before dividing (the pool's padding slot).
    pub less_slots: u64,
}

/// The fixed rule's numbers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixedDecl {
    /// K without `--max-running-requests`.
    pub default_slots: u64,
}

/// `[startup.sglang.mamba]` as written. `slots` names the rule and its table gives its
/// numbers; a table of the other rule inherited from a newer folder is not read (`extends`
/// merges tables, it cannot remove one). An empty message means the release raises none.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MambaDecl {
    /// The classes sized this way (the expression below reads their dims); any other class
    /// with recurrent layers is refused.
    pub architectures: Vec<String>,
    /// One recurrent layer's state of one slot, bytes: an expression over the circuit's dims.
    pub state_bytes_per_layer: String,
    /// How K is found without `--max-mamba-cache-size`.
    pub slots: SlotRule,
    /// The ratio rule's numbers.
    #[serde(default)]
    pub ratio: Option<RatioDecl>,
    /// The fixed rule's numbers.
    #[serde(default)]
    pub fixed: Option<FixedDecl>,
    /// The slots the rest loses before the KV tokens are counted: an expression over `slots`
    /// (K).
    pub held_slots: String,
    /// The bytes the state pool allocates: an expression over `slots` (K), `slot_bytes` and
    /// `max_running_requests`.
    pub pool_bytes: String,
    /// State slots a running request takes: `max_running_requests` is at most K // this.
    pub slots_per_request: u64,
    /// SGLang's error when K is not positive ({slots}, {rest}, {per_slot_mb} filled in).
    pub no_slots: String,
    /// SGLang's error when the cap leaves no request ({slots}, {ratio}, {requests}); without
    /// it the request count's own assertion follows.
    pub no_requests: String,
}

/// The rule, compiled.
#[derive(Debug, Clone, Copy)]
enum Rule {
    Ratio { ratio: f64, less_slots: u64 },
    Fixed { default_slots: u64 },
}

/// The recurrent-state pool, compiled.
#[derive(Debug, Clone)]
pub(crate) struct Mamba {
    pub(crate) architectures: Vec<String>,
    pub(crate) state_bytes_per_layer: Formula,
    rule: Rule,
    held_slots: Formula,
    pool_bytes: Formula,
    slots_per_request: u64,
    no_slots: Option<String>,
    no_requests: Option<String>,
}

impl Mamba {
    /// Compiles `decl` (`origin` names the engine file).
    pub(crate) fn compile(decl: &MambaDecl, origin: &str) -> Result<Mamba, EngineError> {
        let bad = |message: String| EngineError::Toml {
            origin: origin.to_owned(),
            message: format!("startup.sglang.mamba.{message}"),
        };
        let f = |item: &str, text: &str| {
            Formula::compile(origin, &format!("startup.sglang.mamba.{item}"), text)
        };
        let rule = match decl.slots {
            SlotRule::Ratio => {
                let r = decl
                    .ratio
                    .as_ref()
                    .ok_or_else(|| bad("ratio: the ratio rule needs its table".to_owned()))?;
                if !(r.default > 0.0 && r.default.is_finite()) {
                    return Err(bad(format!(
                        "ratio.default = {}: must be positive",
                        r.default
                    )));
                }
                Rule::Ratio {
                    ratio: r.default,
                    less_slots: r.less_slots,
                }
            }
            SlotRule::Fixed => Rule::Fixed {
                default_slots: decl
                    .fixed
                    .as_ref()
                    .ok_or_else(|| bad("fixed: the fixed rule needs its table".to_owned()))?
                    .default_slots,
            },
        };
        if decl.slots_per_request == 0 {
            return Err(bad("slots_per_request = 0: must be positive".to_owned()));
        }
        Ok(Mamba {
            architectures: decl.architectures.clone(),
            state_bytes_per_layer: f("state_bytes_per_layer", &decl.state_bytes_per_layer)?,
            rule,
            held_slots: f("held_slots", &decl.held_slots)?,
            pool_bytes: f("pool_bytes", &decl.pool_bytes)?,
            slots_per_request: decl.slots_per_request,
            no_slots: Some(decl.no_slots.clone()).filter(|m| !m.is_empty()),
            no_requests: Some(decl.no_requests.clone()).filter(|m| !m.is_empty()),
        })
    }
}

/// Refuses the state-pool flags where they mean nothing: `sized` says whether the model's
/// recurrent layers get a pool under this release (`who` names the release, `model` the
/// class).
pub(crate) fn check_flags(
    mamba: Option<&Mamba>,
    sized: bool,
    flags: &SglangFlags,
    who: &str,
    model: &str,
) -> Result<(), EngineError> {
    let given = [
        (
            flags.mamba_full_memory_ratio.is_some(),
            "--mamba-full-memory-ratio",
        ),
        (
            flags.max_mamba_cache_size.is_some(),
            "--max-mamba-cache-size",
        ),
    ];
    for (set, flag) in given {
        if set && !sized {
            return Err(EngineError::FlagRefused {
                flag: flag.to_owned(),
                why: format!(
                    "{model} has no recurrent state that {who} sizes a mamba pool for, so the flag changes nothing; drop it"
                ),
            });
        }
    }
    if let Some(r) = flags.mamba_full_memory_ratio {
        if let Some(Mamba {
            rule: Rule::Fixed { default_slots },
            ..
        }) = mamba
        {
            return Err(EngineError::FlagRefused {
                flag: "--mamba-full-memory-ratio".to_owned(),
                why: format!(
                    "{who} has no such flag: it holds a fixed count of state slots (--max-mamba-cache-size, else --max-running-requests, else {default_slots})"
                ),
            });
        }
        if !(r > 0.0 && r.is_finite()) {
            return Err(EngineError::BadSetting {
                what: "mamba_full_memory_ratio",
                value: r.to_string(),
                why: "must be a positive number",
            });
        }
    }
    Ok(())
}

/// What the state pool takes out of the rest before the KV tokens are counted.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// K (`max_mamba_cache_size`); 0 when it is not positive.
    pub(crate) slots: u64,
    /// Bytes the rest loses (`held_slots` x the slot).
    pub(crate) bytes: u64,
    /// SGLang's error when K is not positive, and the bytes short.
    pub(crate) refusal: Option<(String, u64)>,
}

/// K and what the rest loses, from the rest (GiB, as SGLang holds it) and one slot's bytes.
pub(crate) fn hold(
    m: &Mamba,
    rest_gib: f64,
    slot: u64,
    flags: &SglangFlags,
    requested_running: Option<u64>,
    label: &str,
) -> Result<Held, EngineError> {
    let overflow = || EngineError::Overflow {
        what: "recurrent state pool".to_owned(),
    };
    let slot_f = slot as f64;
    // K as SGLang computes it: a given --max-mamba-cache-size (the dp shard without attention
    // DP is the whole), else the rule.
    let k: f64 = match (flags.max_mamba_cache_size, m.rule) {
        (Some(given), _) => given as f64,
        (None, Rule::Ratio { ratio, less_slots }) => {
            let r = flags.mamba_full_memory_ratio.unwrap_or(ratio);
            let budget = rest_gib * r / (1.0 + r) * GIB;
            // int((budget - n x slot) // slot): a float floor, then an integer.
            ((budget - less_slots as f64 * slot_f) / slot_f).floor()
        }
        (None, Rule::Fixed { default_slots }) => requested_running.unwrap_or(default_slots) as f64,
    };
    if k <= 0.0
        && let Some(message) = &m.no_slots
    {
        let budget = match m.rule {
            Rule::Ratio { ratio, .. } => {
                let r = flags.mamba_full_memory_ratio.unwrap_or(ratio);
                rest_gib * r / (1.0 + r) * GIB
            }
            Rule::Fixed { .. } => 0.0,
        };
        let short_by = (2.0 * slot_f - budget).ceil().max(1.0) as u64;
        let text = message
            .replace("{slots}", &format!("{k}"))
            .replace("{rest}", &format!("{rest_gib:.2}"))
            .replace(
                "{per_slot_mb}",
                &format!("{:.2}", slot_f / (1u64 << 20) as f64),
            );
        return Ok(Held {
            slots: 0,
            bytes: 0,
            refusal: Some((text, short_by)),
        });
    }
    let slots = if k > 0.0 { k as u64 } else { 0 };
    let env = Env::names_only(vec![("slots", slots)], label);
    let bytes = m
        .held_slots
        .eval(&env)?
        .checked_mul(slot)
        .ok_or_else(overflow)?;
    Ok(Held {
        slots,
        bytes,
        refusal: None,
    })
}

/// `max_running_requests` under the state pool's cap (`resolve_max_num_reqs`): at most K //
/// the slots a request takes; SGLang's error when none is left (a release with the check).
pub(crate) fn cap_requests(m: &Mamba, running: u64, slots: u64) -> (u64, Option<String>) {
    let capped = running.min(request_cap(m, slots));
    let refusal = match &m.no_requests {
        Some(message) if capped == 0 => Some(
            message
                .replace("{slots}", &slots.to_string())
                .replace("{ratio}", &m.slots_per_request.to_string())
                .replace("{requests}", &capped.to_string()),
        ),
        _ => None,
    };
    (capped, refusal)
}

/// The most requests K slots serve.
pub(crate) fn request_cap(m: &Mamba, slots: u64) -> u64 {
    slots / m.slots_per_request
}

/// The bytes the state pool allocates once the requests are known.
pub(crate) fn pool_bytes(
    m: &Mamba,
    slots: u64,
    slot: u64,
    running: u64,
    label: &str,
) -> Result<u64, EngineError> {
    let env = Env::names_only(
        vec![
            ("slots", slots),
            ("slot_bytes", slot),
            ("max_running_requests", running),
        ],
        label,
    );
    m.pool_bytes.eval(&env)
}
