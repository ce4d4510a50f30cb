//! FrozenLake (reference code: Gymnasium, `gymnasium/envs/toy_text/frozen_lake.py`, with its
//! defaults `success_rate = 1/3` and `reward_schedule = (1, 0, 0)`), on its 4×4 and 8×8 maps,
//! slippery (Gymnasium's default) or not.
//!
//! A grid of frozen cells (`F`), holes (`H`), a start (`S`) and a goal (`G`); state
//! `row * ncol + col`, actions 0 = left, 1 = down, 2 = right, 3 = up, moves clamped at the border.
//! On the slippery lake the agent goes the intended way or either perpendicular way, 1/3 each;
//! otherwise the intended way. Entering a hole or the goal ends the episode (both terminal);
//! entering the goal pays 1, everything else 0. Undiscounted by default, time limit 100 (4×4) or 200 (8×8),
//! Gymnasium's registered limits.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// Gymnasium's two maps, row by row.
pub const MAP_4X4: [&str; 4] = ["SFFF", "FHFH", "FFFH", "HFFG"];
pub const MAP_8X8: [&str; 8] =
    ["SFFFFFFF", "FFFFFFFF", "FFFHFFFF", "FFFFFHFF", "FFFHFFFF", "FHHFFFHF", "FHFFHFHF", "FFFHFFFG"];

/// FrozenLake on `map` (rows of `S`, `F`, `H`, `G`), slippery or not, cut after `time_limit` steps.
pub fn frozen_lake(name: &str, map: &[&str], slippery: bool, time_limit: usize, discount: f64) -> Result<FiniteEnv> {
    let (nrow, ncol) = (map.len(), map[0].len());
    let cell = |s: usize| map[s / ncol].as_bytes()[s % ncol];
    let (ns, na) = (nrow * ncol, 4);
    let mut entries = Vec::new();
    let mut terminal = vec![false; ns];
    let mut start = vec![0.0; ns];
    for s in 0..ns {
        let (row, col) = (s / ncol, s % ncol);
        match cell(s) {
            b'H' | b'G' => {
                terminal[s] = true;
                entries.extend((0..na).map(|a| (s, a, s, 1.0, 0.0)));
                continue;
            }
            b'S' => start[s] = 1.0,
            _ => {}
        }
        let go = |direction: usize| -> usize {
            let (r, c) = match direction {
                0 => (row, col.saturating_sub(1)),
                1 => ((row + 1).min(nrow - 1), col),
                2 => (row, (col + 1).min(ncol - 1)),
                _ => (row.saturating_sub(1), col),
            };
            r * ncol + c
        };
        for a in 0..na {
            let directions: &[usize] = if slippery { &[(a + 3) % 4, a, (a + 1) % 4] } else { &[a] };
            for &d in directions {
                let y = go(d);
                let reward = if cell(y) == b'G' { 1.0 } else { 0.0 };
                entries.push((s, a, y, 1.0 / directions.len() as f64, reward));
            }
        }
    }
    let (p, r) = tables(ns, na, &entries);
    // Gymnasium's maps have one start cell.
    let first = start.iter().position(|&x| x == 1.0);
    FiniteEnv::new(name, Mdp::new(ns, na, p, r, first)?, start, discount, Some(time_limit))?
        .with_terminal_states(terminal)
}
