//! Helpers of the criterion benches (the benches themselves are `kernels.rs` and `planning.rs`):
//! the three accurate-prior distributions of the benchmark built in code exactly as SPEC 1.3
//! describes them, and a reader of the original's `.dat` files to check them against.

use bbrl::fdm::Fdm;

/// Row-major index of `(s, a, y)` in an (S, A, S) table.
fn idx(n_states: usize, n_actions: usize, s: usize, a: usize, y: usize) -> usize {
    (s * n_actions + a) * n_states + y
}

/// GC (Generalised Chain): 5 states, 3 actions with the same theta; state `x < 4` goes to 0 or
/// `x + 1`, state 4 to 0 or 4, every concentration 1; reward 2 on reaching 0, 10 on reaching 4.
pub fn gc() -> Fdm {
    let (ns, na) = (5, 3);
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for s in 0..ns {
        for a in 0..na {
            theta[idx(ns, na, s, a, 0)] = 1.0;
            theta[idx(ns, na, s, a, (s + 1).min(4))] = 1.0;
            rewards[idx(ns, na, s, a, 0)] = 2.0;
            rewards[idx(ns, na, s, a, 4)] = 10.0;
        }
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("valid GC")
}

/// GDL (Generalised Double-Loop): 9 states, 2 actions with the same theta (SPEC 1.3);
/// reward 1 on 4 -> 0 and 2 on 8 -> 0.
pub fn gdl() -> Fdm {
    let (ns, na) = (9, 2);
    let supports: [&[usize]; 9] = [&[1, 5], &[2], &[3], &[4], &[0], &[0, 6], &[0, 7], &[0, 8], &[0]];
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for (s, support) in supports.iter().enumerate() {
        for a in 0..na {
            for &y in *support {
                theta[idx(ns, na, s, a, y)] = 1.0;
            }
        }
    }
    for a in 0..na {
        rewards[idx(ns, na, 4, a, 0)] = 1.0;
        rewards[idx(ns, na, 8, a, 0)] = 2.0;
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("valid GDL")
}

/// Grid (5 x 5, state `5 row + col`, actions left, right, up, down): each move reaches the
/// neighbour or stays, concentration 1 each; a move off the grid stays. Exceptions: 19 down and
/// 23 right lead to 0 (or stay), with reward 10 on reaching 0. Every other reward is 0.
pub fn grid() -> Fdm {
    let (ns, na) = (25, 4);
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for s in 0..ns {
        let (row, col) = ((s / 5) as i64, (s % 5) as i64);
        for (a, (dr, dc)) in [(0, -1), (0, 1), (-1, 0), (1, 0)].into_iter().enumerate() {
            theta[idx(ns, na, s, a, s)] = 1.0;
            let (r, c) = (row + dr, col + dc);
            if (s, a) == (19, 3) || (s, a) == (23, 1) {
                theta[idx(ns, na, s, a, 0)] = 1.0;
                rewards[idx(ns, na, s, a, 0)] = 10.0;
            } else if (0..5).contains(&r) && (0..5).contains(&c) {
                theta[idx(ns, na, s, a, (5 * r + c) as usize)] = 1.0;
            }
        }
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).expect("valid Grid")
}

/// Reads a distribution in the original's text format (SPEC 1.1): a `DirMultiDistribution`
/// with nX, nU, the initial state, theta in file order (`for u: for x:` one row of nX values),
/// the reward type, R in the same order and the optional variance block.
pub fn parse_distribution(text: &str) -> Result<Fdm, String> {
    let mut lines = text.lines().map(str::trim);
    lines.by_ref().find(|l| *l == "DirMultiDistribution").ok_or("no DirMultiDistribution section")?;
    let mut lines = lines.map(Ok).chain(std::iter::repeat_with(|| Err("truncated file".to_string())));
    let _count = lines.next().unwrap()?;
    let ns = number(lines.next().unwrap()?)? as usize;
    let na = number(lines.next().unwrap()?)? as usize;
    let initial = number(lines.next().unwrap()?)? as i64;
    let theta = table_block(&mut lines, ns, na, "theta")?;
    let _reward_type = lines.next().unwrap()?;
    let rewards = table_block(&mut lines, ns, na, "R")?;
    Fdm::new(ns, na, theta, rewards, usize::try_from(initial).ok()).map_err(|e| e.to_string())
}

fn number(s: &str) -> Result<f64, String> {
    s.parse::<f64>().map_err(|e| format!("bad number '{s}': {e}"))
}

/// One (S, A, S) block in file order: `for u: for x:` a line of S tab-separated values.
fn table_block<'a>(
    lines: &mut impl Iterator<Item = Result<&'a str, String>>,
    ns: usize,
    na: usize,
    name: &str,
) -> Result<Vec<f64>, String> {
    let mut table = vec![0.0; ns * na * ns];
    for a in 0..na {
        for s in 0..ns {
            let line = lines.next().unwrap()?;
            let values: Vec<&str> = line.split('\t').collect();
            if values.len() != ns {
                return Err(format!("{name} row ({s}, {a}) has {} values, expected {ns}", values.len()));
            }
            for (y, v) in values.into_iter().enumerate() {
                table[idx(ns, na, s, a, y)] = number(v)?;
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builders equal the original's data files, when they are at hand (`BBRL_DATA_DIR`, by
    /// default `shared/data` beside the repository).
    #[test]
    fn builders_match_the_data_files() {
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data");
        let dir = std::env::var("BBRL_DATA_DIR").unwrap_or_else(|_| default.into());
        for (name, built) in [("GC", gc()), ("GDL", gdl()), ("Grid", grid())] {
            let path = format!("{dir}/bbrl-{name}-distrib.dat");
            let Ok(text) = std::fs::read_to_string(&path) else {
                eprintln!("skipped: {path} not found (set BBRL_DATA_DIR)");
                continue;
            };
            let parsed = parse_distribution(&text).unwrap();
            assert_eq!(parsed.theta(), built.theta(), "{name} theta");
            assert_eq!(parsed.rewards(), built.rewards(), "{name} rewards");
            assert_eq!(parsed.initial_state(), built.initial_state(), "{name} initial state");
        }
    }
}
