//! Chain (Strens 2000, "A Bayesian framework for reinforcement learning"): five states in a row
//! and two actions. Action 0 ("a") moves one state forward, with reward 0, or stays at the last
//! state with reward 10; action 1 ("b") returns to state 0 with reward 2. With probability 0.2 the
//! agent slips and the other action's outcome happens instead. Starts in state 0; continuing.
//! The greedy "b" earns 2 a step at once; the optimal policy walks the chain for the 10s.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// The probability that the other action's outcome happens.
pub const SLIP: f64 = 0.2;
/// The name the registry and results show.
pub const NAME: &str = "Chain";
const N_STATES: usize = 5;
const FORWARD_REWARD_AT_END: f64 = 10.0;
const RETURN_REWARD: f64 = 2.0;

/// The Chain environment with `discount` in [0, 1) (continuing, so no time limit).
pub fn chain(discount: f64) -> Result<FiniteEnv> {
    let (s, a) = (N_STATES, 2);
    let mut entries = Vec::new();
    for x in 0..s {
        let forward = (x + 1).min(s - 1);
        let forward_reward = if x == s - 1 { FORWARD_REWARD_AT_END } else { 0.0 };
        // Each action has its own outcome with probability 1 - SLIP and the other's with SLIP.
        entries.push((x, 0, forward, 1.0 - SLIP, forward_reward));
        entries.push((x, 0, 0, SLIP, RETURN_REWARD));
        entries.push((x, 1, 0, 1.0 - SLIP, RETURN_REWARD));
        entries.push((x, 1, forward, SLIP, forward_reward));
    }
    let (p, r) = tables(s, a, &entries);
    let mut start = vec![0.0; s];
    start[0] = 1.0;
    FiniteEnv::new(NAME, Mdp::new(s, a, p, r, Some(0))?, start, discount, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::Env;

    #[test]
    fn rows_follow_the_definition() {
        let env = chain(0.99).unwrap();
        let p = |s: usize, a: usize, y: usize| env.mdp().transitions()[(s * 2 + a) * N_STATES + y];
        for x in 0..N_STATES {
            let forward = (x + 1).min(N_STATES - 1);
            assert_eq!(p(x, 0, forward), 0.8);
            assert_eq!(p(x, 0, 0), 0.2);
            assert_eq!(p(x, 1, 0), 0.8);
            assert_eq!(p(x, 1, forward), 0.2);
        }
        assert_eq!(env.reward_bounds(), (0.0, 10.0));
        assert_eq!(env.time_limit(), None);
    }
}
