//! CliffWalking (Sutton & Barto 2018, Example 6.6; reference code: Gymnasium,
//! `gymnasium/envs/toy_text/cliffwalking.py`, `CliffWalking-v1`).
//!
//! A 4×12 grid, state `row * 12 + col`, start (3, 0) = 36, goal (3, 11) = 47; the cells (3, 1) to
//! (3, 10) are the cliff. Actions 0 = up, 1 = right, 2 = down, 3 = left, clamped at the border.
//! Every move costs 1; stepping into the cliff costs 100 and sends the agent back to the start
//! (not terminal); entering the goal ends the episode. Gymnasium registers no time limit; bbrl
//! cuts episodes after 100 steps (the optimal walk takes 13). Undiscounted. The cliff cells keep
//! Gymnasium's rows but are never occupied. Gymnasium's slippery variant is not here: there one
//! row can reach the start both by a plain move (-1) and through the cliff (-100), two rewards
//! for one next state that a reward table per `(s, a, s')` cannot hold.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// The registry's name.
pub const NAME: &str = "CliffWalking";
/// Steps after which bbrl cuts an episode.
pub const TIME_LIMIT: usize = 100;
const ROWS: usize = 4;
const COLS: usize = 12;

/// CliffWalking with `discount` (1 by default), cut after [`TIME_LIMIT`] steps.
pub fn cliff_walking(discount: f64) -> Result<FiniteEnv> {
    let (ns, na) = (ROWS * COLS, 4);
    let (start_state, goal) = (3 * COLS, 3 * COLS + COLS - 1);
    let is_cliff = |r: usize, c: usize| r == ROWS - 1 && (1..COLS - 1).contains(&c);
    let mut entries = Vec::new();
    for s in 0..ns {
        if s == goal {
            entries.extend((0..na).map(|a| (s, a, s, 1.0, 0.0)));
            continue;
        }
        let (row, col) = (s / COLS, s % COLS);
        for a in 0..na {
            let (r, c) = match a {
                0 => (row.saturating_sub(1), col),
                1 => (row, (col + 1).min(COLS - 1)),
                2 => ((row + 1).min(ROWS - 1), col),
                _ => (row, col.saturating_sub(1)),
            };
            entries.push(if is_cliff(r, c) {
                (s, a, start_state, 1.0, -100.0)
            } else {
                (s, a, r * COLS + c, 1.0, -1.0)
            });
        }
    }
    let (p, r) = tables(ns, na, &entries);
    let mut start = vec![0.0; ns];
    start[start_state] = 1.0;
    let mut terminal = vec![false; ns];
    terminal[goal] = true;
    FiniteEnv::new(NAME, Mdp::new(ns, na, p, r, Some(start_state))?, start, discount, Some(TIME_LIMIT))?
        .with_terminal_states(terminal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::Env;

    #[test]
    fn rewards_are_those_of_moves_from_live_cells() {
        // -100 off the cliff, -1 otherwise; the goal's absorbing 0 is never earned.
        assert_eq!(cliff_walking(1.0).unwrap().reward_bounds(), (-100.0, -1.0));
    }
}
