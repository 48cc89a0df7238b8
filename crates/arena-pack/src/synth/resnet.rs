//! ResNet-50 training at batch 32 in mixed precision (fp16 activations and weight copies, fp32
//! batch-norm statistics and master gradients), SGD with momentum and weight decay: one step,
//! forward, backward and the optimizer, about 1,000 buffers (1,001-1,021 for seeds 1-12: the
//! workspaces vary), as a training compiler schedules it.
//!
//! Forward: the 7x7 stem convolution, batch norm, ReLU and max pool; 16 bottleneck blocks in
//! four stages (3, 4, 6, 3 blocks; 256 to 2048 channels, 56x56 down to 7x7), each 1x1, 3x3 and
//! 1x1 convolutions with batch norm (and ReLU after the first two), a projection shortcut in
//! the first block of each stage, the residual add and a ReLU; then average pool, the
//! classifier and the softmax cross-entropy loss: 53 convolutions and 53 batch norms. Every
//! convolution casts its fp32 weight to an fp16 copy first (as autocast does) and may have a
//! workspace for the op's step. Training saves what the backward reads: each convolution's
//! input and fp16 weight, each batch norm's input, mean and inverse deviation, each ReLU's
//! output, the max pool's indices, the softmax probabilities. Backward mirrors every op in
//! reverse: the gradient of its input, workspaces for the data and filter gradients, and
//! weight, scale and shift gradients; each fp16 weight gradient is cast to an fp32 master
//! gradient. The master gradients stay live until the optimizer, which steps the 161
//! parameters one by one in model order: weight decay makes a temporary from each gradient
//! (`d_p + wd x p`, as SGD does), and the momentum and parameter updates read it in place.
//!
//! Invariants: a pure function of `seed`, which varies only the workspaces (whether an op has
//! one, and its size): the ops and every other buffer are the same for every seed; every size
//! is a multiple of 512 bytes.

use super::{SplitMix, Trace};
use crate::Buffer;

const BATCH: u64 = 32;
const FP16: u64 = 2;

/// A convolution, batch norm and optional ReLU as recorded in the forward.
struct Unit {
    input: usize,
    /// The fp16 copy of the weight (read by the forward and by the data gradient).
    weight: usize,
    conv_out: usize,
    mean: usize,
    inv_std: usize,
    bn_out: usize,
    relu_out: Option<usize>,
    /// Bytes of the input and output activations, of the weight; the output channels.
    input_bytes: u64,
    output_bytes: u64,
    weight_bytes: u64,
    channels: u64,
}

struct Builder {
    trace: Trace,
    random: SplitMix,
    /// Weight, scale and shift gradients (read by the optimizer at the end).
    grads: Vec<usize>,
}

/// The buffers of one ResNet-50 training step.
pub fn resnet50(seed: u64) -> Vec<Buffer> {
    let mut b = Builder {
        trace: Trace::new(512),
        random: SplitMix(seed),
        grads: Vec::new(),
    };
    b.run();
    b.trace.finish()
}

/// A residual block in the forward: its units (the shortcut's last) and the add and ReLU.
struct Block {
    units: Vec<Unit>,
    shortcut: Option<Unit>,
    input: usize,
    sum: usize,
    out: usize,
    bytes: u64,
}

impl Builder {
    fn workspace(&mut self, bytes: u64) -> u64 {
        match self.random.between(0, 3) {
            0 => 0,
            k => bytes / (2 << k),
        }
    }

    /// Convolution (+ workspace), batch norm, and ReLU if `relu`.
    #[allow(clippy::too_many_arguments)]
    fn unit(
        &mut self,
        input: usize,
        cin: u64,
        cout: u64,
        kernel: u64,
        side_in: u64,
        side_out: u64,
        relu: bool,
    ) -> Unit {
        let input_bytes = BATCH * side_in * side_in * cin * FP16;
        let output_bytes = BATCH * side_out * side_out * cout * FP16;
        let ws = self.workspace(output_bytes);
        let weight_bytes = kernel * kernel * cin * cout * FP16;
        let t = &mut self.trace;
        // The cast of the fp32 master weight (not an activation) to its fp16 copy.
        t.op();
        let weight = t.produce(weight_bytes);
        t.op();
        t.read(input);
        t.read(weight);
        let conv_out = t.produce(output_bytes);
        if ws > 0 {
            t.produce(ws);
        }
        t.op();
        t.read(conv_out);
        let mean = t.produce(cout * 4);
        let inv_std = t.produce(cout * 4);
        let bn_out = t.produce(output_bytes);
        let relu_out = relu.then(|| {
            t.op();
            t.read(bn_out);
            t.produce(output_bytes)
        });
        Unit {
            input,
            weight,
            conv_out,
            mean,
            inv_std,
            bn_out,
            relu_out,
            input_bytes,
            output_bytes,
            weight_bytes,
            channels: cout,
        }
    }

    fn run(&mut self) {
        self.trace.op();
        let image = self.trace.produce(BATCH * 224 * 224 * 3 * FP16);
        let stem = self.unit(image, 3, 64, 7, 224, 112, true);
        let stem_out = stem.relu_out.unwrap_or(stem.bn_out);
        let t = &mut self.trace;
        t.op();
        t.read(stem_out);
        let mut x = t.produce(BATCH * 56 * 56 * 64 * FP16);
        // int64 indices of the maxima, for the pool's backward.
        let pool_indices = t.produce(BATCH * 56 * 56 * 64 * 8);
        let mut channels = 64;
        let mut side = 56;
        let mut blocks: Vec<Block> = Vec::new();
        for (stage, (count, mid, out)) in
            [(3, 64, 256), (4, 128, 512), (6, 256, 1024), (3, 512, 2048)]
                .into_iter()
                .enumerate()
        {
            for block in 0..count {
                let side_out = if stage > 0 && block == 0 {
                    side / 2
                } else {
                    side
                };
                let a = self.unit(x, channels, mid, 1, side, side, true);
                let a_out = a.relu_out.unwrap_or(a.bn_out);
                let b = self.unit(a_out, mid, mid, 3, side, side_out, true);
                let b_out = b.relu_out.unwrap_or(b.bn_out);
                let c = self.unit(b_out, mid, out, 1, side_out, side_out, false);
                let shortcut =
                    (block == 0).then(|| self.unit(x, channels, out, 1, side, side_out, false));
                let bytes = BATCH * side_out * side_out * out * FP16;
                let t = &mut self.trace;
                t.op();
                t.read(c.bn_out);
                let residual = shortcut.as_ref().map_or(x, |s| s.bn_out);
                t.read(residual);
                let sum = t.produce(bytes);
                t.op();
                t.read(sum);
                let block_out = t.produce(bytes);
                blocks.push(Block {
                    units: vec![a, b, c],
                    shortcut,
                    input: x,
                    sum,
                    out: block_out,
                    bytes,
                });
                x = block_out;
                channels = out;
                side = side_out;
            }
        }
        let t = &mut self.trace;
        t.op();
        t.read(x);
        let pooled = t.produce(BATCH * 2048 * FP16);
        t.op();
        let fc_weight = t.produce(2048 * 1000 * FP16);
        t.op();
        t.read(pooled);
        t.read(fc_weight);
        let logits = t.produce(BATCH * 1000 * 4);
        t.op();
        t.read(logits);
        let probs = t.produce(BATCH * 1000 * 4);
        let loss = t.produce(4);
        // The backward starts from the loss.
        t.op();
        t.read(loss);
        t.read(probs);
        let d_logits = t.produce(BATCH * 1000 * 4);
        t.op();
        t.read(d_logits);
        t.read(fc_weight);
        let d_pooled = t.produce(BATCH * 2048 * FP16);
        t.op();
        t.read(d_logits);
        t.read(pooled);
        let fc_grad = t.produce(2048 * 1000 * FP16);
        let fc_bias_grad = t.produce(1000 * 4);
        t.op();
        t.read(fc_grad);
        let fc_master = t.produce(2048 * 1000 * 4);
        self.grads.extend([fc_master, fc_bias_grad]);
        let t = &mut self.trace;
        t.op();
        t.read(d_pooled);
        let mut d_x = t.produce(BATCH * 7 * 7 * 2048 * FP16);

        for block in blocks.into_iter().rev() {
            // ReLU backward reads the block's output, then the sum's gradient feeds both paths.
            let t = &mut self.trace;
            t.op();
            t.read(d_x);
            t.read(block.out);
            t.read(block.sum);
            let d_sum = t.produce(block.bytes);
            let mut d = d_sum;
            let mut units = block.units;
            while let Some(u) = units.pop() {
                d = self.unit_backward(&u, d);
            }
            let d_short = match &block.shortcut {
                Some(s) => self.unit_backward(s, d_sum),
                None => d_sum,
            };
            let bytes = self.trace.size(d);
            let t = &mut self.trace;
            t.op();
            t.read(d);
            t.read(d_short);
            t.read(block.input);
            d_x = t.produce(bytes);
        }
        let t = &mut self.trace;
        t.op();
        t.read(d_x);
        t.read(pool_indices);
        let d_stem = t.produce(stem.output_bytes);
        self.unit_backward(&stem, d_stem);
        // The optimizer, parameter by parameter in model order (the reverse of the backward's):
        // the weight-decayed gradient is a temporary, the momentum and parameter updates are in
        // place.
        let grads = std::mem::take(&mut self.grads);
        for &g in grads.iter().rev() {
            let bytes = self.trace.size(g);
            let t = &mut self.trace;
            t.op();
            t.read(g);
            let decayed = t.produce(bytes);
            t.op();
            t.read(decayed);
        }
    }

    /// The backward of a unit from the gradient of its output; returns the input's gradient.
    fn unit_backward(&mut self, u: &Unit, d_out: usize) -> usize {
        let ws_data = self.workspace(u.input_bytes);
        let ws_filter = self.workspace(u.output_bytes);
        let t = &mut self.trace;
        let mut d = d_out;
        if let Some(r) = u.relu_out {
            t.op();
            t.read(d);
            t.read(r);
            d = t.produce(u.output_bytes);
        }
        t.op();
        t.read(d);
        t.read(u.conv_out);
        t.read(u.mean);
        t.read(u.inv_std);
        t.read(u.bn_out);
        let d_conv = t.produce(u.output_bytes);
        let d_scale = t.produce(u.channels * 4);
        let d_shift = t.produce(u.channels * 4);
        t.op();
        t.read(d_conv);
        t.read(u.weight);
        let d_input = t.produce(u.input_bytes);
        if ws_data > 0 {
            t.produce(ws_data);
        }
        t.op();
        t.read(d_conv);
        t.read(u.input);
        let d_weight = t.produce(u.weight_bytes);
        if ws_filter > 0 {
            t.produce(ws_filter);
        }
        t.op();
        t.read(d_weight);
        let master = t.produce(2 * u.weight_bytes);
        self.grads.extend([d_scale, d_shift, master]);
        d_input
    }
}
