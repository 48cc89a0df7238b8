//! The interval graph of a set of buffers: which live buffers share a step.
//!
//! Stored as compressed rows (one neighbour slice per buffer), built once by a sweep over start
//! times in O(n log n + pairs). Inert buffers (zero size or empty lifetime) have no neighbours.
//! Every neighbour list is in increasing start order (ties by index), so the graph is a
//! deterministic function of the input.

use crate::Buffer;

pub(crate) struct OverlapGraph {
    first: Vec<usize>,
    neighbours: Vec<u32>,
}

impl OverlapGraph {
    /// The graph of live buffers (nonzero size, nonempty lifetime).
    pub(crate) fn new(buffers: &[Buffer]) -> OverlapGraph {
        OverlapGraph::build(buffers, Buffer::is_live)
    }

    /// The graph of every buffer with a nonempty lifetime, whatever its size.
    pub(crate) fn by_time(buffers: &[Buffer]) -> OverlapGraph {
        OverlapGraph::build(buffers, |b| b.start < b.end)
    }

    fn build(buffers: &[Buffer], include: impl Fn(&Buffer) -> bool) -> OverlapGraph {
        let mut by_start: Vec<u32> = (0..buffers.len() as u32)
            .filter(|&i| include(&buffers[i as usize]))
            .collect();
        by_start.sort_unstable_by_key(|&i| (buffers[i as usize].start, i));
        // Two sweeps over the same active sets, counting and then filling, so the pairs are
        // held once (in `neighbours`), not also in a pair list: half the peak memory when
        // thousands of buffers are live at once.
        let sweep = |visit: &mut dyn FnMut(u32, u32)| {
            let mut active: Vec<u32> = Vec::new();
            for &i in &by_start {
                let start = buffers[i as usize].start;
                active.retain(|&a| buffers[a as usize].end > start);
                for &a in &active {
                    visit(a, i);
                }
                active.push(i);
            }
        };
        let mut degree = vec![0usize; buffers.len()];
        sweep(&mut |a, b| {
            degree[a as usize] += 1;
            degree[b as usize] += 1;
        });
        let mut first = Vec::with_capacity(buffers.len() + 1);
        let mut total = 0usize;
        for d in &degree {
            first.push(total);
            total += d;
        }
        first.push(total);
        let mut fill = first.clone();
        let mut neighbours = vec![0u32; total];
        // A buffer's earlier neighbours are written when the sweep reaches it, its later ones
        // as the sweep reaches them, so each list is in start order of the neighbour (ties by
        // index), as the module promises.
        sweep(&mut |a, b| {
            neighbours[fill[b as usize]] = a;
            fill[b as usize] += 1;
            neighbours[fill[a as usize]] = b;
            fill[a as usize] += 1;
        });
        OverlapGraph { first, neighbours }
    }

    pub(crate) fn neighbours(&self, buffer: usize) -> &[u32] {
        &self.neighbours[self.first[buffer]..self.first[buffer + 1]]
    }
}
