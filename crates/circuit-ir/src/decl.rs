//! Circuit declarations: the circuit as written (docs/formats.md, "Circuit TOML"), before
//! validation.
//!
//! These types are both the TOML schema and what [`CircuitBuilder`](crate::CircuitBuilder)
//! collects from code. Expressions stay text here; the builder parses them where an error can
//! name the block and item they belong to.
//!
//! Invariants: nothing here is checked or evaluated: the builder is the one path from a
//! declaration to a [`Circuit`](crate::Circuit), so a file and a program are validated alike;
//! unknown keys are refused when read; written back (`Circuit::to_toml`), the declarations load
//! into an equal circuit.

use serde::{Deserialize, Serialize};

use crate::expr::ExprText;

/// A whole circuit file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitDecl {
    /// Format version; 1.
    pub schema: u32,
    /// The circuit's name.
    pub name: String,
    /// The longest sequence the model takes, in tokens (its context window), when the file
    /// gives it: reports say when a cache holds more per sequence than this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// Named constants, in order; each may use earlier dims.
    #[serde(default, skip_serializing_if = "DimDecls::is_empty")]
    pub dims: DimDecls,
    /// Edges the runtime provides.
    #[serde(default, rename = "input", skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<EdgeDecl>,
    /// Blocks, in execution order.
    #[serde(default, rename = "block", skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockDecl>,
    /// Edges read outside the step.
    #[serde(default, rename = "output", skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<OutputDecl>,
}

/// An edge: a tensor of `rows x width` elements in `format`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeDecl {
    /// Edge id (local to the block instance for node outputs, global for inputs).
    #[serde(alias = "edge")]
    pub id: String,
    /// Rows: an expression over the dims and `n`.
    pub rows: ExprText,
    /// Width in elements: an expression over the dims.
    pub width: ExprText,
    /// Storage format, e.g. `bf16`.
    pub format: String,
}

/// A node output, written `{ edge = "...", rows = ..., width = ..., format = ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutDecl {
    /// Edge id, local to the block instance.
    pub edge: String,
    /// Rows: an expression over the dims and `n`.
    pub rows: ExprText,
    /// Width in elements: an expression over the dims.
    pub width: ExprText,
    /// Storage format.
    pub format: String,
}

/// A block of nodes, instantiated `repeat` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockDecl {
    /// Block name; instance ids start with it.
    pub name: String,
    /// Instances: an expression over the dims. When present, ids are `name.i.id`; when absent
    /// the block runs once and ids are `name.id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<ExprText>,
    /// A local name bound to the previous block instance's `stream_out` edge (the very first
    /// instance of the circuit binds it to the circuit input of the same name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_in: Option<String>,
    /// The local edge the next block instance's `stream_in` binds to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_out: Option<String>,
    /// Nodes in execution order.
    #[serde(default, rename = "node", skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeDecl>,
    /// States (KV cache and the like) the block's nodes write and read.
    #[serde(default, rename = "state", skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<StateDecl>,
}

/// A node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeDecl {
    /// Node id, local to the block instance.
    pub id: String,
    /// Operation, one of the op list.
    pub op: String,
    /// Edges read, in order (the first one's width is the node's `k`).
    #[serde(rename = "in", default)]
    pub inputs: Vec<String>,
    /// Edges produced.
    #[serde(rename = "out", default)]
    pub outputs: Vec<OutDecl>,
    /// Weights.
    #[serde(default, rename = "weight", skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<WeightDecl>,
}

/// A weight of a node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightDecl {
    /// Name, unique within the node.
    pub name: String,
    /// Dimensions; their product is the element count, the last one is the row width.
    pub shape: Vec<ExprText>,
    /// Storage format.
    pub format: String,
    /// The stored tensor's name (`{i}` expands to the instance index); weights naming the same
    /// tensor are stored once. Default: `<node id>.<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
    /// Copies stored (e.g. `experts`); default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<ExprText>,
}

/// A state held across steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateDecl {
    /// State id, local to the block instance.
    pub id: String,
    /// Elements held per cached token (an expression over the dims); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_token: Option<ExprText>,
    /// Elements held per sequence (an expression over the dims); default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_sequence: Option<ExprText>,
    /// Tokens per sequence held at most (sliding-window attention): the state holds
    /// `min(kv_tokens, window x sequences)` tokens. Absent: every cached token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<ExprText>,
    /// Storage format.
    pub format: String,
    /// The local node that writes it; its bytes are attributed there.
    pub writer: String,
    /// Local nodes that read it; they run after the writer.
    #[serde(default)]
    pub readers: Vec<String>,
}

impl OutDecl {
    /// An output edge `edge` of `rows x width` elements in `format`.
    pub fn new(
        edge: impl Into<String>,
        rows: impl Into<ExprText>,
        width: impl Into<ExprText>,
        format: impl Into<String>,
    ) -> OutDecl {
        OutDecl {
            edge: edge.into(),
            rows: rows.into(),
            width: width.into(),
            format: format.into(),
        }
    }
}

impl BlockDecl {
    /// A block that runs once (ids `name.id`).
    pub fn once(name: impl Into<String>) -> BlockDecl {
        BlockDecl {
            name: name.into(),
            repeat: None,
            stream_in: None,
            stream_out: None,
            nodes: Vec::new(),
            states: Vec::new(),
        }
    }

    /// A block instantiated `repeat` times (ids `name.i.id`).
    pub fn repeated(name: impl Into<String>, repeat: impl Into<ExprText>) -> BlockDecl {
        BlockDecl {
            repeat: Some(repeat.into()),
            ..BlockDecl::once(name)
        }
    }

    /// Binds `stream_in` and `stream_out`.
    pub fn stream(mut self, stream_in: Option<&str>, stream_out: Option<&str>) -> BlockDecl {
        self.stream_in = stream_in.map(str::to_owned);
        self.stream_out = stream_out.map(str::to_owned);
        self
    }

    /// Appends a node.
    pub fn node(mut self, node: NodeDecl) -> BlockDecl {
        self.nodes.push(node);
        self
    }

    /// Appends a state.
    pub fn state(mut self, state: StateDecl) -> BlockDecl {
        self.states.push(state);
        self
    }
}

impl NodeDecl {
    /// A node `id` running `op`, with no edges or weights yet.
    pub fn new(id: impl Into<String>, op: impl Into<String>) -> NodeDecl {
        NodeDecl {
            id: id.into(),
            op: op.into(),
            inputs: Vec::new(),
            outputs: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// Appends edges read.
    pub fn reads<S: Into<String>>(mut self, edges: impl IntoIterator<Item = S>) -> NodeDecl {
        self.inputs.extend(edges.into_iter().map(Into::into));
        self
    }

    /// Appends an output edge.
    pub fn writes(mut self, out: OutDecl) -> NodeDecl {
        self.outputs.push(out);
        self
    }

    /// Appends a weight.
    pub fn weight(mut self, weight: WeightDecl) -> NodeDecl {
        self.weights.push(weight);
        self
    }
}

impl WeightDecl {
    /// A weight `name` of `shape` in `format`, stored under its default tensor name, once.
    pub fn new<E: Into<ExprText>>(
        name: impl Into<String>,
        shape: impl IntoIterator<Item = E>,
        format: impl Into<String>,
    ) -> WeightDecl {
        WeightDecl {
            name: name.into(),
            shape: shape.into_iter().map(Into::into).collect(),
            format: format.into(),
            tensor: None,
            count: None,
        }
    }

    /// Names the stored tensor (`{i}` expands to the instance index).
    pub fn tensor(mut self, tensor: impl Into<String>) -> WeightDecl {
        self.tensor = Some(tensor.into());
        self
    }

    /// Stores `count` copies.
    pub fn count(mut self, count: impl Into<ExprText>) -> WeightDecl {
        self.count = Some(count.into());
        self
    }
}

impl StateDecl {
    /// A state written by `writer`, holding `per_token` elements per cached token.
    pub fn per_token(
        id: impl Into<String>,
        per_token: impl Into<ExprText>,
        format: impl Into<String>,
        writer: impl Into<String>,
    ) -> StateDecl {
        StateDecl {
            id: id.into(),
            per_token: Some(per_token.into()),
            per_sequence: None,
            window: None,
            format: format.into(),
            writer: writer.into(),
            readers: Vec::new(),
        }
    }

    /// A state written by `writer`, holding a fixed `per_sequence` elements per sequence
    /// whatever its length (a recurrent or convolution state): no window, no per-token part.
    pub fn per_sequence(
        id: impl Into<String>,
        per_sequence: impl Into<ExprText>,
        format: impl Into<String>,
        writer: impl Into<String>,
    ) -> StateDecl {
        StateDecl {
            id: id.into(),
            per_token: None,
            per_sequence: Some(per_sequence.into()),
            window: None,
            format: format.into(),
            writer: writer.into(),
            readers: Vec::new(),
        }
    }

    /// Holds at most `window` tokens per sequence.
    pub fn window(mut self, window: impl Into<ExprText>) -> StateDecl {
        self.window = Some(window.into());
        self
    }

    /// Appends readers.
    pub fn read_by<S: Into<String>>(mut self, readers: impl IntoIterator<Item = S>) -> StateDecl {
        self.readers.extend(readers.into_iter().map(Into::into));
        self
    }
}

/// A circuit output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputDecl {
    /// The edge's full instance id, e.g. `head.logits`.
    pub edge: String,
}

/// Dims as `name = expression` pairs in declaration order (TOML tables keep their order).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DimDecls(pub Vec<(String, ExprText)>);

impl DimDecls {
    /// No dims.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for DimDecls {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DimDecls {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DimDecls, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = DimDecls;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table of `name = expression`")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<DimDecls, A::Error> {
                let mut dims = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, ExprText>()? {
                    dims.push((k, v));
                }
                Ok(DimDecls(dims))
            }
        }
        d.deserialize_map(Visitor)
    }
}
