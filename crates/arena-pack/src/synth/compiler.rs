//! Compiler-shaped training steps: the buffer sets an ML compiler's memory planner sees for one
//! training step of a model it has fused and scheduled, in two styles.
//!
//! - [`Style::Xla`] (IOPDDL-like): an SPMD-partitioned XLA program. Every buffer's size is its
//!   shape's bytes exactly (`f32[8,512,768]`, `pred[8,512]`, `f32[]`): no alignment, so the
//!   sizes share only a small common factor. The parameters and the optimizer's moments are in
//!   the set, live over the whole program; gathered weight shards live from their all-gather to
//!   their last use; weight gradients are accumulated across micro-batches and live until the
//!   optimizer; the optimizer's new parameters and moments live to the end (program outputs).
//! - [`Style::Somas`] (MindSpore SOMAS-like): a graph-mode kernel sequence on an accelerator.
//!   Sizes are rounded as its allocator does (`bytes + 32` up to a multiple of 512), kernels
//!   have workspaces, weights are not in the set (they are allocated statically), weight
//!   gradients wait in buckets for a fused all-reduce, and the optimizer's temporaries live for
//!   one kernel each.
//!
//! The model is a stack of `layers` blocks, all from one or two block *templates* (as real
//! models repeat a block: the same ops, the same shapes), between an embedding and a
//! vocabulary head. A template is a random fused-op graph: each op reads the op before it and,
//! with geometrically falling odds, older values of the block (or the block's input, as a
//! residual does), may read a weight, produces one to three outputs of shapes drawn from a
//! skewed palette (scalars and vectors, `[batch, seq, hidden]` activations, `[batch, seq,
//! ffn]` intermediates, `[batch, heads, seq, seq]` scores, index and mask tensors; each op of
//! an XLA program sharded 1, 2, 4 or 8 ways) and may have a workspace. Training saves some
//! outputs for the backward (all but the block input under rematerialization, which recomputes
//! the block's forward before its backward). The backward mirrors each op in reverse: it reads
//! the gradients of the op's outputs and what the op saved, produces the gradients of its
//! inputs (a value read by several ops gets one gradient per reader, all read by its
//! producer's backward) and, for a weight, a weight gradient. Micro-batches run one after the
//! other with their own row counts (packed sequences), and the optimizer (Adam) steps every
//! parameter at the end.
//!
//! Invariants: a pure function of its arguments (seeded SplitMix64, no clock); one op per step;
//! a buffer lives from its producer's step to its last reader's, inclusive; every size is
//! positive. Micro-batches are added until at least `buffers` buffers exist (a micro-batch is
//! a few hundred to a few thousand buffers, so the count is at most that much above); a target
//! below one micro-batch's count gets fewer layers instead.

use super::{SplitMix, Trace};
use crate::Buffer;

/// How the compiler lays out memory (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// An SPMD XLA program (IOPDDL-like): exact byte sizes, parameters in the set.
    Xla,
    /// A MindSpore graph (SOMAS-like): 512-byte rounding, workspaces, no weights.
    Somas,
}

/// The shape of a compiler-shaped training step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compiler {
    /// Seed of the model (its dimensions and block templates) and of the row counts.
    pub seed: u64,
    /// Micro-batches are added until at least this many buffers are produced.
    pub buffers: usize,
    /// The compiler's memory layout.
    pub style: Style,
}

impl Compiler {
    /// A training step of about `buffers` buffers.
    pub fn new(seed: u64, buffers: usize, style: Style) -> Compiler {
        Compiler {
            seed,
            buffers,
            style,
        }
    }

    /// The buffers, in production order.
    pub fn generate(&self) -> Vec<Buffer> {
        let model = Model::new(self.seed, self.style);
        // A micro-batch's buffer count does not depend on its rows: measure it with one and
        // two micro-batches, then take as many as the target needs.
        let mut layers = model.layers;
        loop {
            let one = model.program(layers, 1).len();
            if one <= self.buffers.max(1) || layers == 1 {
                break;
            }
            layers = (layers / 2).max(1);
        }
        let one = model.program(layers, 1).len();
        let two = model.program(layers, 2).len();
        let per = (two - one).max(1);
        let batches = 1 + self.buffers.saturating_sub(one).div_ceil(per);
        model.program(layers, batches)
    }
}

/// Shorthand for [`Compiler::new`]`(seed, buffers, style).generate()`.
pub fn compiler(seed: u64, buffers: usize, style: Style) -> Vec<Buffer> {
    Compiler::new(seed, buffers, style).generate()
}

/// A tensor shape class of the palette: its elements are a product of the model's dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `f32[]` and small vectors (a loss, a norm's statistics per layer).
    Scalar(u64),
    /// `[hidden]` (biases, norm scales).
    Vector,
    /// `[batch, seq]` (masks, indices, per-token statistics).
    Tokens,
    /// `[batch, seq, hidden]`.
    Hidden,
    /// `[batch, seq, ffn]`.
    Wide,
    /// `[batch, heads, seq, seq]`.
    Scores,
}

/// One op of a block template.
#[derive(Clone, Debug)]
struct Op {
    /// What it reads: `None` is the block's input, `Some((op, output))` an earlier op's output.
    inputs: Vec<Option<(usize, usize)>>,
    /// Per output: its shape, element bytes, shard count, and whether the backward reads it.
    outputs: Vec<(Shape, u64, u64, bool)>,
    /// The weight it reads (elements of `[hidden, hidden]` times this, sharded), if any.
    weight: Option<u64>,
    /// A workspace of this fraction (1/2^k) of its first output, if any.
    workspace: Option<u32>,
}

/// The model: its dimensions and the block templates.
struct Model {
    style: Style,
    seed: u64,
    layers: usize,
    batch: u64,
    seq: u64,
    hidden: u64,
    ffn: u64,
    heads: u64,
    vocab: u64,
    remat: bool,
    templates: Vec<Vec<Op>>,
}

impl Model {
    fn new(seed: u64, style: Style) -> Model {
        let mut r = SplitMix(seed ^ 0x636f_6d70_696c_6572);
        let pick = |r: &mut SplitMix, values: &[u64]| {
            values[r.between(0, values.len() as u64 - 1) as usize]
        };
        let hidden = pick(&mut r, &[512, 768, 1024, 1536, 2048, 2560, 4096]);
        let ffn = if r.between(0, 1) == 0 {
            4 * hidden
        } else {
            (8 * hidden / 3).div_ceil(256) * 256
        };
        let heads = hidden / pick(&mut r, &[64, 128]);
        let templates = (0..r.between(1, 2))
            .map(|_| template(&mut r, style))
            .collect();
        Model {
            style,
            seed,
            layers: r.between(8, 48) as usize,
            batch: pick(&mut r, &[1, 2, 4, 8, 16]),
            seq: pick(&mut r, &[128, 256, 512, 1024]),
            hidden,
            ffn,
            heads,
            vocab: pick(&mut r, &[32_000, 50_257, 51_200, 128_256]),
            remat: r.between(0, 2) == 0,
            templates,
        }
    }

    /// Bytes of `shape` with `bytes` per element, sharded `shard` ways, for `rows` sequences.
    fn bytes(&self, shape: Shape, element: u64, shard: u64, rows: u64) -> u64 {
        let tokens = rows * self.seq;
        let elements = match shape {
            Shape::Scalar(n) => n,
            Shape::Vector => self.hidden,
            Shape::Tokens => tokens,
            Shape::Hidden => tokens * self.hidden,
            Shape::Wide => tokens * self.ffn,
            Shape::Scores => rows * self.heads * self.seq * self.seq,
        };
        self.round((elements * element).div_ceil(shard).max(1))
    }

    /// The allocator's rounding.
    fn round(&self, bytes: u64) -> u64 {
        match self.style {
            Style::Xla => bytes,
            Style::Somas => (bytes + 32).div_ceil(512) * 512,
        }
    }

    fn program(&self, layers: usize, batches: usize) -> Vec<Buffer> {
        Program {
            model: self,
            layers,
            trace: Trace::new(1),
            random: SplitMix(self.seed ^ 0x7072_6f67),
            params: Vec::new(),
            accumulated: Vec::new(),
            bucket: Vec::new(),
        }
        .run(batches)
    }
}

/// A random block template: 6-24 ops.
fn template(r: &mut SplitMix, style: Style) -> Vec<Op> {
    let count = r.between(6, 24) as usize;
    let mut ops: Vec<Op> = Vec::with_capacity(count);
    for j in 0..count {
        let mut inputs = vec![if j == 0 { None } else { Some((j - 1, 0)) }];
        // Older values: each further one with falling odds, nearer ones likelier.
        while r.between(0, 99) < 35 && inputs.len() < 4 {
            let input = if j == 0 || r.between(0, 3) == 0 {
                None
            } else {
                let back = 1 + r.next().trailing_zeros().min(j as u32 - 1) as usize;
                let op = j - back;
                Some((op, r.between(0, ops[op].outputs.len() as u64 - 1) as usize))
            };
            if !inputs.contains(&input) {
                inputs.push(input);
            }
        }
        let outputs = (0..match r.between(0, 9) {
            0 => 3,
            1 | 2 => 2,
            _ => 1,
        })
            .map(|_| {
                let shape = match r.between(0, 99) {
                    0..=14 => Shape::Scalar(r.between(1, 64)),
                    15..=24 => Shape::Vector,
                    25..=36 => Shape::Tokens,
                    37..=74 => Shape::Hidden,
                    75..=91 => Shape::Wide,
                    _ => Shape::Scores,
                };
                let element = match (shape, r.between(0, 19)) {
                    (Shape::Tokens, 0..=9) => 1, // a mask
                    (_, 0..=11) => 2,
                    _ => 4,
                };
                let shard = match style {
                    Style::Xla => 1 << r.between(0, 3),
                    Style::Somas => 1,
                };
                (shape, element, shard, r.between(0, 99) < 45)
            })
            .collect();
        let weight = (r.between(0, 99) < 30).then(|| r.between(1, 4));
        let workspace = (r.between(0, 99)
            < match style {
                Style::Xla => 10,
                Style::Somas => 40,
            })
        .then(|| r.between(0, 4) as u32);
        ops.push(Op {
            inputs,
            outputs,
            weight,
            workspace,
        });
    }
    ops
}

/// One parameter: its buffers live over the program, its size, and its gradient accumulator.
struct Param {
    bytes: u64,
}

/// The program being recorded.
struct Program<'m> {
    model: &'m Model,
    layers: usize,
    trace: Trace,
    random: SplitMix,
    /// Every parameter (embedding, each block op's weight, the head), in first-use order.
    params: Vec<Param>,
    /// Per parameter: the accumulated gradient so far (Xla), if any.
    accumulated: Vec<Option<usize>>,
    /// Weight gradients waiting for their fused all-reduce (Somas).
    bucket: Vec<usize>,
}

/// What a block's forward leaves for its backward: per op, its output buffers (for saved
/// outputs; `None` when freed or rematerialized) and the buffers it read.
struct BlockRecord {
    template: usize,
    input: usize,
    outputs: Vec<Vec<Option<usize>>>,
}

impl Program<'_> {
    fn run(mut self, batches: usize) -> Vec<Buffer> {
        let model = self.model;
        // The parameters: the embedding, one per weighted op of each block, the head.
        let weighted = |t: &Vec<Op>| t.iter().filter_map(|op| op.weight).collect::<Vec<_>>();
        let mut sizes = vec![model.vocab * model.hidden * 2];
        for layer in 0..self.layers {
            let t = &model.templates[layer % model.templates.len()];
            sizes.extend(
                weighted(t)
                    .into_iter()
                    .map(|k| k * model.hidden * model.hidden * 2),
            );
        }
        sizes.push(model.vocab * model.hidden * 2);
        self.trace.op();
        // The parameters and Adam's two moments (f32) are program inputs (Xla only).
        let mut whole: Vec<usize> = Vec::new();
        for &bytes in &sizes {
            self.params.push(Param { bytes });
            if model.style == Style::Xla {
                for b in [bytes, 2 * bytes, 2 * bytes] {
                    whole.push(self.trace.produce(model.round(b)));
                }
            }
        }
        self.accumulated = vec![None; self.params.len()];
        for _ in 0..batches {
            let rows = model.batch * self.random.between(1, 4);
            self.micro_batch(rows);
        }
        self.flush();
        self.optimizer();
        self.trace.op();
        for b in whole {
            self.trace.read(b);
        }
        self.trace.finish()
    }

    fn produce(&mut self, bytes: u64) -> usize {
        self.trace.produce(self.model.round(bytes))
    }

    /// The weight `param` as an op uses it: an all-gathered copy for an XLA op (live from the
    /// gather to the op), none for SOMAS (weights are not in its set).
    fn gather(&mut self, param: usize) -> Option<usize> {
        if self.model.style != Style::Xla {
            return None;
        }
        let bytes = self.params[param].bytes;
        self.trace.op();
        Some(self.produce(bytes))
    }

    fn micro_batch(&mut self, rows: u64) {
        let model = self.model;
        let tokens = rows * model.seq;
        // The embedding lookup: token ids in, activations out.
        self.trace.op();
        let ids = self.produce(tokens * 4);
        let table = self.gather(0);
        self.trace.op();
        self.trace.read(ids);
        if let Some(t) = table {
            self.trace.read(t);
        }
        let mut x = self.produce(tokens * model.hidden * 2);
        let mut records = Vec::with_capacity(self.layers);
        let mut param = 1;
        for layer in 0..self.layers {
            let template = layer % model.templates.len();
            let (record, out, next) = self.forward(template, x, rows, param, false);
            records.push(record);
            x = out;
            param = next;
        }
        // The head and the loss: logits over the vocabulary, their gradient, d(x).
        let head = self.params.len() - 1;
        let w = self.gather(head);
        self.trace.op();
        self.trace.read(x);
        if let Some(w) = w {
            self.trace.read(w);
        }
        let logits = self.produce(tokens * model.vocab * 2);
        self.trace.op();
        self.trace.read(logits);
        let loss = self.produce(4);
        let d_logits = self.produce(tokens * model.vocab * 2);
        let w = self.gather(head);
        self.trace.op();
        self.trace.read(d_logits);
        self.trace.read(x);
        if let Some(w) = w {
            self.trace.read(w);
        }
        let mut d_x = vec![self.produce(tokens * model.hidden * 2)];
        let d_head = self.produce(self.params[head].bytes);
        self.weight_grad(head, d_head);
        self.trace.op();
        self.trace.read(loss);
        while let Some(record) = records.pop() {
            let weights = model.templates[record.template]
                .iter()
                .filter(|op| op.weight.is_some())
                .count();
            param -= weights;
            d_x = self.backward(record, d_x, rows, param);
        }
        // The embedding's gradient.
        self.trace.op();
        for &g in &d_x {
            self.trace.read(g);
        }
        self.trace.read(ids);
        let d_table = self.produce(self.params[0].bytes);
        self.weight_grad(0, d_table);
    }

    /// A block's forward from `x`; returns what its backward needs, its output and the next
    /// block's first parameter. With `again` (rematerialization before the backward), every
    /// output is kept for the backward.
    fn forward(
        &mut self,
        template: usize,
        x: usize,
        rows: u64,
        mut param: usize,
        again: bool,
    ) -> (BlockRecord, usize, usize) {
        let model = self.model;
        let ops = &model.templates[template];
        let mut outputs: Vec<Vec<Option<usize>>> = Vec::with_capacity(ops.len());
        let mut made: Vec<Vec<usize>> = Vec::with_capacity(ops.len());
        for op in ops {
            let weight = if op.weight.is_some() {
                param += 1;
                self.gather(param - 1)
            } else {
                None
            };
            self.trace.op();
            for input in &op.inputs {
                self.trace.read(match *input {
                    None => x,
                    Some((j, k)) => made[j][k],
                });
            }
            if let Some(w) = weight {
                self.trace.read(w);
            }
            let mine: Vec<usize> = op
                .outputs
                .iter()
                .map(|&(shape, element, shard, _)| {
                    self.produce(model.bytes(shape, element, shard, rows))
                })
                .collect();
            if let Some(k) = op.workspace {
                let bytes = (self.trace.size(mine[0]) >> k).max(1);
                self.produce(bytes);
            }
            outputs.push(
                mine.iter()
                    .zip(&op.outputs)
                    .map(|(&b, &(.., saved))| ((saved && !model.remat) || again).then_some(b))
                    .collect(),
            );
            made.push(mine);
        }
        let out = made.last().map_or(x, |o| o[0]);
        (
            BlockRecord {
                template,
                input: x,
                outputs,
            },
            out,
            param,
        )
    }

    /// A block's backward from the gradients of its output; returns the gradients of its
    /// input.
    fn backward(
        &mut self,
        mut record: BlockRecord,
        d_out: Vec<usize>,
        rows: u64,
        first_param: usize,
    ) -> Vec<usize> {
        let model = self.model;
        if model.remat {
            // Recompute the forward from the saved input, keeping what the backward reads.
            let (again, _, _) =
                self.forward(record.template, record.input, rows, first_param, true);
            record.outputs = again.outputs;
        }
        let ops = &model.templates[record.template];
        // Gradients waiting for each output of each op, and for the block's input.
        let mut grads: Vec<Vec<Vec<usize>>> = ops
            .iter()
            .map(|op| vec![Vec::new(); op.outputs.len()])
            .collect();
        if let Some(last) = grads.last_mut() {
            last[0] = d_out;
        }
        let mut d_input: Vec<usize> = Vec::new();
        let mut param = first_param + ops.iter().filter(|op| op.weight.is_some()).count();
        for (j, op) in ops.iter().enumerate().rev() {
            let weight = if op.weight.is_some() {
                param -= 1;
                self.gather(param)
            } else {
                None
            };
            self.trace.op();
            for g in grads[j].iter().flatten() {
                self.trace.read(*g);
            }
            for b in record.outputs[j].iter().flatten() {
                self.trace.read(*b);
            }
            for input in &op.inputs {
                if let Some((i, k)) = *input
                    && let Some(b) = record.outputs[i][k]
                {
                    self.trace.read(b);
                }
            }
            if let Some(w) = weight {
                self.trace.read(w);
            }
            for input in &op.inputs {
                let (bytes, slot) = match *input {
                    None => (self.trace.size(record.input), None),
                    Some((i, k)) => {
                        let (shape, element, shard, _) = ops[i].outputs[k];
                        (model.bytes(shape, element, shard, rows), Some((i, k)))
                    }
                };
                let g = self.produce(bytes);
                match slot {
                    None => d_input.push(g),
                    Some((i, k)) => grads[i][k].push(g),
                }
            }
            if let Some(k) = op.workspace {
                let (shape, element, shard, _) = op.outputs[0];
                self.produce((model.bytes(shape, element, shard, rows) >> k).max(1));
            }
            if op.weight.is_some() {
                let g = self.produce(self.params[param].bytes);
                self.weight_grad(param, g);
            }
        }
        if d_input.is_empty() {
            // The block's input was read only through the first op: its gradient is that op's.
            self.trace.op();
            d_input.push(self.produce(self.trace.size(record.input)));
        }
        d_input
    }

    /// A weight gradient: accumulated across micro-batches until the optimizer (Xla), or
    /// bucketed for a fused all-reduce of 3-8 gradients (Somas).
    fn weight_grad(&mut self, param: usize, grad: usize) {
        match self.model.style {
            Style::Xla => {
                if let Some(previous) = self.accumulated[param] {
                    self.trace.op();
                    self.trace.read(previous);
                    self.trace.read(grad);
                    let bytes = self.params[param].bytes;
                    self.accumulated[param] = Some(self.produce(bytes));
                } else {
                    self.accumulated[param] = Some(grad);
                }
            }
            Style::Somas => {
                self.bucket.push(grad);
                if self.bucket.len() as u64 >= self.random.between(3, 8) {
                    self.flush();
                }
            }
        }
    }

    fn flush(&mut self) {
        if self.bucket.is_empty() {
            return;
        }
        self.trace.op();
        let bytes: u64 = self.bucket.iter().map(|&g| self.trace.size(g)).sum();
        for g in std::mem::take(&mut self.bucket) {
            self.trace.read(g);
        }
        // The fused all-reduce's output, read by the next kernel.
        let fused = self.produce(bytes);
        self.trace.op();
        self.trace.read(fused);
    }

    /// Adam over every parameter: per parameter an update op reading its gradient, with two
    /// temporaries; Xla's new parameter and moments are outputs, live to the end.
    fn optimizer(&mut self) {
        let mut outputs = Vec::new();
        for p in 0..self.params.len() {
            let bytes = self.params[p].bytes;
            self.trace.op();
            if let Some(g) = self.accumulated[p] {
                self.trace.read(g);
            }
            let t1 = self.produce(2 * bytes);
            let t2 = self.produce(2 * bytes);
            self.trace.op();
            self.trace.read(t1);
            self.trace.read(t2);
            if self.model.style == Style::Xla {
                for b in [bytes, 2 * bytes, 2 * bytes] {
                    outputs.push(self.produce(b));
                }
            }
        }
        self.trace.op();
        for b in outputs {
            self.trace.read(b);
        }
    }
}
