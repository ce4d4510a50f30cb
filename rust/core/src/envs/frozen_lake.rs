//! FrozenLake (reference code: Gymnasium, `gymnasium/envs/toy_text/frozen_lake.py`, with its
//! defaults `success_rate = 1/3` and `reward_schedule = (1, 0, 0)`), on its 4×4 and 8×8 maps,
//! slippery (Gymnasium's default) or not.
//!
//! A grid of frozen cells (`F`), holes (`H`), a start (`S`) and a goal (`G`); state
//! `row * ncol + col`, actions 0 = left, 1 = down, 2 = right, 3 = up, moves clamped at the border.
//! On the slippery lake the agent goes the intended way with probability [`SUCCESS`] = 1/3 and
//! either perpendicular way with [`SLIP`] = (1 − 1/3)/2 each; otherwise the intended way. Entering a
//! hole or the goal ends the episode (both terminal); entering the goal pays 1, everything else 0.
//! Undiscounted by default, time limit 100 (4×4) or 200 (8×8), Gymnasium's registered limits.
//!
//! The probabilities are Gymnasium's to the last bit (Gymnasium 1.2.1 and later; 1.2.0 and before
//! gave all three moves `1.0 / 3.0`). In floating point `(1.0 - 1.0 / 3.0) / 2.0` is
//! 0.33333333333333337, one ulp above `1.0 / 3.0` = 0.3333333333333333, so the side moves use that
//! expression, not 1/3. Gymnasium's `P[s][a]` lists the three moves in the order perpendicular
//! `(a - 1) % 4`, intended `a`, perpendicular `(a + 1) % 4`, one tuple each, and keeps two moves
//! into the same cell (against a border) as two tuples; a dense table holds their sum. The entries
//! here are in Gymnasium's order and `finite::tables` adds them from 0.0 in that order, which is what
//! summing Gymnasium's list does (`P[s, a, y] += p` over `P[s][a]`, as `from_gymnasium` and the
//! golden test read it): a side move and the intended one into one cell (a corner) make
//! 0.6666666666666667 where 1/3 + 1/3 made 0.6666666666666666.

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// The probability of the intended move on the slippery lake (Gymnasium's `success_rate`).
pub const SUCCESS: f64 = 1.0 / 3.0;
/// The probability of each perpendicular move on the slippery lake, computed as Gymnasium computes
/// its `fail_rate` (0.33333333333333337, not `1.0 / 3.0`).
pub const SLIP: f64 = (1.0 - SUCCESS) / 2.0;

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
            // Gymnasium's order, (a - 1) mod 4, a, (a + 1) mod 4: the order in which the
            // probabilities of two moves into one cell are summed.
            let moves: &[(usize, f64)] =
                if slippery { &[((a + 3) % 4, SLIP), (a, SUCCESS), ((a + 1) % 4, SLIP)] } else { &[(a, 1.0)] };
            for &(d, prob) in moves {
                let y = go(d);
                let reward = if cell(y) == b'G' { 1.0 } else { 0.0 };
                entries.push((s, a, y, prob, reward));
            }
        }
    }
    let (p, r) = tables(ns, na, &entries);
    // Gymnasium's maps have one start cell.
    let first = start.iter().position(|&x| x == 1.0);
    FiniteEnv::new(name, Mdp::new(ns, na, p, r, first)?, start, discount, Some(time_limit))?
        .with_terminal_states(terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lake(map: &[&str], slippery: bool) -> FiniteEnv {
        frozen_lake("lake", map, slippery, 100, 1.0).unwrap()
    }

    #[test]
    fn frozen_lake_side_moves_are_gymnasiums_fail_rate() {
        assert_eq!(SUCCESS, 0.3333333333333333);
        assert_eq!(SLIP, 0.33333333333333337);
        assert_ne!(SLIP, SUCCESS);
        let env = lake(&MAP_4X4, true);
        let p = |s: usize, a: usize, y: usize| env.mdp().transitions()[(s * 4 + a) * 16 + y];
        // State 14, right: down is blocked (stays at 14), right enters the goal, up reaches 10.
        assert_eq!((p(14, 2, 10), p(14, 2, 14), p(14, 2, 15)), (SLIP, SLIP, SUCCESS));
        // State 0, left: up (blocked) and left (blocked) both stay, summed as 0.0 + SLIP + SUCCESS.
        assert_eq!(p(0, 0, 0), 0.0 + SLIP + SUCCESS);
        assert_eq!(p(0, 0, 0), 0.6666666666666667);
        assert_eq!(p(0, 0, 4), SLIP);
        // State 0, up: right to 1 first, then up (blocked) and left (blocked), both staying.
        assert_eq!((p(0, 3, 0), p(0, 3, 1)), (0.0 + SUCCESS + SLIP, SLIP));
    }

    #[test]
    fn frozen_lake_entries_are_gymnasiums_and_rows_sum_to_one() {
        for (map, n) in [(&MAP_4X4[..], 16), (&MAP_8X8[..], 64)] {
            let env = lake(map, true);
            let t = env.mdp().transitions();
            for row in t.chunks(n) {
                let sum: f64 = row.iter().sum();
                assert!((sum - 1.0).abs() < 1e-15, "{sum}");
            }
            // Every entry of a live row is SLIP, SUCCESS or a sum of two moves into one cell.
            let allowed = [0.0, 1.0, SLIP, SUCCESS, 0.0 + SLIP + SUCCESS, 0.0 + SLIP + SLIP];
            assert!(t.iter().all(|x| allowed.contains(x)));
            let plain = lake(map, false);
            assert!(plain.mdp().transitions().iter().all(|&x| x == 0.0 || x == 1.0));
        }
    }
}
