//! The benchmark's three problems as FDM distributions, exactly as the original data files
//! (SPEC 1.3; a Python test checks them against the files): the single source of the built-ins.

use crate::model::fdm::Fdm;

fn index(n_states: usize, n_actions: usize, s: usize, a: usize, y: usize) -> usize {
    (s * n_actions + a) * n_states + y
}

/// GC, the Generalised Chain: 5 states, 3 actions; from x the agent reaches x + 1 (4 stays) or
/// falls back to 0. Reward 2 on reaching 0 and 10 on reaching 4. Every action has the same prior.
pub fn generalized_chain() -> Fdm {
    let (ns, na) = (5, 3);
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for s in 0..ns {
        for a in 0..na {
            theta[index(ns, na, s, a, 0)] = 1.0;
            theta[index(ns, na, s, a, (s + 1).min(ns - 1))] = 1.0;
            rewards[index(ns, na, s, a, 0)] = 2.0;
            rewards[index(ns, na, s, a, 4)] = 10.0;
        }
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("GC is valid")
}

/// GDL, the Generalised Double-Loop: 9 states, 2 actions; the loop 0→1→2→3→4→0 pays 1 and the
/// loop 0→5→6→7→8→0 pays 2, but states 5–7 may fall back to 0.
pub fn generalized_double_loop() -> Fdm {
    let (ns, na) = (9, 2);
    let supports: [&[usize]; 9] = [&[1, 5], &[2], &[3], &[4], &[0], &[0, 6], &[0, 7], &[0, 8], &[0]];
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for (s, ys) in supports.iter().enumerate() {
        for a in 0..na {
            for &y in ys.iter() {
                theta[index(ns, na, s, a, y)] = 1.0;
            }
        }
    }
    for a in 0..na {
        rewards[index(ns, na, 4, a, 0)] = 1.0;
        rewards[index(ns, na, 8, a, 0)] = 2.0;
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("GDL is valid")
}

/// Grid: 5x5 cells, state 5 * row + col, actions 0 = left, 1 = right, 2 = up, 3 = down (the
/// file's order). A move succeeds or leaves the agent in place; down from 19 and right from 23
/// may instead reach the goal, which pays 10 and teleports to 0.
pub fn grid() -> Fdm {
    let (side, na) = (5usize, 4);
    let ns = side * side;
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    let moves: [(isize, isize); 4] = [(0, -1), (0, 1), (-1, 0), (1, 0)];
    for s in 0..ns {
        let (row, col) = ((s / side) as isize, (s % side) as isize);
        for (a, (dr, dc)) in moves.iter().enumerate() {
            theta[index(ns, na, s, a, s)] = 1.0;
            let (r, c) = (row + dr, col + dc);
            let special = (s == 19 && a == 3) || (s == 23 && a == 1);
            if special {
                theta[index(ns, na, s, a, 0)] = 1.0;
                rewards[index(ns, na, s, a, 0)] = 10.0;
            } else if (0..side as isize).contains(&r) && (0..side as isize).contains(&c) {
                theta[index(ns, na, s, a, (r as usize) * side + c as usize)] = 1.0;
            }
        }
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("Grid is valid")
}

/// The uniform (inaccurate) prior of a distribution: theta = 1 everywhere, same rewards and start.
pub fn uniform_prior(fdm: &Fdm) -> Fdm {
    let prior = Fdm::new(
        fdm.n_states(),
        fdm.n_actions(),
        vec![1.0; fdm.theta().len()],
        fdm.rewards().to_vec(),
        fdm.initial_state(),
    )
    .expect("a uniform prior over a valid distribution is valid");
    match fdm.start_law() {
        Some(law) => prior.with_start_law(law.to_vec()).expect("the distribution's start law is valid"),
        None => prior,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_supports() {
        let gc = generalized_chain();
        assert_eq!((gc.n_states(), gc.n_actions()), (5, 3));
        assert_eq!(gc.support().row(4 * 3), &[0, 4]);
        let gdl = generalized_double_loop();
        assert_eq!(gdl.support().row(0), &[1, 5]);
        let g = grid();
        assert_eq!(g.support().row(19 * 4 + 3), &[0, 19]);
        assert_eq!(g.support().row(0), &[0]); // left from the corner stays put
        assert_eq!(g.r_max(), 10.0);
        assert_eq!(uniform_prior(&g).support().row(0).len(), 25);
    }
}
