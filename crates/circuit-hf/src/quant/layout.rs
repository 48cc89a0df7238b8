//! What one quantized module stores: a [`Layout`] is the list of tensors a format writes for
//! a linear module of `out x in` elements, each with its name, its shape as a small expression
//! over `out` and `in`, and its storage format. A layout is built once per format (or config
//! group) and applied to every module it covers.
//!
//! Invariants: a shape that divides (`in / 8`) is applied only when it divides exactly (an
//! error names the module otherwise); a shape that rounds up (`ceil_div(out, 128)`) says so in
//! its expression; leading dimensions of the weight (experts stacked in one tensor) and its
//! `count` carry over to every stored tensor, so per-expert tensors stay per expert.

use circuit_ir::decl::WeightDecl;
use circuit_ir::{Expr, ExprText};

/// A size of a stored tensor, as an expression over the module's `out` and `in` widths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Size {
    /// Output features (rows of the unquantized weight).
    Out,
    /// Input features (the reduction width).
    In,
    /// The module's whole input features: on a row-parallel rank its shard times the ranks
    /// (act order keeps every group's scales there), else `In`.
    InWhole,
    /// A constant.
    Lit(u64),
    /// `size / k`, which must divide exactly.
    Div(Box<Size>, u64),
    /// `ceil(size / k)`.
    CeilDiv(Box<Size>, u64),
    /// `size` rounded up to a multiple of `k` (a kernel layout's padding).
    RoundUp(Box<Size>, u64),
    /// `size * k`.
    Mul(Box<Size>, u64),
}

impl Size {
    pub(crate) fn div(self, k: u64) -> Size {
        Size::Div(Box::new(self), k)
    }

    pub(crate) fn ceil_div(self, k: u64) -> Size {
        Size::CeilDiv(Box::new(self), k)
    }

    pub(crate) fn mul(self, k: u64) -> Size {
        Size::Mul(Box::new(self), k)
    }

    pub(crate) fn round_up(self, k: u64) -> Size {
        Size::RoundUp(Box::new(self), k)
    }
}

/// How a stored tensor is named from the unquantized parameter `<module>.<param>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Name {
    /// `<module>.<name>`: a parameter of the quantized module (`qweight`, `weight_scale`).
    Sibling(&'static str),
    /// `<module>.<param><suffix>`: a companion of a fused expert parameter, which a format
    /// stores for those only (transformers' MXFP4: `gate_up_proj_blocks`).
    Suffix(&'static str),
    /// `<module>.<param><suffix>`: the parameter itself (suffix "") or a companion named after
    /// it, for a module's `weight` (`weight`, `weight_scale`) as for a fused expert parameter
    /// (`gate_up_proj`, `gate_up_proj_scale`).
    Param(&'static str),
}

/// One tensor a format stores for a quantized module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stored {
    pub(crate) name: Name,
    pub(crate) shape: Vec<Size>,
    /// A circuit-ir format name (`i32`, `fp8`, `u8`, `f32`, `bf16`, ...).
    pub(crate) format: String,
}

impl Stored {
    pub(crate) fn new(name: &'static str, shape: Vec<Size>, format: impl Into<String>) -> Stored {
        Stored {
            name: Name::Sibling(name),
            shape,
            format: format.into(),
        }
    }

    pub(crate) fn suffix(
        suffix: &'static str,
        shape: Vec<Size>,
        format: impl Into<String>,
    ) -> Stored {
        Stored {
            name: Name::Suffix(suffix),
            shape,
            format: format.into(),
        }
    }

    pub(crate) fn param(
        suffix: &'static str,
        shape: Vec<Size>,
        format: impl Into<String>,
    ) -> Stored {
        Stored {
            name: Name::Param(suffix),
            shape,
            format: format.into(),
        }
    }
}

/// What happens to the module's bias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bias {
    /// Kept as the model stores it.
    Keep,
    /// Stored in `format`; added, of `out` elements, when the model has none (AutoGPTQ's
    /// QuantLinear always registers one).
    Always(&'static str),
    /// Stored in `format` when the model has one.
    As(&'static str),
}

/// The tensors a format stores for one quantized module, and what becomes of its bias.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) tensors: Vec<Stored>,
    pub(crate) bias: Bias,
}

/// A dimension being evaluated: its expression text and its value.
#[derive(Debug, Clone)]
struct Dim {
    text: String,
    value: u64,
}

/// Why a layout does not apply to a module's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Misfit {
    /// What does not divide, e.g. `in_features 100 is not a multiple of 128`.
    pub(crate) what: String,
}

/// The unquantized weight a layout replaces.
pub(crate) struct Original<'a> {
    /// The weight declaration as emitted (shape `[..., out, in]`).
    pub(crate) decl: &'a WeightDecl,
    /// Its tensor name with the layer index expanded or still `{i}`.
    pub(crate) tensor: &'a str,
    /// Evaluates an expression of the circuit's dims.
    pub(crate) eval: &'a dyn Fn(&ExprText) -> Option<u64>,
    /// The ranks the module's input features are split over: the tensor-parallel size for a
    /// row-parallel module, else 1.
    pub(crate) in_ranks: u64,
}

impl Layout {
    /// Whether the format stores companions of fused expert parameters only
    /// (`<param>_blocks`, as gpt-oss's fused expert tensors are), so a module's `weight` is
    /// outside it.
    pub(crate) fn fused_parameters_only(&self) -> bool {
        self.tensors
            .iter()
            .any(|t| matches!(t.name, Name::Suffix(_)))
    }

    /// The weights stored for `original`, named after its tensor (`module.weight` gives
    /// `module.qweight`, `module.experts.gate_up_proj` gives
    /// `module.experts.gate_up_proj_blocks`).
    pub(crate) fn apply(&self, original: &Original<'_>) -> Result<Vec<WeightDecl>, Misfit> {
        let w = original.decl;
        let n = w.shape.len();
        if n < 2 {
            return Err(Misfit {
                what: format!("a weight of {n} dimension(s) is not a linear weight"),
            });
        }
        let dim = |e: &ExprText| -> Result<Dim, Misfit> {
            let value = (original.eval)(e).ok_or_else(|| Misfit {
                what: format!("the size `{e}` does not evaluate"),
            })?;
            Ok(Dim {
                text: e.as_str().to_owned(),
                value,
            })
        };
        let out = dim(&w.shape[n - 2])?;
        let inp = dim(&w.shape[n - 1])?;
        let (module, param) = split_tensor(original.tensor);
        let mut weights = Vec::with_capacity(self.tensors.len());
        for stored in &self.tensors {
            let mut shape: Vec<ExprText> = w.shape[..n - 2].to_vec();
            for size in &stored.shape {
                shape.push(eval(size, &out, &inp, original.in_ranks)?.text.into());
            }
            let tensor = match stored.name {
                Name::Sibling(s) => format!("{module}.{s}"),
                Name::Suffix(s) | Name::Param(s) => format!("{module}.{param}{s}"),
            };
            let local = match stored.name {
                Name::Sibling(s) => format!("{}_{s}", w.name),
                Name::Suffix(s) | Name::Param(s) => format!("{}{s}", w.name),
            };
            let mut decl = WeightDecl::new(local, shape, stored.format.clone()).tensor(tensor);
            decl.count = w.count.clone();
            weights.push(decl);
        }
        Ok(weights)
    }
}

/// `(module, parameter)` of a tensor name: `a.b.weight` gives `("a.b", "weight")`.
pub(crate) fn split_tensor(tensor: &str) -> (&str, &str) {
    tensor.rsplit_once('.').unwrap_or(("", tensor))
}

fn eval(size: &Size, out: &Dim, inp: &Dim, in_ranks: u64) -> Result<Dim, Misfit> {
    Ok(match size {
        Size::Out => out.clone(),
        Size::In => inp.clone(),
        Size::InWhole if in_ranks == 1 => inp.clone(),
        Size::InWhole => Dim {
            text: format!("{} * {in_ranks}", group(&inp.text)),
            value: inp.value.checked_mul(in_ranks).ok_or_else(|| Misfit {
                what: format!("{} x {in_ranks} overflows", inp.value),
            })?,
        },
        Size::Lit(v) => Dim {
            text: v.to_string(),
            value: *v,
        },
        Size::Div(x, k) => {
            let x = eval(x, out, inp, in_ranks)?;
            if !x.value.is_multiple_of(*k) {
                return Err(Misfit {
                    what: format!("`{}` = {} is not a multiple of {k}", x.text, x.value),
                });
            }
            Dim {
                text: format!("{} / {k}", group(&x.text)),
                value: x.value / k,
            }
        }
        Size::CeilDiv(x, k) => {
            let x = eval(x, out, inp, in_ranks)?;
            Dim {
                text: format!("ceil_div({}, {k})", x.text),
                value: x.value.div_ceil(*k),
            }
        }
        Size::RoundUp(x, k) => {
            let x = eval(x, out, inp, in_ranks)?;
            let value = x.value.div_ceil(*k).checked_mul(*k).ok_or_else(|| Misfit {
                what: format!(
                    "`{}` = {} rounded up to a multiple of {k} overflows",
                    x.text, x.value
                ),
            })?;
            Dim {
                text: format!("round_up({}, {k})", x.text),
                value,
            }
        }
        Size::Mul(x, k) => {
            let x = eval(x, out, inp, in_ranks)?;
            let value = x.value.checked_mul(*k).ok_or_else(|| Misfit {
                what: format!("{} x {k} overflows", x.value),
            })?;
            Dim {
                text: format!("{} * {k}", group(&x.text)),
                value,
            }
        }
    })
}

/// `text` parenthesized unless it is one name or number.
fn group(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        text.to_owned()
    } else {
        format!("({text})")
    }
}

/// Evaluates `e` over dims already evaluated (`dims`), as circuit-ir will.
pub(crate) fn eval_expr(e: &ExprText, dims: &[(String, u64)]) -> Option<u64> {
    let expr = Expr::parse(e.as_str()).ok()?;
    expr.eval_with(|name| dims.iter().rev().find(|(n, _)| n == name).map(|(_, v)| *v))
        .ok()
}
