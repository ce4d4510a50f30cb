//! Double Loop (Dearden, Friedman & Russell 1998, "Bayesian Q-learning"; Strens 2000, "A Bayesian
//! framework for reinforcement learning", §5; reference code: Dimitrakakis's beliefbox,
//! `DoubleLoop.cpp`), the fixed MDP whose Dirichlet generalisation is BBRL's GDL.
//!
//! Nine states, two actions, deterministic, start in state 0. From state 0, action 0 enters the
//! right loop (state 1) and action 1 the left loop (state 5). The right loop `1 → 2 → 3 → 4 → 0`
//! follows either action and pays 1 on `4 → 0`; the left loop `5 → 6 → 7 → 8 → 0` goes on only
//! under action 1 (action 0 at states 5 to 7 falls back to 0 unpaid) and pays 2 on `8 → 0` under
//! either action. The easy loop earns 1 per 5 steps; the optimal policy always takes action 1 and
//! earns 2 per 5 steps.
//! Continuing.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// The registry's name.
pub const NAME: &str = "DoubleLoop";
const RIGHT_LOOP_REWARD: f64 = 1.0;
const LEFT_LOOP_REWARD: f64 = 2.0;

/// Double Loop with `discount` in [0, 1) (continuing, so no time limit).
pub fn double_loop(discount: f64) -> Result<FiniteEnv> {
    let (ns, na) = (9, 2);
    let mut entries = vec![(0, 0, 1, 1.0, 0.0), (0, 1, 5, 1.0, 0.0)];
    for a in 0..na {
        entries.extend([(1, a, 2, 1.0, 0.0), (2, a, 3, 1.0, 0.0), (3, a, 4, 1.0, 0.0)]);
        entries.push((4, a, 0, 1.0, RIGHT_LOOP_REWARD));
        entries.push((8, a, 0, 1.0, LEFT_LOOP_REWARD));
    }
    for s in 5..8 {
        entries.push((s, 0, 0, 1.0, 0.0));
        entries.push((s, 1, s + 1, 1.0, 0.0));
    }
    let (p, r) = tables(ns, na, &entries);
    let mut start = vec![0.0; ns];
    start[0] = 1.0;
    FiniteEnv::new(NAME, Mdp::new(ns, na, p, r, Some(0))?, start, discount, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::problems::generalized_double_loop;

    #[test]
    fn it_has_gdls_support_and_rewards() {
        let env = double_loop(0.95).unwrap();
        let gdl = generalized_double_loop();
        let p = env.mdp().transitions();
        // Every transition of Double Loop is in GDL's support, with GDL's reward.
        for (i, &prob) in p.iter().enumerate() {
            if prob > 0.0 {
                assert!(gdl.theta()[i] > 0.0, "entry {i} outside GDL's support");
                assert_eq!(env.mdp().rewards()[i], gdl.rewards()[i], "entry {i}");
            }
        }
    }
}
