//! What every tabular model shares: the borrowed view the solvers read, and the checks of an
//! (S, A, S) table with its rewards, used by distributions ([`super::Fdm`]) and MDPs
//! ([`super::Mdp`]) alike.

use crate::error::{index_range, Result};
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
            return Err(invalid!("initial state {s0} is out of range: allowed {}", index_range(n_states)));
        }
    }
    Ok(())
}

fn unflatten(i: usize, n_states: usize, n_actions: usize) -> (usize, usize, usize) {
    (i / (n_actions * n_states), (i / n_states) % n_actions, i % n_states)
}

/// (S, A) of an array of shape `shape` that must be an (S, A, S) table called `name`.
pub fn cube_dims(shape: &[usize], name: &str) -> Result<(usize, usize)> {
    match shape {
        [s, a, s2] if s == s2 => Ok((*s, *a)),
        _ => Err(invalid!("{name} must have shape (S, A, S), got {shape:?}")),
    }
}

/// (S, A) of a table `name` of shape `shape` (S, A, S) and of the rewards of the same shape.
pub fn table_pair_dims(shape: &[usize], name: &str, rewards_shape: &[usize]) -> Result<(usize, usize)> {
    let dims = cube_dims(shape, name)?;
    if rewards_shape != shape {
        return Err(invalid!("rewards shape {rewards_shape:?} differs from {name} shape {shape:?}"));
    }
    Ok(dims)
}

/// The initial state given as an index, `-1` for a uniformly random one at every reset.
pub fn initial_state(index: i64, n_states: usize) -> Result<Option<usize>> {
    match index {
        -1 => Ok(None),
        s if s >= 0 && (s as usize) < n_states => Ok(Some(s as usize)),
        s => Err(invalid!("initial state {s} is out of range: allowed {} (or -1 for random)", index_range(n_states))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_and_initial_states_are_checked_with_their_names() {
        assert_eq!(cube_dims(&[3, 2, 3], "theta").unwrap(), (3, 2));
        let e = cube_dims(&[3, 2, 2], "theta").unwrap_err().to_string();
        assert!(e.contains("theta must have shape (S, A, S), got [3, 2, 2]"), "{e}");
        assert_eq!(table_pair_dims(&[2, 1, 2], "transitions", &[2, 1, 2]).unwrap(), (2, 1));
        let e = table_pair_dims(&[2, 1, 2], "transitions", &[2, 2, 2]).unwrap_err().to_string();
        assert!(e.contains("rewards shape [2, 2, 2] differs from transitions shape [2, 1, 2]"), "{e}");
        assert_eq!(initial_state(-1, 3).unwrap(), None);
        assert_eq!(initial_state(2, 3).unwrap(), Some(2));
        for bad in [3, -2] {
            let e = initial_state(bad, 3).unwrap_err().to_string();
            assert!(e.contains("out of range: allowed 0 to 2 (or -1 for random)"), "{e}");
        }
    }
}
