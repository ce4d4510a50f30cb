//! Osband's stochastic chain (reference code: Ian Osband's TabulaRL, `src/environment.py`,
//! `make_stochasticChain`, the code of Osband, Russo & Van Roy's posterior-sampling experiments; no
//! paper states this exact chain, whose definition is the code's).
//!
//! L states in a row, start at state 0, episodes of L undiscounted steps. Action 0 moves left
//! (staying at 0); action 1 moves right (staying at L - 1) with probability 1 - 1/L and left
//! otherwise. Rewards are Gaussian with standard deviation 1: mean 0 for action 0 at state 0, mean
//! 1 for action 1 at state L - 1, and exactly 0 (no noise) elsewhere. Only a policy that swims
//! right from the first step can reach the far end within the episode.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::invalid;
use crate::model::mdp::Mdp;

/// The registry's name.
pub const NAME: &str = "StochasticChain";
/// The length TabulaRL's experiments use most.
pub const DEFAULT_SIZE: usize = 10;

/// The chain of `length` states (2 to 1000).
pub fn stochastic_chain(length: usize, discount: f64) -> Result<FiniteEnv> {
    if !(2..=1000).contains(&length) {
        return Err(invalid!("StochasticChain's size must be 2 to 1000, got {length}"));
    }
    let (ns, na) = (length, 2);
    let slip = 1.0 / length as f64;
    let mut entries = Vec::new();
    for s in 0..ns {
        let (left, right) = (s.saturating_sub(1), (s + 1).min(ns - 1));
        entries.push((s, 0, left, 1.0, 0.0));
        let far_end = if s == ns - 1 { 1.0 } else { 0.0 };
        entries.push((s, 1, right, 1.0 - slip, far_end));
        entries.push((s, 1, left, slip, far_end));
    }
    let (p, r) = tables(ns, na, &entries);
    let mut noise = vec![0.0; ns * na];
    noise[0] = 1.0;
    noise[(ns - 1) * na + 1] = 1.0;
    let mut start = vec![0.0; ns];
    start[0] = 1.0;
    FiniteEnv::new(NAME, Mdp::new(ns, na, p, r, Some(0))?, start, discount, Some(length))?.with_reward_noise(noise)
}
