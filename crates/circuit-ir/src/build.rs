//! Building a [`Circuit`] from declarations: the one validation path, shared by the TOML loader
//! and by code that builds circuits directly.
//!
//! Invariants: the checks run in declaration order, so the first error reported is the first
//! fault in the file; every error carries the origin, the place and the value at fault; no
//! input panics (sizes use checked arithmetic, instance counts are bounded).

use std::collections::HashMap;

use cranelift_entity::{EntityRef, PrimaryMap};
use petgraph::graph::{DiGraph, NodeIndex};

use crate::circuit::{
    BlockInstance, Circuit, Dep, Edge, EdgeIdx, InstanceIdx, Node, NodeIdx, Rows, State, StateKind,
    Tensor, TensorIdx, Weight,
};
use crate::decl::{BlockDecl, CircuitDecl, DimDecls, EdgeDecl, NodeDecl, OutDecl, OutputDecl};
use crate::error::{CircuitError, CircuitErrorKind as Kind, Place, quoted};
use crate::expr::{Binding, Expr, ExprError, ExprText};
use crate::format::Format;
use crate::load::TomlError;
use crate::op::Op;

/// The most nodes a circuit may have (all block instances together). A loaded circuit takes
/// about 1.4 KB per node and a plan about as much again: 2^20 nodes (70,000 layers of the
/// Llama example) load in about 1.5 GB, where 2^24 would not fit in a 24 GB machine.
pub const MAX_NODES: u64 = 1 << 20;

/// The most block instances a circuit may have (all blocks together): an instance costs work
/// even when its block has no node.
pub const MAX_INSTANCES: u64 = MAX_NODES;

/// The most output edges, weights and states a circuit may declare (all block instances
/// together). Nodes are bounded by [`MAX_NODES`], but one node may list any number of
/// outputs: without this bound a small file (one node with 1,000 outputs, repeated 2^20 times)
/// would ask for a billion edges. An edge takes about 0.3 KB once loaded.
pub const MAX_ITEMS: u64 = 4 * MAX_NODES;

/// Names a dim may not take: they are bound by rows (`n`) and by kernel families (`k`,
/// `sm_count`).
pub const RESERVED_NAMES: [&str; 3] = ["n", "k", "sm_count"];

/// Collects circuit declarations and builds a validated [`Circuit`].
///
/// ```
/// use circuit_ir::{CircuitBuilder, decl::{BlockDecl, NodeDecl, OutDecl}};
///
/// let mut b = CircuitBuilder::new("tiny");
/// b.dim("hidden", 64)
///     .input("x", "n", "hidden", "bf16")
///     .block(BlockDecl::once("main").node(
///         NodeDecl::new("norm", "rms_norm")
///             .reads(["x"])
///             .writes(OutDecl::new("y", "n", "hidden", "bf16")),
///     ))
///     .output("main.y");
/// let circuit = b.build().unwrap();
/// assert_eq!(circuit.nodes().len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct CircuitBuilder {
    origin: String,
    decl: CircuitDecl,
}

impl CircuitBuilder {
    /// An empty circuit named `name`; errors name it as their origin.
    pub fn new(name: impl Into<String>) -> CircuitBuilder {
        let name = name.into();
        CircuitBuilder {
            origin: format!("circuit `{}`", quoted(&name)),
            decl: CircuitDecl {
                schema: 1,
                name,
                context: None,
                dims: DimDecls::default(),
                inputs: Vec::new(),
                blocks: Vec::new(),
                outputs: Vec::new(),
            },
        }
    }

    /// A builder over existing declarations; errors name `origin` (a file name, say).
    pub fn from_decl(decl: CircuitDecl, origin: impl Into<String>) -> CircuitBuilder {
        CircuitBuilder {
            origin: origin.into(),
            decl,
        }
    }

    /// Declares a dim; it may use the dims declared before it.
    pub fn dim(&mut self, name: impl Into<String>, value: impl Into<ExprText>) -> &mut Self {
        self.decl.dims.0.push((name.into(), value.into()));
        self
    }

    /// Declares a circuit input edge.
    pub fn input(
        &mut self,
        id: impl Into<String>,
        rows: impl Into<ExprText>,
        width: impl Into<ExprText>,
        format: impl Into<String>,
    ) -> &mut Self {
        self.decl.inputs.push(EdgeDecl {
            id: id.into(),
            rows: rows.into(),
            width: width.into(),
            format: format.into(),
        });
        self
    }

    /// Appends a block.
    pub fn block(&mut self, block: BlockDecl) -> &mut Self {
        self.decl.blocks.push(block);
        self
    }

    /// Declares an edge (by full instance id) a circuit output.
    pub fn output(&mut self, edge: impl Into<String>) -> &mut Self {
        self.decl.outputs.push(OutputDecl { edge: edge.into() });
        self
    }

    /// The declarations collected so far.
    pub fn decl(&self) -> &CircuitDecl {
        &self.decl
    }

    /// Validates the declarations and builds the circuit.
    pub fn build(&self) -> Result<Circuit, CircuitError> {
        Build::new(&self.origin).run(&self.decl)
    }
}

struct Build<'a> {
    origin: &'a str,
    dims: Vec<(String, u64)>,
    /// The dims by name (a look-up per name read: a scan of `dims` was quadratic in them).
    dim_values: HashMap<String, u64>,
    instances: PrimaryMap<InstanceIdx, BlockInstance>,
    nodes: PrimaryMap<NodeIdx, Node>,
    edges: PrimaryMap<EdgeIdx, Edge>,
    tensors: PrimaryMap<TensorIdx, Tensor>,
    states: PrimaryMap<crate::StateIdx, State>,
    inputs: Vec<EdgeIdx>,
    node_ids: HashMap<String, NodeIdx>,
    edge_ids: HashMap<String, EdgeIdx>,
    state_ids: HashMap<String, crate::StateIdx>,
    tensor_ids: HashMap<String, TensorIdx>,
    /// Every edge some node will produce, with its producer's id: tells a read of an edge
    /// produced later from a read of an edge nobody produces.
    producers: HashMap<String, String>,
}

/// One block instance being built.
struct InstanceCtx<'d> {
    block: &'d BlockDecl,
    idx: InstanceIdx,
    index: u64,
    prefix: String,
    place: Place,
    stream: Option<EdgeIdx>,
}

impl<'a> Build<'a> {
    fn new(origin: &'a str) -> Self {
        Build {
            origin,
            dims: Vec::new(),
            dim_values: HashMap::new(),
            instances: PrimaryMap::new(),
            nodes: PrimaryMap::new(),
            edges: PrimaryMap::new(),
            tensors: PrimaryMap::new(),
            states: PrimaryMap::new(),
            inputs: Vec::new(),
            node_ids: HashMap::new(),
            edge_ids: HashMap::new(),
            state_ids: HashMap::new(),
            tensor_ids: HashMap::new(),
            producers: HashMap::new(),
        }
    }

    fn err(&self, place: &Place, kind: impl Into<Kind>) -> CircuitError {
        CircuitError {
            origin: self.origin.to_owned(),
            place: place.clone(),
            kind: Box::new(kind.into()),
        }
    }

    fn run(mut self, decl: &CircuitDecl) -> Result<Circuit, CircuitError> {
        if decl.schema != 1 {
            return Err(self.err(
                &Place::root(),
                Kind::Toml(TomlError::Schema { found: decl.schema }),
            ));
        }
        self.dims(&decl.dims)?;
        for input in &decl.inputs {
            self.input(input)?;
        }
        let repeats = self.plan_instances(&decl.blocks)?;
        let mut previous: Option<(String, Option<EdgeIdx>)> = None;
        for (block, repeat) in decl.blocks.iter().zip(repeats) {
            let indices = match repeat {
                Some(count) => (0..count).map(Some).collect::<Vec<_>>(),
                None => vec![None],
            };
            for index in indices {
                let instance = BlockInstance {
                    block: block.name.clone(),
                    index,
                };
                let stream_out = self.instance(block, instance.clone(), previous.as_ref())?;
                previous = Some((instance.id(), stream_out));
            }
        }
        let outputs = self.outputs(&decl.outputs)?;
        self.check_every_edge_read()?;
        let graph = self.graph();
        let weight_bytes = self.weight_total()?;
        Ok(Circuit {
            name: decl.name.clone(),
            origin: self.origin.to_owned(),
            dims: self.dims,
            instances: self.instances,
            nodes: self.nodes,
            edges: self.edges,
            tensors: self.tensors,
            states: self.states,
            inputs: self.inputs,
            outputs,
            graph,
            node_ids: self.node_ids,
            edge_ids: self.edge_ids,
            weight_bytes,
            decl: decl.clone(),
        })
    }

    fn dims(&mut self, dims: &DimDecls) -> Result<(), CircuitError> {
        // The last position of each name: a name is declared at or after `pos` exactly when
        // its last declaration is.
        let last: HashMap<&str, usize> = dims
            .0
            .iter()
            .enumerate()
            .map(|(pos, (d, _))| (d.as_str(), pos))
            .collect();
        for (pos, (name, text)) in dims.0.iter().enumerate() {
            let place = Place::root().with(format!("dim `{}`", quoted(name)));
            check_name(name, "a dim", true).map_err(|k| self.err(&place, k))?;
            if RESERVED_NAMES.contains(&name.as_str()) {
                return Err(self.err(
                    &place,
                    Kind::BadName {
                        name: name.clone(),
                        what: "a dim",
                        why: "`n`, `k` and `sm_count` are bound by the planner",
                    },
                ));
            }
            if self.dim_values.contains_key(name) {
                return Err(self.err(
                    &place,
                    Kind::DuplicateId {
                        what: "dim",
                        id: name.clone(),
                    },
                ));
            }
            let expr = text.parse().map_err(|e| self.err(&place, e))?;
            for used in expr.free_names() {
                let later = last.get(used).is_some_and(|&p| p >= pos);
                if later {
                    return Err(self.err(
                        &place,
                        Kind::DimUsesLaterDim {
                            name: used.to_owned(),
                            expr: text.to_string(),
                        },
                    ));
                }
            }
            let value = self.eval_dims(&place, &expr)?;
            self.dims.push((name.clone(), value));
            self.dim_values.insert(name.clone(), value);
        }
        Ok(())
    }

    /// Evaluates an expression over the dims (widths, shapes, state sizes, repeats).
    fn eval_dims(&self, place: &Place, expr: &Expr) -> Result<u64, CircuitError> {
        let scope = |name: &str| self.dim_value(name).map(Binding::Value);
        let program = expr
            .compile(&scope)
            .map_err(|e| self.expr_error(place, e, false))?;
        program
            .eval(&[])
            .map_err(|e| self.expr_error(place, e, false))
    }

    fn eval_text(&self, place: &Place, text: &ExprText) -> Result<u64, CircuitError> {
        let expr = text.parse().map_err(|e| self.err(place, e))?;
        self.eval_dims(place, &expr)
    }

    /// Compiles a rows expression over the dims and `n` (slot 0).
    fn rows(&self, place: &Place, text: &ExprText) -> Result<Rows, CircuitError> {
        let place = place.with("rows");
        let expr = text.parse().map_err(|e| self.err(&place, e))?;
        let scope = |name: &str| {
            if name == "n" {
                Some(Binding::Slot(0))
            } else {
                self.dim_value(name).map(Binding::Value)
            }
        };
        let program = expr
            .compile(&scope)
            .map_err(|e| self.expr_error(&place, e, true))?;
        Ok(Rows::new(expr, program))
    }

    fn dim_value(&self, name: &str) -> Option<u64> {
        self.dim_values.get(name).copied()
    }

    fn expr_error(&self, place: &Place, e: ExprError, with_n: bool) -> CircuitError {
        match e {
            ExprError::UnknownName { expr, name } => {
                let mut readable: Vec<&str> = Vec::new();
                if with_n {
                    readable.push("n");
                }
                readable.extend(self.dims.iter().map(|(d, _)| d.as_str()));
                let readable = if readable.is_empty() {
                    "no names; declare dims first".to_owned()
                } else {
                    readable.join(", ")
                };
                self.err(
                    place,
                    Kind::UnknownDim {
                        name,
                        expr,
                        readable,
                    },
                )
            }
            other => self.err(place, other),
        }
    }

    fn format(&self, place: &Place, text: &str, width: u64) -> Result<Format, CircuitError> {
        let format: Format = text.parse().map_err(|e| self.err(place, e))?;
        format.check_width(width).map_err(|e| self.err(place, e))?;
        Ok(format)
    }

    fn input(&mut self, decl: &EdgeDecl) -> Result<(), CircuitError> {
        let place = Place::root().with(format!("input `{}`", quoted(&decl.id)));
        check_name(&decl.id, "an input id", false).map_err(|k| self.err(&place, k))?;
        if self.edge_ids.contains_key(&decl.id) {
            return Err(self.err(
                &place,
                Kind::DuplicateId {
                    what: "input",
                    id: decl.id.clone(),
                },
            ));
        }
        let rows = self.rows(&place, &decl.rows)?;
        let width = self.eval_text(&place.with("width"), &decl.width)?;
        let format = self.format(&place.with("format"), &decl.format, width)?;
        let idx = self.edges.push(Edge {
            id: decl.id.clone(),
            rows,
            width,
            format,
            producer: None,
            readers: Vec::new(),
            output: false,
        });
        self.edge_ids.insert(decl.id.clone(), idx);
        self.inputs.push(idx);
        Ok(())
    }

    /// Evaluates every block's repeat, bounds the node count and records every edge's future
    /// producer.
    fn plan_instances(&mut self, blocks: &[BlockDecl]) -> Result<Vec<Option<u64>>, CircuitError> {
        let mut repeats = Vec::with_capacity(blocks.len());
        let mut total_nodes: u64 = 0;
        let mut total_instances: u64 = 0;
        let mut total_items: u64 = 0;
        let mut names: Vec<&str> = Vec::new();
        for block in blocks {
            let place = Place::root().with(format!("block `{}`", quoted(&block.name)));
            check_name(&block.name, "a block name", false).map_err(|k| self.err(&place, k))?;
            if names.contains(&block.name.as_str()) {
                return Err(self.err(
                    &place,
                    Kind::DuplicateId {
                        what: "block",
                        id: block.name.clone(),
                    },
                ));
            }
            names.push(&block.name);
            let repeat = match &block.repeat {
                Some(text) => Some(self.eval_text(&place.with("repeat"), text)?),
                None => None,
            };
            let nodes = repeat
                .unwrap_or(1)
                .checked_mul(block.nodes.len() as u64)
                .and_then(|n| n.checked_add(total_nodes))
                .filter(|&n| n <= MAX_NODES);
            total_nodes = nodes.ok_or_else(|| {
                self.err(
                    &place,
                    Kind::TooLarge {
                        what: format!(
                            "{} instances of {} nodes",
                            repeat.unwrap_or(1),
                            block.nodes.len()
                        ),
                        limit: MAX_NODES,
                        unit: "nodes per circuit",
                    },
                )
            })?;
            total_instances = total_instances
                .checked_add(repeat.unwrap_or(1))
                .filter(|&n| n <= MAX_INSTANCES)
                .ok_or_else(|| {
                    self.err(
                        &place,
                        Kind::TooLarge {
                            what: format!("{} instances", repeat.unwrap_or(1)),
                            limit: MAX_INSTANCES,
                            unit: "block instances per circuit",
                        },
                    )
                })?;
            let per_instance = block
                .nodes
                .iter()
                .map(|n| (n.outputs.len() + n.weights.len()) as u64)
                .sum::<u64>()
                + block.states.len() as u64;
            total_items = repeat
                .unwrap_or(1)
                .checked_mul(per_instance)
                .and_then(|n| n.checked_add(total_items))
                .filter(|&n| n <= MAX_ITEMS)
                .ok_or_else(|| {
                    self.err(
                        &place,
                        Kind::TooLarge {
                            what: format!(
                                "{} instances of {per_instance} output edges, weights and states",
                                repeat.unwrap_or(1)
                            ),
                            limit: MAX_ITEMS,
                            unit: "output edges, weights and states per circuit",
                        },
                    )
                })?;
            repeats.push(repeat);
        }
        for (block, repeat) in blocks.iter().zip(&repeats) {
            for index in 0..repeat.unwrap_or(1) {
                let prefix = instance_prefix(&block.name, repeat.map(|_| index));
                for node in &block.nodes {
                    let node_id = format!("{prefix}{}", expand(&node.id, index));
                    for out in &node.outputs {
                        self.producers
                            .entry(format!("{prefix}{}", expand(&out.edge, index)))
                            .or_insert_with(|| node_id.clone());
                    }
                }
            }
        }
        Ok(repeats)
    }

    /// Builds one block instance; returns its stream_out edge.
    fn instance(
        &mut self,
        block: &BlockDecl,
        instance: BlockInstance,
        previous: Option<&(String, Option<EdgeIdx>)>,
    ) -> Result<Option<EdgeIdx>, CircuitError> {
        let place = Place::root().with(match instance.index {
            Some(i) => format!("block `{}` instance {i}", quoted(&block.name)),
            None => format!("block `{}`", quoted(&block.name)),
        });
        let index = instance.index.unwrap_or(0);
        let prefix = instance_prefix(&block.name, instance.index);
        let stream = match &block.stream_in {
            None => None,
            Some(name) => Some(self.bind_stream(&place, name, previous)?),
        };
        let idx = self.instances.push(instance);
        let ctx = InstanceCtx {
            block,
            idx,
            index,
            prefix,
            place,
            stream,
        };
        let first_node = self.nodes.next_key();
        for node in &block.nodes {
            self.node(&ctx, node)?;
        }
        for state in &block.states {
            self.state(&ctx, state)?;
        }
        for n in (first_node.index()..self.nodes.len()).map(NodeIdx::new) {
            let node = &self.nodes[n];
            let place = || ctx.place.with(format!("node `{}`", quoted(&node.local)));
            if node.op == Op::WeightsOnly {
                if let Some(what) = weights_only_fault(node) {
                    return Err(self.err(&place(), Kind::WeightsOnlyEdges { what }));
                }
            } else if node.outputs.is_empty() && node.writes.is_empty() {
                return Err(self.err(&place(), Kind::NoOutput));
            }
        }
        match &block.stream_out {
            None => Ok(None),
            Some(name) => {
                let name = expand(name, index);
                if block.stream_in.as_deref() == Some(name.as_str()) {
                    return Ok(ctx.stream);
                }
                match self.edge_ids.get(&format!("{}{name}", ctx.prefix)) {
                    Some(&e) => Ok(Some(e)),
                    None => Err(self.err(
                        &ctx.place.with("stream_out"),
                        Kind::StreamOutMissing { name },
                    )),
                }
            }
        }
    }

    fn bind_stream(
        &self,
        place: &Place,
        name: &str,
        previous: Option<&(String, Option<EdgeIdx>)>,
    ) -> Result<EdgeIdx, CircuitError> {
        let unbound = |why: String| {
            self.err(
                &place.with("stream_in"),
                Kind::StreamUnbound {
                    name: name.to_owned(),
                    why,
                },
            )
        };
        match previous {
            None => match self.edge_ids.get(name) {
                Some(&e) => Ok(e),
                None => Err(unbound(format!(
                    "no block instance runs before it and there is no circuit input `{name}`"
                ))),
            },
            Some((_, Some(e))) => Ok(*e),
            Some((prev, None)) => Err(unbound(format!(
                "the block instance before it, `{prev}`, declares no stream_out"
            ))),
        }
    }

    fn node(&mut self, ctx: &InstanceCtx<'_>, decl: &NodeDecl) -> Result<(), CircuitError> {
        let local = expand(&decl.id, ctx.index);
        let place = ctx.place.with(format!("node `{}`", quoted(&local)));
        check_name(&local, "a node id", false).map_err(|k| self.err(&place, k))?;
        let id = format!("{}{local}", ctx.prefix);
        if self.node_ids.contains_key(&id) {
            return Err(self.err(&place, Kind::DuplicateId { what: "node", id }));
        }
        let op: Op = decl
            .op
            .parse()
            .map_err(|e| self.err(&place.with("op"), Kind::Op(e)))?;
        let idx = self.nodes.next_key();
        let mut inputs = Vec::with_capacity(decl.inputs.len());
        for name in &decl.inputs {
            let name = expand(name, ctx.index);
            let edge = self.resolve(
                ctx,
                &place.with(format!("input `{}`", quoted(&name))),
                &id,
                &name,
            )?;
            inputs.push(edge);
            let readers = &mut self.edges[edge].readers;
            if readers.last() != Some(&idx) {
                readers.push(idx);
            }
        }
        // One output listed twice, found before any is built so the message shows both
        // entries as written.
        let mut expanded: HashMap<String, &str> = HashMap::with_capacity(decl.outputs.len());
        for out in &decl.outputs {
            let local = expand(&out.edge, ctx.index);
            if let Some(first) = expanded.get(&local) {
                return Err(self.err(
                    &place.with(format!("output `{}`", quoted(&local))),
                    Kind::OutputTwice {
                        edge: format!("{}{local}", ctx.prefix),
                        first: (*first).to_owned(),
                        second: out.edge.clone(),
                    },
                ));
            }
            expanded.insert(local, &out.edge);
        }
        let mut outputs = Vec::with_capacity(decl.outputs.len());
        for out in &decl.outputs {
            outputs.push(self.output_edge(ctx, &place, idx, out)?);
        }
        let mut weights: Vec<Weight> = Vec::with_capacity(decl.weights.len());
        for w in &decl.weights {
            let wplace = place.with(format!("weight `{}`", quoted(&w.name)));
            if weights.iter().any(|x| x.name == w.name) {
                return Err(self.err(
                    &wplace,
                    Kind::DuplicateId {
                        what: "weight",
                        id: w.name.clone(),
                    },
                ));
            }
            let tensor = self.tensor(ctx, &wplace, &id, idx, w)?;
            weights.push(Weight {
                name: w.name.clone(),
                tensor,
            });
        }
        self.nodes.push(Node {
            id: id.clone(),
            local,
            instance: ctx.idx,
            op,
            inputs,
            outputs,
            weights,
            writes: Vec::new(),
            reads: Vec::new(),
        });
        self.node_ids.insert(id, idx);
        Ok(())
    }

    /// The edge a node's `in` name refers to: the block's stream, an edge of this instance, or a
    /// global edge (a circuit input or a full instance id).
    fn resolve(
        &self,
        ctx: &InstanceCtx<'_>,
        place: &Place,
        reader: &str,
        name: &str,
    ) -> Result<EdgeIdx, CircuitError> {
        if let Some(e) = ctx
            .stream
            .filter(|_| ctx.block.stream_in.as_deref() == Some(name))
        {
            return Ok(e);
        }
        let local = format!("{}{name}", ctx.prefix);
        for id in [local.as_str(), name] {
            if let Some(&e) = self.edge_ids.get(id) {
                return Ok(e);
            }
            if let Some(producer) = self.producers.get(id) {
                let kind = if *producer == reader {
                    Kind::ReadsOwnOutput {
                        edge: id.to_owned(),
                    }
                } else {
                    Kind::ReadBeforeProduced {
                        edge: id.to_owned(),
                        producer: producer.clone(),
                    }
                };
                return Err(self.err(place, kind));
            }
        }
        Err(self.err(
            place,
            Kind::UnknownEdge {
                edge: name.to_owned(),
            },
        ))
    }

    fn output_edge(
        &mut self,
        ctx: &InstanceCtx<'_>,
        place: &Place,
        node: NodeIdx,
        out: &OutDecl,
    ) -> Result<EdgeIdx, CircuitError> {
        let local = expand(&out.edge, ctx.index);
        let place = place.with(format!("output `{}`", quoted(&local)));
        check_name(&local, "an edge id", false).map_err(|k| self.err(&place, k))?;
        if ctx.block.stream_in.as_deref() == Some(local.as_str()) {
            return Err(self.err(
                &place,
                Kind::BadName {
                    name: local,
                    what: "an output edge id",
                    why: "it is the block's stream_in; give the output its own name",
                },
            ));
        }
        let id = format!("{}{local}", ctx.prefix);
        if let Some(&first) = self.edge_ids.get(&id) {
            // The node being built is not in `nodes` yet: an edge it produced already is one
            // it lists twice (`y` twice, or `y{i}` and `y0` in instance 0).
            let kind = match self.edges[first].producer {
                Some(p) if p == node => Kind::OutputTwice {
                    edge: id,
                    first: local.clone(),
                    second: out.edge.clone(),
                },
                Some(p) => Kind::TwoProducers {
                    edge: id,
                    first: format!("produced by node `{}`", quoted(&self.nodes[p].id)),
                },
                None => Kind::TwoProducers {
                    edge: id,
                    first: "a circuit input".to_owned(),
                },
            };
            return Err(self.err(&place, kind));
        }
        let rows = self.rows(&place, &out.rows)?;
        let width = self.eval_text(&place.with("width"), &out.width)?;
        let format = self.format(&place.with("format"), &out.format, width)?;
        let idx = self.edges.push(Edge {
            id: id.clone(),
            rows,
            width,
            format,
            producer: Some(node),
            readers: Vec::new(),
            output: false,
        });
        self.edge_ids.insert(id, idx);
        Ok(idx)
    }

    fn tensor(
        &mut self,
        ctx: &InstanceCtx<'_>,
        place: &Place,
        node_id: &str,
        node: NodeIdx,
        decl: &crate::decl::WeightDecl,
    ) -> Result<TensorIdx, CircuitError> {
        let mut shape = Vec::with_capacity(decl.shape.len());
        for (i, dim) in decl.shape.iter().enumerate() {
            shape.push(self.eval_text(&place.with(format!("shape[{i}]")), dim)?);
        }
        let count = match &decl.count {
            Some(text) => self.eval_text(&place.with("count"), text)?,
            None => 1,
        };
        let width = shape.last().copied().unwrap_or(1);
        let rows = shape[..shape.len().saturating_sub(1)]
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d));
        let format = self.format(&place.with("format"), &decl.format, width)?;
        let overflow = || {
            self.err(
                place,
                Kind::Overflow {
                    what: format!("shape {shape:?} x {count} in {format}"),
                },
            )
        };
        let rows = rows.ok_or_else(overflow)?;
        let bytes = format
            .bytes(rows, width)
            .ok()
            .and_then(|b| b.checked_mul(count))
            .ok_or_else(overflow)?;
        let name = match &decl.tensor {
            Some(t) => expand(t, ctx.index),
            None => format!("{node_id}.{}", decl.name),
        };
        if let Some(&existing) = self.tensor_ids.get(&name) {
            let first = &self.tensors[existing];
            if first.shape != shape || first.format != format || first.count != count {
                // The owner may be this node, not in `nodes` yet (two of its weights name one
                // tensor).
                let first_node = match self.nodes.get(first.owner) {
                    Some(owner) => owner.id.clone(),
                    None => node_id.to_owned(),
                };
                return Err(self.err(
                    place,
                    Kind::TensorConflict {
                        tensor: name,
                        first: render_tensor(&first.shape, first.format, first.count),
                        first_node,
                        this: render_tensor(&shape, format, count),
                    },
                ));
            }
            return Ok(existing);
        }
        let idx = self.tensors.push(Tensor {
            name: name.clone(),
            shape,
            format,
            count,
            bytes,
            owner: node,
        });
        self.tensor_ids.insert(name, idx);
        Ok(idx)
    }

    fn state(
        &mut self,
        ctx: &InstanceCtx<'_>,
        decl: &crate::decl::StateDecl,
    ) -> Result<(), CircuitError> {
        let local = expand(&decl.id, ctx.index);
        let place = ctx.place.with(format!("state `{}`", quoted(&local)));
        check_name(&local, "a state id", false).map_err(|k| self.err(&place, k))?;
        let id = format!("{}{local}", ctx.prefix);
        if self.state_ids.contains_key(&id) {
            return Err(self.err(&place, Kind::DuplicateId { what: "state", id }));
        }
        if decl.per_token.is_none() && decl.per_sequence.is_none() {
            return Err(self.err(&place, Kind::EmptyState));
        }
        let size = |field: &str, text: &Option<ExprText>| match text {
            Some(t) => self.eval_text(&place.with(field), t),
            None => Ok(0),
        };
        let per_token = size("per_token", &decl.per_token)?;
        let per_sequence = size("per_sequence", &decl.per_sequence)?;
        let window = match &decl.window {
            Some(t) => {
                let wplace = place.with("window");
                match self.eval_text(&wplace, t)? {
                    0 => {
                        return Err(self.err(
                            &wplace,
                            Kind::ZeroWindow {
                                expr: t.to_string(),
                            },
                        ));
                    }
                    w => Some(w),
                }
            }
            None => None,
        };
        // The format's sum `per_token x tokens + per_sequence x sequences`, held as one state per
        // kind: a state declaring both sizes becomes its per-token part (with the window) and
        // its per-sequence part, two entries under one id, so every state has one kind.
        let parts: &[(StateKind, u64, u64, Option<u64>)] = match (per_token, per_sequence) {
            (0, 0) | (_, 0) => &[(StateKind::PerToken, per_token, 0, window)],
            (0, _) if window.is_some() => {
                return Err(self.err(
                    &place.with("window"),
                    Kind::WindowWithoutTokens { per_sequence },
                ));
            }
            (0, _) => &[(StateKind::PerSequence, 0, per_sequence, None)],
            (_, _) => &[
                (StateKind::PerToken, per_token, 0, window),
                (StateKind::PerSequence, 0, per_sequence, None),
            ],
        };
        let format: Format = decl
            .format
            .parse()
            .map_err(|e| self.err(&place.with("format"), e))?;
        for width in [per_token, per_sequence] {
            format
                .check_width(width)
                .map_err(|e| self.err(&place.with("format"), e))?;
        }
        let find = |role: &'static str, name: &str| {
            let name = expand(name, ctx.index);
            self.node_ids
                .get(&format!("{}{name}", ctx.prefix))
                .copied()
                .filter(|n| self.nodes[*n].instance == ctx.idx)
                .ok_or_else(|| self.err(&place.with(role), Kind::UnknownNode { name, role }))
        };
        let writer = find("writer", &decl.writer)?;
        let mut readers = Vec::with_capacity(decl.readers.len());
        for r in &decl.readers {
            let reader = find("reader", r)?;
            if readers.contains(&reader) {
                return Err(self.err(
                    &place.with("readers"),
                    Kind::DuplicateId {
                        what: "state reader",
                        id: self.nodes[reader].local.clone(),
                    },
                ));
            }
            if reader == writer {
                return Err(self.err(
                    &place.with("readers"),
                    Kind::ReaderIsWriter {
                        node: self.nodes[reader].local.clone(),
                    },
                ));
            }
            if reader < writer {
                return Err(self.err(
                    &place.with("readers"),
                    Kind::ReaderBeforeWriter {
                        reader: self.nodes[reader].local.clone(),
                        writer: self.nodes[writer].local.clone(),
                    },
                ));
            }
            readers.push(reader);
        }
        for &(kind, per_token, per_sequence, window) in parts {
            let idx = self.states.push(State {
                id: id.clone(),
                kind,
                per_token,
                per_sequence,
                window,
                format,
                writer,
                readers: readers.clone(),
            });
            self.state_ids.entry(id.clone()).or_insert(idx);
            self.nodes[writer].writes.push(idx);
            for &r in &readers {
                self.nodes[r].reads.push(idx);
            }
        }
        Ok(())
    }

    fn outputs(&mut self, decls: &[OutputDecl]) -> Result<Vec<EdgeIdx>, CircuitError> {
        let mut outputs = Vec::with_capacity(decls.len());
        for decl in decls {
            let place = Place::root().with(format!("output `{}`", quoted(&decl.edge)));
            let Some(&edge) = self.edge_ids.get(&decl.edge) else {
                return Err(self.err(
                    &place,
                    Kind::UnknownOutput {
                        edge: decl.edge.clone(),
                    },
                ));
            };
            if self.edges[edge].output {
                return Err(self.err(
                    &place,
                    Kind::DuplicateId {
                        what: "output",
                        id: decl.edge.clone(),
                    },
                ));
            }
            self.edges[edge].output = true;
            outputs.push(edge);
        }
        Ok(outputs)
    }

    fn check_every_edge_read(&self) -> Result<(), CircuitError> {
        for edge in self.edges.values() {
            if edge.readers.is_empty() && !edge.output {
                let origin = match edge.producer {
                    Some(p) => format!("produced by node `{}`", quoted(&self.nodes[p].id)),
                    None => "a circuit input".to_owned(),
                };
                return Err(self.err(
                    &Place::root(),
                    Kind::Unread {
                        edge: edge.id.clone(),
                        origin,
                    },
                ));
            }
        }
        Ok(())
    }

    fn graph(&self) -> DiGraph<NodeIdx, Dep> {
        let mut graph = DiGraph::with_capacity(self.nodes.len(), self.nodes.len() * 2);
        for n in self.nodes.keys() {
            graph.add_node(n);
        }
        let at = |n: NodeIdx| NodeIndex::new(n.index());
        for (e, edge) in &self.edges {
            if let Some(p) = edge.producer {
                for &r in &edge.readers {
                    graph.add_edge(at(p), at(r), Dep::Edge(e));
                }
            }
        }
        for (s, state) in &self.states {
            for &r in &state.readers {
                graph.add_edge(at(state.writer), at(r), Dep::State(s));
            }
        }
        graph
    }

    fn weight_total(&self) -> Result<u64, CircuitError> {
        self.tensors
            .values()
            .try_fold(0u64, |acc, t| acc.checked_add(t.bytes))
            .ok_or_else(|| {
                self.err(
                    &Place::root(),
                    Kind::Overflow {
                        what: "the sum of the weights".to_owned(),
                    },
                )
            })
    }
}

/// What a `weights_only` node has beyond weights, if anything.
fn weights_only_fault(node: &Node) -> Option<String> {
    let counts = [
        (node.inputs.len(), "reads", "edge"),
        (node.outputs.len(), "writes", "edge"),
        (node.writes.len(), "writes", "state"),
        (node.reads.len(), "reads", "state"),
    ];
    counts
        .into_iter()
        .find(|&(count, _, _)| count > 0)
        .map(|(count, verb, what)| {
            format!("{verb} {count} {what}{}", if count == 1 { "" } else { "s" })
        })
}

fn instance_prefix(block: &str, index: Option<u64>) -> String {
    match index {
        Some(i) => format!("{block}.{i}."),
        None => format!("{block}."),
    }
}

/// Expands `{i}` to the instance index.
fn expand(text: &str, index: u64) -> String {
    if text.contains("{i}") {
        text.replace("{i}", &index.to_string())
    } else {
        text.to_owned()
    }
}

fn render_tensor(shape: &[u64], format: Format, count: u64) -> String {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    format!("[{}] {format} x{count}", dims.join(", "))
}

/// Ids are `[A-Za-z0-9_]+` (dims `[a-z_][a-z0-9_]*`, the expression name syntax): the dot
/// separates block, instance and local id.
fn check_name(name: &str, what: &'static str, expression_name: bool) -> Result<(), Kind> {
    let ok = if expression_name {
        name.starts_with(|c: char| c == '_' || c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c == '_' || c.is_ascii_lowercase() || c.is_ascii_digit())
    } else {
        !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
    };
    if ok {
        Ok(())
    } else {
        Err(Kind::BadName {
            name: name.to_owned(),
            what,
            why: if expression_name {
                "dim names are [a-z_][a-z0-9_]*"
            } else {
                "ids are letters, digits and `_` (the dot separates block, instance and id)"
            },
        })
    }
}
