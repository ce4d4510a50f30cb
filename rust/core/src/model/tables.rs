//! What every tabular model shares: the borrowed view the solvers read, and the checks of an
//! (S, A, S) table with its rewards, used by distributions ([`super::Fdm`]) and MDPs
//! ([`super::Mdp`]) alike.

use crate::error::Result;
use crate::invalid;

use super::sparse::RowSupports;

/// A borrowed tabular model: `transitions` and `rewards` row-major (S, A, S), with row supports.
#[derive(Clone, Copy, Debug)]
pub struct TabularView<'a> {
    pub n_states: usize,
    pub n_actions: usize,
    pub transitions: &'a [f64],
    pub rewards: &'a [f64],
    pub support: &'a RowSupports,
}

/// Checks the shape and values shared by distributions and MDPs; names the offending entry.
pub fn check_tables(
    n_states: usize,
    n_actions: usize,
    table: &[f64],
    table_name: &str,
    rewards: &[f64],
    initial_state: Option<usize>,
) -> Result<()> {
    if n_states == 0 || n_actions == 0 {
        return Err(invalid!("need at least one state and one action, got S={n_states}, A={n_actions}"));
    }
    if n_states > u32::MAX as usize {
        return Err(invalid!("too many states: {n_states}"));
    }
    let size = n_states * n_actions * n_states;
    if table.len() != size {
        return Err(invalid!("{table_name} has {} entries, expected S*A*S = {size}", table.len()));
    }
    if rewards.len() != size {
        return Err(invalid!("rewards has {} entries, expected S*A*S = {size}", rewards.len()));
    }
    for (i, &v) in table.iter().enumerate() {
        if !(v.is_finite() && v >= 0.0) {
            let (s, a, y) = unflatten(i, n_states, n_actions);
            return Err(invalid!("{table_name}[{s}, {a}, {y}] = {v} must be finite and >= 0"));
        }
    }
    for row in 0..n_states * n_actions {
        if table[row * n_states..(row + 1) * n_states].iter().all(|&v| v == 0.0) {
            return Err(invalid!(
                "{table_name}[{}, {}, :] is all zero: every (state, action) needs a possible next state",
                row / n_actions,
                row % n_actions
            ));
        }
    }
    if let Some(i) = rewards.iter().position(|r| !r.is_finite()) {
        let (s, a, y) = unflatten(i, n_states, n_actions);
        return Err(invalid!("rewards[{s}, {a}, {y}] = {} must be finite", rewards[i]));
    }
    if let Some(s0) = initial_state {
        if s0 >= n_states {
            return Err(invalid!("initial state {s0} is out of range 0..{n_states}"));
        }
    }
    Ok(())
}

fn unflatten(i: usize, n_states: usize, n_actions: usize) -> (usize, usize, usize) {
    (i / (n_actions * n_states), (i / n_states) % n_actions, i % n_states)
}
