//! An engine file's expressions, compiled once ([`Formula`]) and evaluated many times against
//! the run's names ([`Env`]): the engine file's counterpart of kernel families' workspace
//! programs.
//!
//! Invariants: a formula is parsed and compiled when the profile is loaded, with each name it
//! reads bound to a slot, so evaluating it neither parses nor allocates beyond the slot vector;
//! a name the run does not bind is an error naming the item, the name and the circuit; an
//! overflow names the item and every value the expression read, so the input at fault (a flag,
//! a dim of the user's config) can be told from the engine file.

use circuit_ir::{Binding, Circuit, Expr, Program};

use crate::EngineError;

/// One compiled expression of the engine file.
#[derive(Debug, Clone)]
pub(crate) struct Formula {
    /// The item (`profile_run.sampler_live.logits`), for messages.
    item: String,
    /// The expression as written.
    text: String,
    /// The names it reads, in slot order.
    names: Vec<String>,
    program: Program,
}

impl Formula {
    /// Parses and compiles `text`, the value of `item` in the file `origin`.
    pub(crate) fn compile(origin: &str, item: &str, text: &str) -> Result<Formula, EngineError> {
        let fail = |message: String| EngineError::Expr {
            origin: origin.to_owned(),
            item: item.to_owned(),
            text: text.to_owned(),
            message,
        };
        let expr = Expr::parse(text).map_err(|e| fail(e.to_string()))?;
        let names: Vec<String> = expr.free_names().into_iter().map(str::to_owned).collect();
        if names.len() > usize::from(u16::MAX) {
            return Err(fail(format!("reads {} names", names.len())));
        }
        let program = expr
            .compile(&|name: &str| {
                names
                    .iter()
                    .position(|n| n == name)
                    .map(|i| Binding::Slot(i as u16))
            })
            .map_err(|e| fail(e.to_string()))?;
        Ok(Formula {
            item: item.to_owned(),
            text: text.to_owned(),
            names,
            program,
        })
    }

    /// The item's name.
    pub(crate) fn item(&self) -> &str {
        &self.item
    }

    /// The expression's text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The value with the names of `env`.
    pub(crate) fn eval(&self, env: &Env<'_>) -> Result<u64, EngineError> {
        let mut slots = Vec::with_capacity(self.names.len());
        for name in &self.names {
            match env.get(name) {
                Some(v) => slots.push(v),
                None => {
                    return Err(EngineError::UnboundName {
                        circuit: env.circuit_name().to_owned(),
                        item: self.item.clone(),
                        name: name.clone(),
                    });
                }
            }
        }
        self.program.eval(&slots).map_err(|e| EngineError::Eval {
            circuit: env.circuit_name().to_owned(),
            item: self.item.clone(),
            text: self.text().to_owned(),
            inputs: self
                .names
                .iter()
                .zip(&slots)
                .map(|(n, v)| format!("{n} = {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            message: e.to_string(),
        })
    }
}

/// The names a formula may read: the run's own, then the dims of a circuit.
#[derive(Debug, Clone)]
pub(crate) struct Env<'a> {
    names: Vec<(&'static str, u64)>,
    /// The engine file's runtime figures (`[runtime]`), read after the run's names.
    runtime: &'a [(String, u64)],
    circuit: Option<&'a Circuit>,
    /// The circuit the run is for, named in messages.
    label: &'a str,
}

impl<'a> Env<'a> {
    /// An environment of the run's `names` over the dims of `circuit`.
    pub(crate) fn new(names: Vec<(&'static str, u64)>, circuit: &'a Circuit) -> Env<'a> {
        Env {
            names,
            runtime: &[],
            circuit: Some(circuit),
            label: circuit.name(),
        }
    }

    /// An environment of `names` alone (no dims), for a run of the circuit named `label`.
    pub(crate) fn names_only(names: Vec<(&'static str, u64)>, label: &'a str) -> Env<'a> {
        Env {
            names,
            runtime: &[],
            circuit: None,
            label,
        }
    }

    /// Binds `name` (a later binding of a name shadows an earlier one).
    pub(crate) fn with(mut self, name: &'static str, value: u64) -> Env<'a> {
        self.names.push((name, value));
        self
    }

    /// Binds the engine file's runtime figures, read after the run's names and before the
    /// circuit's dims.
    pub(crate) fn with_runtime(mut self, runtime: &'a [(String, u64)]) -> Env<'a> {
        self.runtime = runtime;
        self
    }

    /// Binds more names.
    pub(crate) fn extend(&mut self, names: impl IntoIterator<Item = (&'static str, u64)>) {
        self.names.extend(names);
    }

    /// The value of `name`: the run's, else the engine file's runtime figure, else the
    /// circuit's dim.
    pub(crate) fn get(&self, name: &str) -> Option<u64> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .or_else(|| {
                self.runtime
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| *v)
            })
            .or_else(|| self.circuit.and_then(|c| c.dim(name)))
    }

    /// The circuit's name, for messages.
    pub(crate) fn circuit_name(&self) -> &str {
        self.label
    }
}
