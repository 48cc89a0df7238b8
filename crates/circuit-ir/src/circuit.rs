//! The validated circuit: typed tables of nodes, edges, tensors and states, and the dependency
//! graph on petgraph.
//!
//! Invariants (established by [`CircuitBuilder`](crate::CircuitBuilder), the only constructor):
//! - Node indices follow execution order: every edge's producer has a smaller index than each of
//!   its readers, and a state's writer a smaller index than its readers. The petgraph node
//!   `NodeIndex::new(i)` is `NodeIdx::new(i)`.
//! - Every edge has at most one producer; an edge without one is a circuit input. Every edge is
//!   read by a node or is a circuit output.
//! - Widths, weight shapes and state sizes are evaluated once; rows stay symbolic in `n` and are
//!   compiled once against the dims.
//! - Weight tensors are stored once per tensor name; their bytes are computed with checked
//!   arithmetic, as are the circuit's totals.

use std::collections::HashMap;

use cranelift_entity::{PrimaryMap, entity_impl};
use petgraph::graph::{DiGraph, NodeIndex};

use crate::decl::CircuitDecl;
use crate::expr::{Expr, ExprError, Program};
use crate::format::{Format, FormatError};
use crate::op::Op;

macro_rules! index_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);
        entity_impl!($name, $prefix);

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u32(self.0)
            }
        }
    };
}

index_type!(
    /// A node of a circuit (its position in execution order).
    NodeIdx,
    "node"
);
index_type!(
    /// An edge (tensor) of a circuit.
    EdgeIdx,
    "edge"
);
index_type!(
    /// A stored weight tensor of a circuit.
    TensorIdx,
    "tensor"
);
index_type!(
    /// A state of a circuit.
    StateIdx,
    "state"
);
index_type!(
    /// A block instance of a circuit.
    InstanceIdx,
    "instance"
);

/// One instance of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInstance {
    /// The block's name.
    pub block: String,
    /// The instance index when the block repeats; `None` when it runs once.
    pub index: Option<u64>,
}

impl BlockInstance {
    /// `layer.3` for a repeated block, `head` for one that runs once.
    pub fn id(&self) -> String {
        match self.index {
            Some(i) => format!("{}.{i}", self.block),
            None => self.block.clone(),
        }
    }
}

/// A node: one op in one block instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Instance id, e.g. `layer.3.attn_norm`.
    pub id: String,
    /// Id within the block, e.g. `attn_norm`.
    pub local: String,
    /// The block instance it belongs to.
    pub instance: InstanceIdx,
    /// The operation.
    pub op: Op,
    /// Edges read, in declaration order.
    pub inputs: Vec<EdgeIdx>,
    /// Edges produced.
    pub outputs: Vec<EdgeIdx>,
    /// Weights, in declaration order.
    pub weights: Vec<Weight>,
    /// States written.
    pub writes: Vec<StateIdx>,
    /// States read.
    pub reads: Vec<StateIdx>,
}

/// A weight of a node: a name and the stored tensor behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weight {
    /// Name within the node.
    pub name: String,
    /// The stored tensor (shared when several weights name one tensor).
    pub tensor: TensorIdx,
}

/// A stored weight tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Name, e.g. `model.layers.3.input_layernorm.weight`.
    pub name: String,
    /// Evaluated shape.
    pub shape: Vec<u64>,
    /// Storage format.
    pub format: Format,
    /// Copies stored.
    pub count: u64,
    /// Bytes stored: `count` copies of the shape in the format.
    pub bytes: u64,
    /// The first node declaring it, which owns its bytes.
    pub owner: NodeIdx,
}

/// Rows of an edge: an expression over the dims and `n`, compiled once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rows {
    expr: Expr,
    program: Program,
}

impl Rows {
    pub(crate) fn new(expr: Expr, program: Program) -> Rows {
        Rows { expr, program }
    }

    /// The expression as written.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Rows at `n`.
    #[inline]
    pub fn at(&self, n: u64) -> Result<u64, ExprError> {
        self.program.eval(&[n])
    }
}

/// An edge: a tensor produced by one node (or provided by the runtime) and read by others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Instance id, e.g. `layer.3.xn`; inputs keep their own id.
    pub id: String,
    /// Rows, symbolic in `n`.
    pub rows: Rows,
    /// Width in elements.
    pub width: u64,
    /// Storage format.
    pub format: Format,
    /// The producing node; `None` for a circuit input.
    pub producer: Option<NodeIdx>,
    /// The reading nodes in execution order (a node reading it twice is listed once).
    pub readers: Vec<NodeIdx>,
    /// Read outside the step.
    pub output: bool,
}

impl Edge {
    /// Bytes of the edge at `n` rows.
    pub fn bytes_at(&self, n: u64) -> Result<u64, EdgeSizeError> {
        let rows = self.rows.at(n).map_err(EdgeSizeError::Rows)?;
        self.format
            .bytes(rows, self.width)
            .map_err(EdgeSizeError::Format)
    }

    /// A circuit input (provided by the runtime).
    pub fn is_input(&self) -> bool {
        self.producer.is_none()
    }
}

/// Why an edge has no size at some `n`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EdgeSizeError {
    /// The rows expression failed.
    #[error(transparent)]
    Rows(ExprError),
    /// The byte count overflowed.
    #[error(transparent)]
    Format(FormatError),
}

/// What a state holds: a per-token cache, or a fixed amount per sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// A cache of `per_token` elements per token held (a KV cache, a compressed latent): it
    /// grows with the tokens cached, at most `window` per sequence when windowed.
    PerToken,
    /// `per_sequence` elements per sequence, whatever the tokens (a recurrent state, a
    /// convolution state).
    PerSequence,
}

/// A state (KV cache, recurrent state) held across steps: per token or per sequence (see
/// [`StateKind`]). A declared state with both sizes holds their sum, as two entries of
/// [`Circuit::states`] under its id: the per-token part (with the window), then the
/// per-sequence part, each its own tensor in the format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Instance id, e.g. `layer.3.kv`.
    pub id: String,
    /// Per token or per sequence: `per_sequence` is 0 for a per-token state, `per_token` (and
    /// `window`) 0 (and `None`) for a per-sequence one.
    pub kind: StateKind,
    /// Elements per cached token.
    pub per_token: u64,
    /// Elements per sequence.
    pub per_sequence: u64,
    /// Tokens per sequence held at most (sliding window); `None`: all cached tokens.
    pub window: Option<u64>,
    /// Storage format.
    pub format: Format,
    /// The node writing it (owner of its bytes).
    pub writer: NodeIdx,
    /// Nodes reading it.
    pub readers: Vec<NodeIdx>,
}

impl State {
    /// Tokens held when `kv_tokens` tokens are cached over `sequences` sequences: all of them,
    /// or for a sliding-window state at most `window` per sequence.
    pub fn tokens_held(&self, kv_tokens: u64, sequences: u64) -> u64 {
        match self.window {
            Some(w) => kv_tokens.min(w.saturating_mul(sequences)),
            None => kv_tokens,
        }
    }

    /// Bytes held for `kv_tokens` cached tokens (in all) and `sequences` sequences: a
    /// `tokens_held x per_token` tensor for a per-token state, a `sequences x per_sequence`
    /// tensor for a per-sequence one, in the format.
    pub fn bytes(&self, kv_tokens: u64, sequences: u64) -> Result<u64, FormatError> {
        match self.kind {
            StateKind::PerToken => self
                .format
                .bytes(self.tokens_held(kv_tokens, sequences), self.per_token),
            StateKind::PerSequence => self.format.bytes(sequences, self.per_sequence),
        }
    }
}

/// Why a dependency edge of the graph exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dep {
    /// The target reads an edge the source produces.
    Edge(EdgeIdx),
    /// The target reads a state the source writes.
    State(StateIdx),
}

/// A validated circuit.
#[derive(Debug, Clone)]
pub struct Circuit {
    pub(crate) name: String,
    /// What errors about it are prefixed with: the file name, or `circuit `name`` for a
    /// builder.
    pub(crate) origin: String,
    pub(crate) dims: Vec<(String, u64)>,
    pub(crate) instances: PrimaryMap<InstanceIdx, BlockInstance>,
    pub(crate) nodes: PrimaryMap<NodeIdx, Node>,
    pub(crate) edges: PrimaryMap<EdgeIdx, Edge>,
    pub(crate) tensors: PrimaryMap<TensorIdx, Tensor>,
    pub(crate) states: PrimaryMap<StateIdx, State>,
    pub(crate) inputs: Vec<EdgeIdx>,
    pub(crate) outputs: Vec<EdgeIdx>,
    pub(crate) graph: DiGraph<NodeIdx, Dep>,
    pub(crate) node_ids: HashMap<String, NodeIdx>,
    pub(crate) edge_ids: HashMap<String, EdgeIdx>,
    pub(crate) weight_bytes: u64,
    pub(crate) decl: CircuitDecl,
}

impl PartialEq for Circuit {
    /// Two circuits are equal when they were built from equal declarations (everything else
    /// is derived from them).
    fn eq(&self, other: &Self) -> bool {
        self.decl == other.decl
    }
}

impl Eq for Circuit {}

impl Circuit {
    /// The circuit's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The longest sequence the model takes, in tokens, when its file gives it (`context`).
    pub fn context(&self) -> Option<u64> {
        self.decl().context
    }

    /// Where the circuit comes from (its file name, or `circuit `name`` when built in code):
    /// errors found while planning it name this.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Dims in declaration order with their values.
    pub fn dims(&self) -> &[(String, u64)] {
        &self.dims
    }

    /// The value of a dim.
    pub fn dim(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|(d, _)| d == name).map(|&(_, v)| v)
    }

    /// Block instances in execution order.
    pub fn instances(&self) -> &PrimaryMap<InstanceIdx, BlockInstance> {
        &self.instances
    }

    /// Nodes in execution order.
    pub fn nodes(&self) -> &PrimaryMap<NodeIdx, Node> {
        &self.nodes
    }

    /// Edges: inputs first, then node outputs in production order.
    pub fn edges(&self) -> &PrimaryMap<EdgeIdx, Edge> {
        &self.edges
    }

    /// Stored weight tensors, each once.
    pub fn tensors(&self) -> &PrimaryMap<TensorIdx, Tensor> {
        &self.tensors
    }

    /// States.
    pub fn states(&self) -> &PrimaryMap<StateIdx, State> {
        &self.states
    }

    /// Circuit inputs.
    pub fn inputs(&self) -> &[EdgeIdx] {
        &self.inputs
    }

    /// Circuit outputs.
    pub fn outputs(&self) -> &[EdgeIdx] {
        &self.outputs
    }

    /// The dependency graph: an arc from producer to reader per edge read, and from writer to
    /// reader per state read. Node weights are the [`NodeIdx`] of the same position.
    pub fn graph(&self) -> &DiGraph<NodeIdx, Dep> {
        &self.graph
    }

    /// The graph node of a circuit node.
    pub fn graph_node(&self, node: NodeIdx) -> NodeIndex {
        NodeIndex::new(cranelift_entity::EntityRef::index(node))
    }

    /// The node with this instance id.
    pub fn find_node(&self, id: &str) -> Option<NodeIdx> {
        self.node_ids.get(id).copied()
    }

    /// The edge with this instance id.
    pub fn find_edge(&self, id: &str) -> Option<EdgeIdx> {
        self.edge_ids.get(id).copied()
    }

    /// A node's `k`: the width of its first input edge, 0 when it reads none.
    pub fn node_k(&self, node: NodeIdx) -> u64 {
        self.nodes[node]
            .inputs
            .first()
            .map_or(0, |&e| self.edges[e].width)
    }

    /// Bytes of all stored weight tensors (each tensor once).
    pub fn weight_bytes(&self) -> u64 {
        self.weight_bytes
    }

    /// Bytes of all states for `kv_tokens` cached tokens and `sequences` sequences: the KV
    /// cache ([`Self::kv_bytes`]) plus the fixed per-sequence states
    /// ([`Self::fixed_state_bytes`]).
    pub fn state_bytes(&self, kv_tokens: u64, sequences: u64) -> Result<u64, FormatError> {
        self.sum_states(|_| true, kv_tokens, sequences)
    }

    /// Bytes of the per-token states (the KV cache) for `kv_tokens` cached tokens over
    /// `sequences` sequences (windows cap each sequence).
    pub fn kv_bytes(&self, kv_tokens: u64, sequences: u64) -> Result<u64, FormatError> {
        self.sum_states(|k| k == StateKind::PerToken, kv_tokens, sequences)
    }

    /// Bytes one cached token takes in all per-token states together while no window is full:
    /// the KV cache bytes per token (a per-sequence state adds nothing here).
    pub fn kv_bytes_per_token(&self) -> Result<u64, FormatError> {
        let mut total: u64 = 0;
        for state in self.states.values() {
            if state.kind == StateKind::PerToken {
                let bytes = state.format.bytes(1, state.per_token)?;
                total = total.checked_add(bytes).ok_or(FormatError::Overflow {
                    format: state.format,
                    rows: 1,
                    width: state.per_token,
                })?;
            }
        }
        Ok(total)
    }

    /// Bytes of the per-sequence states (recurrent and convolution states) for `sequences`
    /// sequences, whatever the tokens cached.
    pub fn fixed_state_bytes(&self, sequences: u64) -> Result<u64, FormatError> {
        self.sum_states(|k| k == StateKind::PerSequence, 0, sequences)
    }

    fn sum_states(
        &self,
        keep: impl Fn(StateKind) -> bool,
        kv_tokens: u64,
        sequences: u64,
    ) -> Result<u64, FormatError> {
        let mut total: u64 = 0;
        for state in self.states.values().filter(|s| keep(s.kind)) {
            let bytes = state.bytes(kv_tokens, sequences)?;
            total = total.checked_add(bytes).ok_or(FormatError::Overflow {
                format: state.format,
                rows: kv_tokens.max(sequences),
                width: state.per_token.max(state.per_sequence),
            })?;
        }
        Ok(total)
    }

    /// The declarations the circuit was built from.
    pub fn decl(&self) -> &CircuitDecl {
        &self.decl
    }

    /// The TOML text of the declarations; loading it gives an equal circuit.
    pub fn to_toml(&self) -> Result<String, toml::ser::Error> {
        toml::to_string(&self.decl)
    }
}
