//! The branching point of the search: the leftmost minimum over the sections' keys, kept by a
//! bottom-up segment tree updated over the sections a move changes.
//!
//! Invariant: every inner node holds the smaller of its children's keys, so the root is the
//! minimum; `update` restores this for the sections it sets, and ties go to the leftmost section.

/// Leftmost minimum over the sections' keys (see `key`; `u128::MAX` when a section
/// has no unplaced buffer), as a bottom-up segment tree.
pub(super) struct MinTree {
    leaves: usize,
    tree: Vec<u128>,
}

impl MinTree {
    pub(super) fn new(keys: &[u128]) -> MinTree {
        let leaves = keys.len().max(1).next_power_of_two();
        let mut tree = vec![u128::MAX; 2 * leaves];
        tree[leaves..leaves + keys.len()].copy_from_slice(keys);
        for k in (1..leaves).rev() {
            tree[k] = tree[2 * k].min(tree[2 * k + 1]);
        }
        MinTree { leaves, tree }
    }

    /// Sets the keys of `[low, high)` (the caller's `key` function) and repairs the parents.
    pub(super) fn update(&mut self, low: usize, high: usize, key: impl Fn(usize) -> u128) {
        if low >= high {
            return;
        }
        for s in low..high {
            self.tree[self.leaves + s] = key(s);
        }
        let (mut a, mut b) = ((self.leaves + low) / 2, (self.leaves + high - 1) / 2);
        while a >= 1 {
            for k in a..=b {
                self.tree[k] = self.tree[2 * k].min(self.tree[2 * k + 1]);
            }
            a /= 2;
            b /= 2;
        }
    }

    /// The leftmost section with the smallest key, and that key (`u128::MAX` if none).
    pub(super) fn leftmost_min(&self) -> (usize, u128) {
        let best = self.tree[1];
        let mut k = 1;
        while k < self.leaves {
            k = if self.tree[2 * k] == best {
                2 * k
            } else {
                2 * k + 1
            };
        }
        (k - self.leaves, best)
    }
}
