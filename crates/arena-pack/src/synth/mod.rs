//! Workloads for benchmarks and tests: synthetic buffer sets shaped like what an ML compiler
//! emits, at any scale.
//!
//! Invariants: every generator is a pure function of its arguments (a seeded SplitMix64, no
//! clock): same arguments, same buffers. One op per step; a buffer lives from the step of the
//! op that produces it to the step of its last reader, inclusive.
//!
//! - [`transformer()`]: inference of a stack of transformer layers (this module);
//! - [`training()`]: transformer training, forward and backward over micro-batches in a 1F1B
//!   schedule, with activation recomputation, skip connections and weight-gradient buckets;
//! - [`resnet50()`]: ResNet-50 training at batch 32 in mixed precision, forward, backward and
//!   the SGD step, ~1,000 buffers;
//! - [`co_live()`]: tens of thousands of buffers live at once (a fan-in), to check that the
//!   packer's cost does not grow with the pairs of overlapping buffers.
//!
//! The inference transformer: attention in head groups, then a gated MLP. The residual stream
//! links consecutive layers, skip connections reach a few layers ahead, and a few outputs stay
//! live to the end (as cached states do). Sizes follow `rows x width x 2 bytes` rounded up to
//! 256; `rows` changes between stages of the model.

mod compiler;
mod resnet;
mod stress;
mod training;

pub use compiler::{Compiler, Style, compiler};
pub use resnet::resnet50;
pub use stress::co_live;
pub use training::{Training, training};

use crate::Buffer;

/// The shape of a synthetic transformer workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transformer {
    /// Seed of the variations (stage row counts, skip lengths, which outputs are kept).
    pub seed: u64,
    /// Exactly this many buffers are produced.
    pub buffers: usize,
    /// Hidden width (elements per row).
    pub hidden: u64,
    /// Attention head groups: each adds a scores, a softmax and a context buffer per layer.
    pub head_groups: u64,
}

impl Transformer {
    /// A workload of `buffers` buffers with a 4096-wide hidden state and 8 head groups.
    pub fn new(seed: u64, buffers: usize) -> Transformer {
        Transformer {
            seed,
            buffers,
            hidden: 4096,
            head_groups: 8,
        }
    }

    /// The buffers, in production order (ids are indices).
    pub fn generate(&self) -> Vec<Buffer> {
        Builder::new(*self).run()
    }
}

/// Shorthand for [`Transformer::new`]`(seed, buffers).generate()`.
pub fn transformer(seed: u64, buffers: usize) -> Vec<Buffer> {
    Transformer::new(seed, buffers).generate()
}

/// A small deterministic generator (SplitMix64): no dependency, same stream everywhere.
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[low, high]`.
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }
}

struct Builder {
    shape: Transformer,
    random: SplitMix,
    step: u64,
    /// Producer step, last reader step (inclusive) and size of each buffer.
    made: Vec<(u64, u64, u64)>,
}

impl Builder {
    fn new(shape: Transformer) -> Builder {
        Builder {
            shape,
            random: SplitMix(shape.seed),
            step: 0,
            made: Vec::with_capacity(shape.buffers),
        }
    }

    fn full(&self) -> bool {
        self.made.len() >= self.shape.buffers
    }

    /// A buffer of `rows x width` 2-byte elements produced at the current step.
    fn produce(&mut self, rows: u64, width: u64) -> Option<usize> {
        if self.full() {
            return None;
        }
        let size = (rows * width * 2).div_ceil(256) * 256;
        self.made.push((self.step, self.step, size));
        Some(self.made.len() - 1)
    }

    fn read(&mut self, buffer: Option<usize>) {
        if let Some(b) = buffer {
            self.made[b].1 = self.made[b].1.max(self.step);
        }
    }

    fn run(mut self) -> Vec<Buffer> {
        let h = self.shape.hidden;
        let groups = self.shape.head_groups.max(1);
        let mut rows = 256;
        let mut residual = self.produce(rows, h); // the embedded input
        let mut skips: Vec<(u64, Option<usize>)> = Vec::new(); // (layer that reads it, buffer)
        let mut layer = 0u64;
        while !self.full() {
            if layer.is_multiple_of(24) {
                // A new stage: a different number of rows (token count x batch).
                rows = 64 * self.random.between(2, 8);
            }
            self.step += 1;
            let normed = self.produce(rows, h);
            self.read(residual);
            self.step += 1;
            self.read(normed);
            let q = self.produce(rows, h);
            let k = self.produce(rows, h / 4);
            let v = self.produce(rows, h / 4);
            self.step += 1;
            self.read(q);
            self.read(k);
            let q_rot = self.produce(rows, h);
            let k_rot = self.produce(rows, h / 4);
            let mut contexts = Vec::with_capacity(groups as usize);
            for _ in 0..groups {
                self.step += 1;
                self.read(q_rot);
                self.read(k_rot);
                let scores = self.produce(rows, rows.max(64));
                self.step += 1;
                self.read(scores);
                let probs = self.produce(rows, rows.max(64));
                self.step += 1;
                self.read(probs);
                self.read(v);
                contexts.push(self.produce(rows, h / groups));
            }
            self.step += 1;
            for &c in &contexts {
                self.read(c);
            }
            let attended = self.produce(rows, h);
            self.step += 1;
            self.read(attended);
            self.read(residual);
            let mid = self.produce(rows, h);
            self.step += 1;
            self.read(mid);
            let normed2 = self.produce(rows, h);
            self.step += 1;
            self.read(normed2);
            let up = self.produce(rows, 3 * h);
            self.step += 1;
            self.read(normed2);
            let gate = self.produce(rows, 3 * h);
            self.step += 1;
            self.read(gate);
            self.read(up);
            let gated = self.produce(rows, 3 * h);
            self.step += 1;
            self.read(gated);
            let down = self.produce(rows, h);
            self.step += 1;
            self.read(down);
            self.read(mid);
            // Skip connections arriving at this layer are added into the new residual.
            let (arriving, waiting): (Vec<_>, Vec<_>) =
                skips.into_iter().partition(|&(at, _)| at <= layer);
            skips = waiting;
            for (_, s) in arriving {
                self.read(s);
            }
            residual = self.produce(rows, h);
            if layer % 4 == 3 {
                // A skip connection to a later layer (a few layers ahead).
                let ahead = self.random.between(2, 12);
                skips.push((layer + ahead, residual));
            }
            if self.random.next().is_multiple_of(64) {
                // An output kept to the end of the program (a cached state).
                let kept = self.produce(rows, h / 4);
                skips.push((u64::MAX, kept));
            }
            layer += 1;
        }
        self.step += 1;
        self.read(residual);
        for (_, s) in skips {
            self.read(s);
        }
        self.made
            .into_iter()
            .map(|(produced, last_read, size)| Buffer::new(produced, last_read + 1, size))
            .collect()
    }
}

/// A program being recorded: the current step and, per buffer, its producer step, last reader
/// step (inclusive) and size, rounded up to `align` bytes.
pub(crate) struct Trace {
    step: u64,
    align: u64,
    made: Vec<(u64, u64, u64)>,
}

impl Trace {
    pub(crate) fn new(align: u64) -> Trace {
        Trace {
            step: 0,
            align: align.max(1),
            made: Vec::new(),
        }
    }

    /// The next op.
    pub(crate) fn op(&mut self) {
        self.step += 1;
    }

    /// A buffer of `bytes` produced by the current op.
    pub(crate) fn produce(&mut self, bytes: u64) -> usize {
        let size = bytes.div_ceil(self.align) * self.align;
        self.made.push((self.step, self.step, size));
        self.made.len() - 1
    }

    /// The current op reads `buffer`.
    pub(crate) fn read(&mut self, buffer: usize) {
        self.made[buffer].1 = self.made[buffer].1.max(self.step);
    }

    pub(crate) fn len(&self) -> usize {
        self.made.len()
    }

    pub(crate) fn size(&self, buffer: usize) -> u64 {
        self.made[buffer].2
    }

    pub(crate) fn finish(self) -> Vec<Buffer> {
        self.made
            .into_iter()
            .map(|(produced, last_read, size)| Buffer::new(produced, last_read + 1, size))
            .collect()
    }
}
