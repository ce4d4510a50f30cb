//! Sparse binary features for linear value functions: a grid tile coder over a 2-D box and a
//! one-hot encoding of a finite state. A small module rather than the `tilecoding` crate: that
//! crate (last released 2019) returns a fresh `Vec` per call and hashes through a `HashMap`,
//! which would allocate in every learning step.

use crate::error::Result;
use crate::invalid;

/// Features with a fixed number of active (value 1) components.
pub trait SparseFeatures<S>: Send + Sync {
    /// Length of the weight vector.
    fn n_features(&self) -> usize;
    /// How many components are 1 for any state.
    fn n_active(&self) -> usize;
    /// The indices of the active components of `state`, into `out` (length `n_active()`).
    fn active(&self, state: &S, out: &mut [usize]);
}

/// Grid tile coding of a box [lo, hi] ⊂ R²: `tilings` grids of `tiles × tiles` cells each, the
/// t-th displaced by t/tilings of a cell times (1, 3) (Sutton and Barto's asymmetric offsets),
/// and each grid one cell wider so the displaced grids still cover the box. One tiling with no
/// displacement is state aggregation, the "tabular" learner on a continuous domain.
#[derive(Clone, Debug)]
pub struct TileCoder {
    lo: [f64; 2],
    width: [f64; 2],
    tiles: usize,
    tilings: usize,
}

impl TileCoder {
    pub fn new(lo: [f64; 2], hi: [f64; 2], tiles: usize, tilings: usize) -> Result<Self> {
        if !(0..2).all(|i| lo[i].is_finite() && hi[i].is_finite() && lo[i] < hi[i]) {
            return Err(invalid!("the tiled box needs finite lo < hi in each dimension, got {lo:?}, {hi:?}"));
        }
        if tiles == 0 || tilings == 0 || tilings * (tiles + 1) * (tiles + 1) > 1 << 26 {
            return Err(invalid!("tiles and tilings must be >= 1 with at most 2^26 features, got {tiles}, {tilings}"));
        }
        let width = [(hi[0] - lo[0]) / tiles as f64, (hi[1] - lo[1]) / tiles as f64];
        Ok(Self { lo, width, tiles, tilings })
    }
}

impl SparseFeatures<[f64; 2]> for TileCoder {
    fn n_features(&self) -> usize {
        self.tilings * (self.tiles + 1) * (self.tiles + 1)
    }
    fn n_active(&self) -> usize {
        self.tilings
    }
    #[inline]
    fn active(&self, state: &[f64; 2], out: &mut [usize]) {
        let side = self.tiles + 1;
        for (t, slot) in out.iter_mut().enumerate().take(self.tilings) {
            let mut index = t * side * side;
            let mut stride = 1;
            for d in 0..2 {
                let shift = ((t * (2 * d + 1)) % self.tilings) as f64 / self.tilings as f64;
                let cell = ((state[d] - self.lo[d]) / self.width[d] + shift).floor();
                // States outside the box fall in the nearest edge cell.
                let cell = cell.clamp(0.0, self.tiles as f64) as usize;
                index += cell * stride;
                stride *= side;
            }
            *slot = index;
        }
    }
}

/// One feature per state of a finite MDP: the tabular learner.
#[derive(Clone, Debug)]
pub struct OneHot {
    pub n_states: usize,
}

impl OneHot {
    /// One feature per state of an MDP of `n_states >= 1` states.
    pub fn new(n_states: usize) -> Result<Self> {
        if n_states == 0 {
            return Err(invalid!("n_states must be >= 1"));
        }
        Ok(Self { n_states })
    }
}

impl SparseFeatures<usize> for OneHot {
    fn n_features(&self) -> usize {
        self.n_states
    }
    fn n_active(&self) -> usize {
        1
    }
    #[inline]
    fn active(&self, state: &usize, out: &mut [usize]) {
        out[0] = *state;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tile_per_tiling_and_offsets_by_hand() {
        let coder = TileCoder::new([0.0, 0.0], [1.0, 1.0], 4, 2).unwrap();
        assert_eq!(coder.n_features(), 2 * 25);
        let mut out = [0; 2];
        // (0.3, 0.3): tiling 0 cell (1, 1) -> 1 + 5 = 6; tiling 1 shifted by (1/2, 3/2 mod 2 = 1/2)
        // cells: floor(1.2 + 0.5) = 1 in both -> 25 + 6 = 31.
        coder.active(&[0.3, 0.3], &mut out);
        assert_eq!(out, [6, 31]);
        // Out of the box clamps to the edge cells.
        coder.active(&[-5.0, 5.0], &mut out);
        assert_eq!(out, [20, 25 + 20]);
        assert!(TileCoder::new([0.0, 0.0], [0.0, 1.0], 4, 2).is_err());
    }
}
