//! Transformer training: forward and backward of a stack of layers over micro-batches.
//!
//! Micro-batches run in a 1F1B schedule with two in flight (forward of micro-batch `m + 1`
//! before the backward of `m`), so the saved activations of two micro-batches overlap. A
//! layer's forward: RMS-norm, Q/K/V projections, rotary, attention in head groups (scores and
//! probabilities as scratch, a context per group, the log-sum-exp saved), output projection,
//! residual add, RMS-norm, gate and up projections, the gated product, down projection, residual
//! add. Every fourth layer's output is also added into the residual 2-6 layers later (a skip
//! connection), and its gradient flows back the same way. Backward mirrors the forward: per op
//! the gradients of its inputs and, for each weight, a weight gradient that waits in a bucket
//! until the bucket (3-6 gradients) is reduced. With `recompute`, a layer saves only its input
//! and its forward is run again just before its backward (activation checkpointing); otherwise
//! it saves what its backward reads. Row counts vary per micro-batch (packed sequences,
//! 256 x 2..8 tokens).
//!
//! Invariants: a pure function of its arguments (seeded SplitMix64); sizes are bf16 rounded up
//! to 512 bytes; with two micro-batches in flight the program is one connected part.

use super::{SplitMix, Trace};
use crate::Buffer;

/// The shape of a training workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Training {
    /// Seed of the variations (rows per micro-batch, skip lengths, bucket sizes).
    pub seed: u64,
    /// Micro-batches are added until at least this many buffers are produced.
    pub buffers: usize,
    /// Layers of the model.
    pub layers: u64,
    /// Hidden width.
    pub hidden: u64,
    /// Width of K and V (grouped-query attention).
    pub kv_width: u64,
    /// MLP width.
    pub ffn: u64,
    /// Attention heads, and the groups attention runs in.
    pub heads: u64,
    /// Attention head groups: each has its own scratch.
    pub head_groups: u64,
    /// Activation recomputation: save only each layer's input.
    pub recompute: bool,
}

impl Training {
    /// A 32-layer model with a 4096-wide hidden state (8 KV heads of 128, an MLP of 14,336),
    /// 32 heads in 8 groups.
    pub fn new(seed: u64, buffers: usize, recompute: bool) -> Training {
        Training {
            seed,
            buffers,
            layers: 32,
            hidden: 4096,
            kv_width: 1024,
            ffn: 14336,
            heads: 32,
            head_groups: 8,
            recompute,
        }
    }

    /// The buffers, in production order.
    pub fn generate(&self) -> Vec<Buffer> {
        let mut builder = Builder {
            shape: *self,
            trace: Trace::new(512),
            random: SplitMix(self.seed),
            pending: Vec::new(),
            bucket: 4,
        };
        builder.run();
        builder.trace.finish()
    }
}

/// Shorthand for [`Training::new`]`(seed, buffers, recompute).generate()`.
pub fn training(seed: u64, buffers: usize, recompute: bool) -> Vec<Buffer> {
    Training::new(seed, buffers, recompute).generate()
}

/// What a layer's forward leaves for its backward.
struct Saved {
    x: usize,
    ln1: usize,
    q: usize,
    k: usize,
    v: usize,
    lse: usize,
    contexts: Vec<usize>,
    x1: usize,
    ln2: usize,
    up: usize,
    gate: usize,
    act: usize,
}

/// One micro-batch in flight: its rows, per layer what the backward needs, the skip
/// connections still to arrive and the skip sources of each layer.
struct MicroBatch {
    rows: u64,
    /// Per layer: its saved activations (`None` with recompute: only `inputs` are kept).
    saved: Vec<Option<Saved>>,
    /// Per layer: its input (the checkpoint).
    inputs: Vec<usize>,
    /// Per layer: the layer whose output it also adds (a skip connection), if any.
    skip_from: Vec<Option<usize>>,
    /// The last layer's output.
    output: usize,
}

struct Builder {
    shape: Training,
    trace: Trace,
    random: SplitMix,
    /// Weight gradients waiting for their bucket's reduction.
    pending: Vec<usize>,
    bucket: usize,
}

const BF16: u64 = 2;

impl Builder {
    fn run(&mut self) {
        let mut in_flight: Option<MicroBatch> = None;
        loop {
            let done = self.trace.len() >= self.shape.buffers;
            let next = (!done).then(|| self.forward());
            match (in_flight.take(), next) {
                (Some(previous), next) => {
                    self.backward(previous);
                    in_flight = next;
                }
                (None, Some(next)) => in_flight = Some(next),
                (None, None) => break,
            }
            if in_flight.is_none() && self.trace.len() >= self.shape.buffers {
                break;
            }
        }
        self.flush();
    }

    fn forward(&mut self) -> MicroBatch {
        let rows = 256 * self.random.between(2, 8);
        let layers = self.shape.layers as usize;
        let mut skip_from = vec![None; layers];
        for l in (3..layers).step_by(4) {
            let to = l + self.random.between(2, 6) as usize;
            if to < layers {
                skip_from[to] = Some(l);
            }
        }
        self.trace.op();
        let mut x = self.trace.produce(rows * self.shape.hidden * BF16); // embedding
        let mut outputs: Vec<usize> = Vec::with_capacity(layers);
        let mut saved = Vec::with_capacity(layers);
        let mut inputs = Vec::with_capacity(layers);
        for from in &skip_from {
            let skip = from.map(|from| outputs[from]);
            let (out, s) = self.forward_layer(x, rows, skip);
            inputs.push(x);
            saved.push((!self.shape.recompute).then_some(s));
            outputs.push(out);
            x = out;
        }
        MicroBatch {
            rows,
            saved,
            inputs,
            skip_from,
            output: x,
        }
    }

    /// A layer's forward from `x` (adding `skip` into its residual); returns its output and
    /// what its backward reads.
    fn forward_layer(&mut self, x: usize, rows: u64, skip: Option<usize>) -> (usize, Saved) {
        let Training {
            hidden: h,
            kv_width: kv,
            ffn,
            heads,
            head_groups: groups,
            ..
        } = self.shape;
        let t = &mut self.trace;
        t.op();
        t.read(x);
        let ln1 = t.produce(rows * h * BF16);
        t.op();
        t.read(ln1);
        let q0 = t.produce(rows * h * BF16);
        let k0 = t.produce(rows * kv * BF16);
        let v = t.produce(rows * kv * BF16);
        t.op();
        t.read(q0);
        t.read(k0);
        let q = t.produce(rows * h * BF16);
        let k = t.produce(rows * kv * BF16);
        let per_group = heads / groups.max(1);
        let lse = t.produce(rows * heads * 4);
        let mut contexts = Vec::new();
        for _ in 0..groups {
            t.op();
            t.read(q);
            t.read(k);
            let scores = t.produce(per_group * rows * rows * BF16);
            t.op();
            t.read(scores);
            t.read(lse);
            let probs = t.produce(per_group * rows * rows * BF16);
            t.op();
            t.read(probs);
            t.read(v);
            contexts.push(t.produce(rows * h / groups * BF16));
        }
        t.op();
        for &c in &contexts {
            t.read(c);
        }
        let o = t.produce(rows * h * BF16);
        t.op();
        t.read(x);
        t.read(o);
        if let Some(s) = skip {
            t.read(s);
        }
        let x1 = t.produce(rows * h * BF16);
        t.op();
        t.read(x1);
        let ln2 = t.produce(rows * h * BF16);
        t.op();
        t.read(ln2);
        let up = t.produce(rows * ffn * BF16);
        let gate = t.produce(rows * ffn * BF16);
        t.op();
        t.read(up);
        t.read(gate);
        let act = t.produce(rows * ffn * BF16);
        t.op();
        t.read(act);
        let down = t.produce(rows * h * BF16);
        t.op();
        t.read(x1);
        t.read(down);
        let out = t.produce(rows * h * BF16);
        (
            out,
            Saved {
                x,
                ln1,
                q,
                k,
                v,
                lse,
                contexts,
                x1,
                ln2,
                up,
                gate,
                act,
            },
        )
    }

    fn backward(&mut self, batch: MicroBatch) {
        let rows = batch.rows;
        let h = self.shape.hidden;
        // The loss head: logits in one chunk of the vocabulary, their gradient, d(output).
        let t = &mut self.trace;
        t.op();
        t.read(batch.output);
        let logits = t.produce(rows * 8192 * BF16);
        t.op();
        t.read(logits);
        let d_logits = t.produce(rows * 8192 * BF16);
        t.op();
        t.read(d_logits);
        t.read(batch.output);
        let mut d_out = t.produce(rows * h * BF16);
        let layers = batch.saved.len();
        // Gradients of skip sources, waiting for their source layer's backward.
        let mut d_skips: Vec<Option<usize>> = vec![None; layers];
        let mut saved = batch.saved;
        for l in (0..layers).rev() {
            let s = match saved[l].take() {
                Some(s) => s,
                None => {
                    let skip = batch.skip_from[l].map(|from| batch.inputs[from + 1]);
                    self.forward_layer(batch.inputs[l], rows, skip).1
                }
            };
            if let Some(d) = d_skips[l].take() {
                let t = &mut self.trace;
                t.op();
                t.read(d);
                t.read(d_out);
                d_out = t.produce(rows * h * BF16);
            }
            let (d_x, d_x1) = self.backward_layer(&s, d_out, rows);
            if let Some(from) = batch.skip_from[l] {
                d_skips[from] = Some(d_x1);
            }
            d_out = d_x;
        }
        // The embedding's gradient.
        let t = &mut self.trace;
        t.op();
        t.read(d_out);
        let d_embed = t.produce(1024 * h * BF16);
        self.weight_grad(d_embed);
    }

    /// A layer's backward from `d_out`; returns the gradient of its input and of its first
    /// residual (which a skip connection's source receives).
    fn backward_layer(&mut self, s: &Saved, d_out: usize, rows: u64) -> (usize, usize) {
        let Training {
            hidden: h,
            kv_width: kv,
            ffn,
            heads,
            head_groups: groups,
            ..
        } = self.shape;
        let per_group = heads / groups.max(1);
        let t = &mut self.trace;
        t.op();
        t.read(d_out);
        t.read(s.act);
        let d_act = t.produce(rows * ffn * BF16);
        let w_down = t.produce(h * ffn * BF16);
        t.op();
        t.read(d_act);
        t.read(s.up);
        t.read(s.gate);
        let d_up = t.produce(rows * ffn * BF16);
        let d_gate = t.produce(rows * ffn * BF16);
        t.op();
        t.read(d_up);
        t.read(d_gate);
        t.read(s.ln2);
        let d_ln2 = t.produce(rows * h * BF16);
        let w_up = t.produce(h * ffn * BF16);
        let w_gate = t.produce(h * ffn * BF16);
        t.op();
        t.read(d_ln2);
        t.read(s.x1);
        t.read(d_out);
        let d_x1 = t.produce(rows * h * BF16);
        t.op();
        t.read(d_x1);
        for &c in &s.contexts {
            t.read(c);
        }
        let d_context = t.produce(rows * h * BF16);
        let w_o = t.produce(h * h * BF16);
        let d_v = t.produce(rows * kv * BF16);
        let mut d_qs = Vec::new();
        let mut d_ks = Vec::new();
        for _ in 0..groups {
            // Flash-attention style: scores and probabilities are recomputed per group.
            t.op();
            t.read(s.q);
            t.read(s.k);
            t.read(s.lse);
            let probs = t.produce(per_group * rows * rows * BF16);
            t.op();
            t.read(probs);
            t.read(d_context);
            t.read(s.v);
            t.read(d_v);
            let d_probs = t.produce(per_group * rows * rows * BF16);
            t.op();
            t.read(d_probs);
            t.read(probs);
            let d_scores = t.produce(per_group * rows * rows * BF16);
            t.op();
            t.read(d_scores);
            t.read(s.q);
            t.read(s.k);
            d_qs.push(t.produce(rows * h / groups * BF16));
            d_ks.push(t.produce(rows * kv / groups * BF16));
        }
        t.op();
        for (&dq, &dk) in d_qs.iter().zip(&d_ks) {
            t.read(dq);
            t.read(dk);
        }
        let d_q = t.produce(rows * h * BF16);
        let d_k = t.produce(rows * kv * BF16);
        t.op();
        t.read(d_q);
        t.read(d_k);
        t.read(d_v);
        t.read(s.ln1);
        let d_ln1 = t.produce(rows * h * BF16);
        let w_q = t.produce(h * h * BF16);
        let w_kv = t.produce(2 * h * kv * BF16);
        t.op();
        t.read(d_ln1);
        t.read(s.x);
        t.read(d_x1);
        let d_x = t.produce(rows * h * BF16);
        for w in [w_down, w_up, w_gate, w_o, w_q, w_kv] {
            self.weight_grad(w);
        }
        (d_x, d_x1)
    }

    /// A weight gradient joins the bucket; a full bucket is reduced (read) at the next op.
    fn weight_grad(&mut self, grad: usize) {
        self.pending.push(grad);
        if self.pending.len() >= self.bucket {
            self.flush();
            self.bucket = self.random.between(3, 6) as usize;
        }
    }

    fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.trace.op();
        for g in std::mem::take(&mut self.pending) {
            self.trace.read(g);
        }
    }
}
