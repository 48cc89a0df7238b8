//! One independent part of an instance in the exact search's terms: buffers in local indices
//! (sorted by start), time compressed to *sections* (maximal step ranges with a constant live
//! set), per section the buffers live there and their total size, per buffer its pin, lowest
//! offset and interchangeable twin, and the neighbour lists of the local overlap graph.
//!
//! The tables are O(buffers x sections) and the graph O(pairs of the part): the solver builds a
//! `Part` only for groups of at most `Params::max_exact_buffers` buffers, windows of the
//! windowed search (pins merged) and whole parts whose cells are bounded by
//! `Params::whole_part_cells`.
//!
//! Invariants: local buffer `k` is global buffer `ids[k]`, in start order; a buffer covers exactly
//! the sections `[low, high)` of its lifetime and is listed in `covering` for each of them, and
//! `totals` is the sum of the sizes so listed; `twin_prev` links only buffers of equal lifetime,
//! size and pin, which is what lets the search place twins in index order without losing a
//! solution.

use crate::Buffer;
use crate::heuristic::{self, Order};

/// Marks "no buffer" in index arrays.
pub(crate) const NONE: u32 = u32::MAX;

/// Marks a buffer that is not pinned (any offset allowed).
pub(crate) const FREE: u64 = u64::MAX;

/// One independent part of an instance, in local indices (sorted by start time).
pub(crate) struct Part {
    /// Global index of each local buffer.
    pub(crate) ids: Vec<u32>,
    pub(crate) start: Vec<u64>,
    pub(crate) end: Vec<u64>,
    pub(crate) size: Vec<u64>,
    /// Section `s` is the step range `[points[s], points[s + 1])`.
    pub(crate) points: Vec<u64>,
    /// Each buffer covers the sections `[low, high)`.
    pub(crate) low: Vec<u32>,
    pub(crate) high: Vec<u32>,
    /// Sum of the sizes live in each section (saturating; callers check overflow first).
    pub(crate) totals: Vec<u64>,
    /// `covering[cover_first[s]..cover_first[s + 1]]`: the buffers live in section `s`.
    pub(crate) cover_first: Vec<u32>,
    pub(crate) covering: Vec<u32>,
    /// The previous buffer with the same lifetime, size and pin, or `NONE`.
    pub(crate) twin_prev: Vec<u32>,
    /// Per buffer: the offset it is pinned at, or [`FREE`].
    pub(crate) pin: Vec<u64>,
    /// Per buffer: the lowest offset it may take (0 unless set).
    pub(crate) least: Vec<u64>,
    pub(crate) graph: OverlapGraph,
    /// Per section: the hull of the lifetimes of the buffers live there (the sections whose
    /// levels set those buffers' floors).
    pub(crate) reach: Vec<(u32, u32)>,
    /// Per boundary `b` (between sections `b` and `b + 1`): the buffers live on both sides.
    pub(crate) crossing: Vec<u32>,
    /// Per section: the hull of `reach` over the sections of its own `reach`.
    pub(crate) reach2: Vec<(u32, u32)>,
}

impl Part {
    /// The part made of `ids` (live buffers, sorted by start).
    pub(crate) fn new(buffers: &[Buffer], ids: &[u32]) -> Part {
        Part::with_pins(buffers, ids, &[])
    }

    /// Like [`Part::new`], with buffer `ids[k]` pinned at offset `pins[k]` (its only allowed
    /// offset) where `pins[k] != FREE`; missing entries are free.
    pub(crate) fn with_pins(buffers: &[Buffer], ids: &[u32], pins: &[u64]) -> Part {
        let pin: Vec<u64> = (0..ids.len())
            .map(|k| pins.get(k).copied().unwrap_or(FREE))
            .collect();
        let local: Vec<Buffer> = ids.iter().map(|&i| buffers[i as usize]).collect();
        let mut points: Vec<u64> = local.iter().flat_map(|b| [b.start, b.end]).collect();
        points.sort_unstable();
        points.dedup();
        let section_of = |t: u64| points.partition_point(|&p| p < t) as u32;
        let low: Vec<u32> = local.iter().map(|b| section_of(b.start)).collect();
        let high: Vec<u32> = local.iter().map(|b| section_of(b.end)).collect();
        let sections = points.len().saturating_sub(1);
        let mut totals = vec![0u64; sections];
        let mut cover_count = vec![0u32; sections + 1];
        for (k, b) in local.iter().enumerate() {
            for s in low[k] as usize..high[k] as usize {
                totals[s] = totals[s].saturating_add(b.size);
                cover_count[s] += 1;
            }
        }
        let mut cover_first = Vec::with_capacity(sections + 1);
        let mut total = 0u32;
        for &c in &cover_count[..sections] {
            cover_first.push(total);
            total += c;
        }
        cover_first.push(total);
        let mut fill = cover_first.clone();
        let mut covering = vec![0u32; total as usize];
        for k in 0..local.len() {
            for s in low[k] as usize..high[k] as usize {
                covering[fill[s] as usize] = k as u32;
                fill[s] += 1;
            }
        }
        let mut twin_prev = vec![NONE; local.len()];
        let mut by_shape: Vec<u32> = (0..local.len() as u32).collect();
        by_shape.sort_unstable_by_key(|&k| {
            let b = &local[k as usize];
            (b.start, b.end, b.size, pin[k as usize], k)
        });
        for pair in by_shape.windows(2) {
            let (a, b) = (&local[pair[0] as usize], &local[pair[1] as usize]);
            let (pa, pb) = (pin[pair[0] as usize], pin[pair[1] as usize]);
            if (a.start, a.end, a.size, pa) == (b.start, b.end, b.size, pb) {
                twin_prev[pair[1] as usize] = pair[0];
            }
        }
        let reach: Vec<(u32, u32)> = (0..sections)
            .map(|s| {
                let mut hull = (s as u32, s as u32 + 1);
                for &k in &covering[cover_first[s] as usize..cover_first[s + 1] as usize] {
                    hull = (hull.0.min(low[k as usize]), hull.1.max(high[k as usize]));
                }
                hull
            })
            .collect();
        // Range hulls of `reach` by a sparse table: O(S log S), whatever the lifetimes.
        let mut table: Vec<Vec<(u32, u32)>> = vec![reach.clone()];
        let mut width = 1;
        while width * 2 <= sections {
            let previous = &table[table.len() - 1];
            let next: Vec<(u32, u32)> = (0..=sections - width * 2)
                .map(|i| hull(previous[i], previous[i + width]))
                .collect();
            table.push(next);
            width *= 2;
        }
        let range_hull = |a: usize, b: usize| {
            let level = (usize::BITS - 1 - (b - a).leading_zeros()) as usize;
            hull(table[level][a], table[level][b - (1 << level)])
        };
        let reach2: Vec<(u32, u32)> = reach
            .iter()
            .map(|&(a, b)| hull((a, b), range_hull(a as usize, b as usize)))
            .collect();
        let mut crossing = vec![0u32; sections.saturating_sub(1)];
        for k in 0..local.len() {
            for c in &mut crossing[low[k] as usize..high[k] as usize - 1] {
                *c += 1;
            }
        }
        Part {
            crossing,
            points,
            reach,
            reach2,
            ids: ids.to_vec(),
            start: local.iter().map(|b| b.start).collect(),
            end: local.iter().map(|b| b.end).collect(),
            size: local.iter().map(|b| b.size).collect(),
            low,
            high,
            totals,
            cover_first,
            covering,
            twin_prev,
            pin,
            least: vec![0; ids.len()],
            graph: OverlapGraph::new(&local),
        }
    }

    /// Gives every buffer a lowest offset (`least[k]` for local buffer `k`; missing entries
    /// are 0). Buffers with the same shape and pin but different lowest offsets are no longer
    /// interchangeable.
    pub(crate) fn set_least(&mut self, least: &[u64]) {
        for (k, l) in self.least.iter_mut().enumerate() {
            *l = least.get(k).copied().unwrap_or(0);
        }
        let least = &self.least;
        for k in 0..self.twin_prev.len() {
            let twin = self.twin_prev[k];
            if twin != NONE && least[twin as usize] != least[k] {
                self.twin_prev[k] = NONE;
            }
        }
    }

    /// Number of buffers.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Number of sections.
    pub(crate) fn sections(&self) -> usize {
        self.totals.len()
    }

    /// The first step of each section, then the end of the last one.
    pub(crate) fn section_starts(&self) -> &[u64] {
        &self.points
    }

    /// The local buffer `local`.
    pub(crate) fn buffer(&self, local: usize) -> Buffer {
        Buffer::new(self.start[local], self.end[local], self.size[local])
    }

    /// For each of `orders`, the static rank of every local buffer for [`Search::new`]: its
    /// position in that order of [`heuristic::rank`] (0 for inert buffers, which it leaves
    /// out).
    pub(crate) fn ranks(&self, orders: impl IntoIterator<Item = Order>) -> Vec<Vec<u32>> {
        let local: Vec<Buffer> = (0..self.len()).map(|k| self.buffer(k)).collect();
        let congestion = heuristic::congestion(&local).unwrap_or_else(|_| vec![0; local.len()]);
        orders
            .into_iter()
            .map(|order| {
                let mut rank = vec![0u32; local.len()];
                for (position, &k) in heuristic::rank(&local, order, &congestion)
                    .iter()
                    .enumerate()
                {
                    rank[k as usize] = position as u32;
                }
                rank
            })
            .collect()
    }

    /// The sections `[low, high)` buffer `local` is live in.
    pub(crate) fn span(&self, local: usize) -> (usize, usize) {
        (self.low[local] as usize, self.high[local] as usize)
    }

    pub(crate) fn covering(&self, section: usize) -> &[u32] {
        &self.covering[self.cover_first[section] as usize..self.cover_first[section + 1] as usize]
    }
}

/// The smallest section range holding both ranges.
pub(crate) fn hull(a: (u32, u32), b: (u32, u32)) -> (u32, u32) {
    (a.0.min(b.0), a.1.max(b.1))
}

/// The part's overlap graph as compressed rows (one neighbour slice per buffer), built by a
/// sweep over start times; every list is in increasing start order (ties by index).
pub(crate) struct OverlapGraph {
    first: Vec<usize>,
    neighbours: Vec<u32>,
}

impl OverlapGraph {
    /// The graph of live buffers (nonzero size, nonempty lifetime).
    pub(crate) fn new(buffers: &[Buffer]) -> OverlapGraph {
        OverlapGraph::build(buffers, Buffer::is_live)
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
