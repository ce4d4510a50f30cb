//! Row supports of (S, A, S) transition tables.
//!
//! Every distribution of the benchmark is sparse (a GC row has 2 next states out of 5, a Grid row
//! 1 or 2 out of 25), so the solvers and samplers walk only the support of each (s, a) row.
//! Skipping exact zeros leaves every sum bit-identical to the dense one.

/// The support of each (s, a) row, in increasing next-state order, with room for every next state
/// so that a support can grow (a newly observed transition) without allocating.
#[derive(Clone, Debug, PartialEq)]
pub struct RowSupports {
    n_states: usize,
    /// `states[row * n_states .. row * n_states + lens[row]]` is the support of `row = s * A + a`.
    states: Vec<u32>,
    lens: Vec<u32>,
}

impl RowSupports {
    /// The supports of a row-major (S, A, S) table: the entries that are strictly positive.
    pub fn from_table(n_states: usize, n_actions: usize, table: &[f64]) -> Self {
        let rows = n_states * n_actions;
        debug_assert_eq!(table.len(), rows * n_states);
        let mut states = vec![0u32; rows * n_states];
        let mut lens = vec![0u32; rows];
        for row in 0..rows {
            let mut len = 0;
            for y in 0..n_states {
                if table[row * n_states + y] > 0.0 {
                    states[row * n_states + len] = y as u32;
                    len += 1;
                }
            }
            lens[row] = len as u32;
        }
        Self { n_states, states, lens }
    }

    /// The support of row `row = s * A + a`.
    #[inline]
    pub fn row(&self, row: usize) -> &[u32] {
        let start = row * self.n_states;
        &self.states[start..start + self.lens[row] as usize]
    }

    /// Adds `y` to the support of `row`, keeping it sorted; a no-op if it is already there.
    pub fn insert(&mut self, row: usize, y: usize) {
        let start = row * self.n_states;
        let len = self.lens[row] as usize;
        let slot = &mut self.states[start..start + self.n_states];
        match slot[..len].binary_search(&(y as u32)) {
            Ok(_) => {}
            Err(pos) => {
                slot.copy_within(pos..len, pos + 1);
                slot[pos] = y as u32;
                self.lens[row] += 1;
            }
        }
    }

    pub fn n_rows(&self) -> usize {
        self.lens.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supports_follow_positive_entries_and_grow_sorted() {
        let table = [0.0, 0.5, 0.5, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let mut s = RowSupports::from_table(3, 1, &table);
        assert_eq!(s.row(0), &[1, 2]);
        assert_eq!(s.row(1), &[0]);
        s.insert(1, 2);
        s.insert(1, 1);
        s.insert(1, 1);
        assert_eq!(s.row(1), &[0, 1, 2]);
        assert_eq!(s.n_rows(), 3);
        assert_eq!(s.row(2), &[2]);
    }
}
