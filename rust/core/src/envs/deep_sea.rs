//! DeepSea (Osband et al. 2019, "Behaviour Suite for Reinforcement Learning"; reference code:
//! bsuite, `bsuite/environments/deep_sea.py`), deterministic and stochastic.
//!
//! An N×N grid: the agent starts at the top-left cell (row 0, column 0) and falls one row a step,
//! so an episode lasts exactly N steps. At each cell one action moves it right (one column) and
//! the other left (`max(col - 1, 0)`); which one is right at `(row, col)` is `a == mapping[row,
//! col]`, with bsuite's mapping `numpy.random.RandomState(mapping_seed).binomial(1, 0.5, (N, N))`,
//! computed here bit for bit (the MT19937 stream and NumPy's legacy binomial inversion are ported
//! below, so Python passes nothing in). A right move costs `0.01 / N`, charged even when it fails;
//! going right at column N - 1 pays 1 on top, which happens only on the last row. So the one
//! rewarding episode goes right N times in a row, and dithering finds it after ~2^N episodes.
//!
//! The stochastic version: a right move fails (the agent stays in its column) with probability
//! 1/N, and both actions at the two bottom corners (row N - 1, columns 0 and N - 1) add N(0, 1)
//! noise to the reward.
//!
//! States are `row * N + col` for `row < N`, and `N * N`, the terminal state every step from the
//! last row enters (bsuite's `row == N`). Cells with `col > row` are never reached; they keep the
//! same dynamics. Time limit N; undiscounted by default.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::invalid;
use crate::model::mdp::Mdp;

/// The registry's names.
pub const NAME: &str = "DeepSea";
pub const STOCHASTIC_NAME: &str = "DeepSea-Stochastic";
/// bsuite's sweep: N = 10 is its smallest size, and every size uses mapping seed 42.
pub const DEFAULT_SIZE: usize = 10;
pub const DEFAULT_MAPPING_SEED: u64 = 42;
/// The largest N: the tables are dense, (N² + 1)² × 2 entries each (N = 50: 100 MB apiece).
pub const MAX_SIZE: usize = 50;
/// The largest side [`action_mapping`] draws for (10^8 entries).
pub const MAX_MAPPING_SIZE: usize = 10_000;
/// bsuite's `unscaled_move_cost`.
const MOVE_COST: f64 = 0.01;

/// MT19937, as NumPy's legacy `RandomState` seeds (`init_genrand`) and steps it.
struct Mt19937 {
    key: [u32; 624],
    pos: usize,
}

impl Mt19937 {
    fn new(seed: u32) -> Self {
        let mut key = [0u32; 624];
        key[0] = seed;
        for i in 1..624 {
            let prev = key[i - 1];
            key[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        Self { key, pos: 624 }
    }

    fn next_u32(&mut self) -> u32 {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX: u32 = 0x9908_b0df;
        if self.pos == 624 {
            for i in 0..624 {
                let y = (self.key[i] & UPPER) | (self.key[(i + 1) % 624] & LOWER);
                let mag = if y & 1 == 1 { MATRIX } else { 0 };
                self.key[i] = self.key[(i + 397) % 624] ^ (y >> 1) ^ mag;
            }
            self.pos = 0;
        }
        let mut y = self.key[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// NumPy's `mt19937_next_double`: 53 bits from two draws.
    fn next_double(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// NumPy's legacy `random_binomial` for `n = 1, p = 0.5`: its inversion branch
    /// (`p <= 0.5` and `n p <= 30`), written as the C code runs it.
    fn binomial_one_half(&mut self) -> u8 {
        let (n, p) = (1.0f64, 0.5f64);
        let q = 1.0 - p;
        let qn = (n * q.ln()).exp();
        let np = n * p;
        let bound = (n.min(np + 10.0 * (np * q + 1.0).sqrt())) as i64;
        let mut x: i64 = 0;
        let mut px = qn;
        let mut u = self.next_double();
        while u > px {
            x += 1;
            if x > bound {
                x = 0;
                px = qn;
                u = self.next_double();
            } else {
                u -= px;
                px = ((n - x as f64 + 1.0) * p * px) / (x as f64 * q);
            }
        }
        x as u8
    }
}

/// bsuite's action mapping, `RandomState(mapping_seed).binomial(1, 0.5, (size, size))`, row
/// major: action `a` moves right at `(row, col)` iff `a == mapping[row * size + col]`.
pub fn action_mapping(size: usize, mapping_seed: u64) -> Result<Vec<u8>> {
    // A bound well above any table this module builds, so that a typo cannot ask for terabytes.
    if size > MAX_MAPPING_SIZE {
        return Err(invalid!("the mapping's size must be at most {MAX_MAPPING_SIZE}, got {size}"));
    }
    let seed = u32::try_from(mapping_seed)
        .map_err(|_| invalid!("mapping_seed must be between 0 and 2**32 - 1 (NumPy's rule), got {mapping_seed}"))?;
    let mut mt = Mt19937::new(seed);
    Ok((0..size * size).map(|_| mt.binomial_one_half()).collect())
}

/// DeepSea of side `size` (2 to [`MAX_SIZE`]) with bsuite's mapping for `mapping_seed`.
pub fn deep_sea(size: usize, mapping_seed: u64, stochastic: bool, discount: f64) -> Result<FiniteEnv> {
    if !(2..=MAX_SIZE).contains(&size) {
        return Err(invalid!("DeepSea's size must be 2 to {MAX_SIZE}, got {size}"));
    }
    let mapping = action_mapping(size, mapping_seed)?;
    let n = size;
    let (ns, na) = (n * n + 1, 2);
    let end = n * n;
    let cost = MOVE_COST / n as f64;
    let fail = if stochastic { 1.0 / n as f64 } else { 0.0 };
    let mut entries = Vec::new();
    let mut noise = vec![0.0; ns * na];
    for row in 0..n {
        for col in 0..n {
            let s = row * n + col;
            let next = |c: usize| if row + 1 == n { end } else { (row + 1) * n + c };
            for a in 0..na {
                if a == mapping[s] as usize {
                    let reward = if col == n - 1 { 1.0 - cost } else { -cost };
                    entries.push((s, a, next((col + 1).min(n - 1)), 1.0 - fail, reward));
                    if fail > 0.0 {
                        entries.push((s, a, next(col), fail, reward));
                    }
                } else {
                    entries.push((s, a, next(col.saturating_sub(1)), 1.0, 0.0));
                }
                if stochastic && row == n - 1 && (col == 0 || col == n - 1) {
                    noise[s * na + a] = 1.0;
                }
            }
        }
    }
    for a in 0..na {
        entries.push((end, a, end, 1.0, 0.0));
    }
    let (p, r) = tables(ns, na, &entries);
    let mut start = vec![0.0; ns];
    start[0] = 1.0;
    let mut terminal = vec![false; ns];
    terminal[end] = true;
    let name = if stochastic { STOCHASTIC_NAME } else { NAME };
    FiniteEnv::new(name, Mdp::new(ns, na, p, r, Some(0))?, start, discount, Some(n))?
        .with_terminal_states(terminal)?
        .with_reward_noise(noise)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::Env;

    #[test]
    fn the_mapping_is_numpys_for_seed_42() {
        // RandomState(42).binomial(1, 0.5, (10, 10)), its first three rows.
        let m = action_mapping(10, 42).unwrap();
        assert_eq!(&m[..10], &[0, 1, 1, 1, 0, 0, 0, 1, 1, 1]);
        assert_eq!(&m[10..20], &[0, 1, 1, 0, 0, 0, 0, 1, 0, 0]);
        assert_eq!(&m[20..30], &[1, 0, 0, 0, 0, 1, 0, 1, 1, 0]);
        assert!(action_mapping(5, 1 << 32).is_err());
    }

    #[test]
    fn the_right_path_pays_one_less_the_move_costs() {
        let n = 6;
        let env = deep_sea(n, 3, false, 1.0).unwrap();
        let mapping = action_mapping(n, 3).unwrap();
        let mut rng = crate::rng::stream(0, 0, 0);
        let (mut s, mut total) = (env.reset(&mut rng), 0.0);
        for t in 0..n {
            let step = env.step(&s, mapping[s] as usize, &mut rng);
            total += step.reward;
            assert_eq!(step.terminal, t == n - 1);
            s = step.next_state;
        }
        assert!((total - 0.99).abs() < 1e-12, "{total}");
        assert!(deep_sea(1, 0, false, 1.0).is_err() && deep_sea(MAX_SIZE + 1, 0, true, 1.0).is_err());
        assert_eq!(deep_sea(n, 3, true, 1.0).unwrap().reward_bounds(), (f64::NEG_INFINITY, f64::INFINITY));
    }
}
