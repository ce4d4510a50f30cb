//! Taxi (Dietterich 2000, "Hierarchical reinforcement learning with the MAXQ value function
//! decomposition", §7.1; reference code: Gymnasium, `gymnasium/envs/toy_text/taxi.py`, as in
//! Gymnasium 1.x, `Taxi-v4`), plain, rainy, and with the fickle passenger.
//!
//! A 5×5 grid with walls and four landmarks R (0, 0), G (0, 4), Y (4, 0), B (4, 3). State
//! `((row * 5 + col) * 5 + passenger) * 4 + destination`, 500 states: the passenger waits at a
//! landmark (0 to 3) or rides in the taxi (4); the destination is a landmark. Actions 0 = south,
//! 1 = north, 2 = east, 3 = west, 4 = pickup, 5 = dropoff. Every step costs 1; dropping the
//! passenger at the destination pays 20 and ends the episode; a pickup where the passenger is not,
//! or a dropoff off a landmark or without the passenger, costs 10; a dropoff at another landmark
//! leaves the passenger there. Episodes start uniformly over the 300 states with the passenger at a
//! landmark other than the destination. The four states the successful dropoff enters (taxi and
//! passenger at the destination) are terminal; the other states with the passenger at the
//! destination cannot be reached and keep Gymnasium's rows. Undiscounted by default, time limit 200.
//!
//! Rainy: a move goes the intended way with probability 0.8 and to either side 0.1 each (a side
//! move blocked by a wall or the border stays); a move that cannot be made stays put entirely.
//!
//! Fickle passenger: at the start, with probability 0.3, the passenger is fickle; the first time
//! the taxi changes cell with the passenger aboard (aboard before the step), a fickle passenger
//! picks a new destination uniformly among the other three landmarks and stops being fickle.
//! Gymnasium does this inside `step()`, outside its tables; here the flag is part of the state:
//! states `s + 500 * fickle`, 1000 in all, the start law the plain one times Bernoulli(0.3).

use super::finite::{tables, FiniteEnv};
use crate::error::Result;
use crate::model::mdp::Mdp;

/// The registry's names.
pub const NAME: &str = "Taxi";
pub const RAINY_NAME: &str = "Taxi-Rainy";
pub const FICKLE_NAME: &str = "Taxi-Fickle";
/// Gymnasium's registered time limit.
pub const TIME_LIMIT: usize = 200;
/// Gymnasium's defaults.
pub const RAINY_PROBABILITY: f64 = 0.8;
pub const FICKLE_PROBABILITY: f64 = 0.3;
const BASE_STATES: usize = 500;
const MAP: [&str; 7] =
    ["+---------+", "|R: | : :G|", "| : | : : |", "| : : : : |", "| | : | : |", "|Y| : |B: |", "+---------+"];
const LANDMARKS: [(usize, usize); 4] = [(0, 0), (0, 4), (4, 0), (4, 3)];
const MAX: usize = 4;

fn encode(row: usize, col: usize, passenger: usize, destination: usize) -> usize {
    ((row * 5 + col) * 5 + passenger) * 4 + destination
}

/// `(row, col, passenger, destination)` of a base state.
fn decode(s: usize) -> (usize, usize, usize, usize) {
    (s / 100, (s / 20) % 5, (s / 4) % 5, s % 4)
}

/// The map's character at `(row, x)` of the cell grid (`x` counts map columns).
fn wall(row: usize, x: usize) -> bool {
    MAP[1 + row].as_bytes()[x] != b':'
}

/// Gymnasium's `_calc_new_position`: a side move, blocked by the border or a wall.
fn side_move(row: usize, col: usize, (dr, dc): (isize, isize)) -> (usize, usize) {
    let r = (row as isize + dr).clamp(0, MAX as isize) as usize;
    let c = (col as isize + dc).clamp(0, MAX as isize) as usize;
    if (dc == 1 && wall(r, 2 * c)) || (dc == -1 && wall(r, 2 * c + 2)) {
        return (row, col);
    }
    (r, c)
}

/// The base tables' entries of `(s, a)`: (probability, next state, reward), and whether it ends
/// the episode, as Gymnasium builds them.
fn outcomes(s: usize, action: usize, rainy: bool) -> Vec<(f64, usize, f64)> {
    let (row, col, passenger, destination) = decode(s);
    let at = (row, col);
    let can_move = match action {
        0 => row < MAX,
        1 => row > 0,
        2 => !wall(row, 2 * col + 2),
        3 => !wall(row, 2 * col),
        _ => false,
    };
    if action <= 3 {
        let (dr, dc): (isize, isize) = [(1, 0), (-1, 0), (0, 1), (0, -1)][action];
        let (r, c) = if can_move {
            ((row as isize + dr).clamp(0, MAX as isize) as usize, (col as isize + dc).clamp(0, MAX as isize) as usize)
        } else {
            at
        };
        let intended = encode(r, c, passenger, destination);
        if !rainy {
            return vec![(1.0, intended, -1.0)];
        }
        // Gymnasium's sides: south (east, west), north (west, east), east (north, south), west (south, north).
        let sides: [(isize, isize); 2] =
            [[(0, 1), (0, -1)], [(0, -1), (0, 1)], [(-1, 0), (1, 0)], [(1, 0), (-1, 0)]][action];
        let lateral = (1.0 - RAINY_PROBABILITY) / 2.0;
        let mut out = vec![(RAINY_PROBABILITY, intended, -1.0)];
        for side in sides {
            let (r, c) = if can_move { side_move(row, col, side) } else { at };
            out.push((lateral, encode(r, c, passenger, destination), -1.0));
        }
        return out;
    }
    let (next_passenger, reward) = if action == 4 {
        if passenger < 4 && at == LANDMARKS[passenger] {
            (4, -1.0)
        } else {
            (passenger, -10.0)
        }
    } else if passenger == 4 && at == LANDMARKS[destination] {
        (destination, 20.0)
    } else if passenger == 4 && LANDMARKS.contains(&at) {
        (LANDMARKS.iter().position(|&l| l == at).expect("a landmark"), -1.0)
    } else {
        (passenger, -10.0)
    };
    vec![(1.0, encode(row, col, next_passenger, destination), reward)]
}

/// Taxi, plain or rainy, with or without the fickle passenger.
pub fn taxi(rainy: bool, fickle: bool, discount: f64) -> Result<FiniteEnv> {
    let layers = if fickle { 2 } else { 1 };
    let (ns, na) = (BASE_STATES * layers, 6);
    let terminal_base = |s: usize| {
        let (row, col, passenger, destination) = decode(s);
        passenger == destination && (row, col) == LANDMARKS[destination]
    };
    let mut entries = Vec::new();
    for layer in 0..layers {
        for base in 0..BASE_STATES {
            let s = base + BASE_STATES * layer;
            if terminal_base(base) {
                entries.extend((0..na).map(|a| (s, a, s, 1.0, 0.0)));
                continue;
            }
            let (row, col, passenger, destination) = decode(base);
            for a in 0..na {
                for (prob, y, reward) in outcomes(base, a, rainy) {
                    let (y_row, y_col, y_passenger, _) = decode(y);
                    let redraw = layer == 1 && passenger == 4 && (y_row, y_col) != (row, col);
                    if redraw {
                        for d in (0..4).filter(|&d| d != destination) {
                            entries.push((s, a, encode(y_row, y_col, y_passenger, d), prob / 3.0, reward));
                        }
                    } else {
                        entries.push((s, a, y + BASE_STATES * layer, prob, reward));
                    }
                }
            }
        }
    }
    let (p, r) = tables(ns, na, &entries);
    let mut start = vec![0.0; ns];
    let mut terminal = vec![false; ns];
    for layer in 0..layers {
        let weight = match (fickle, layer) {
            (false, _) => 1.0,
            (true, 0) => 1.0 - FICKLE_PROBABILITY,
            (true, _) => FICKLE_PROBABILITY,
        };
        for base in 0..BASE_STATES {
            let (_, _, passenger, destination) = decode(base);
            terminal[base + BASE_STATES * layer] = terminal_base(base);
            if passenger < 4 && passenger != destination {
                start[base + BASE_STATES * layer] = weight / 300.0;
            }
        }
    }
    let name = match (rainy, fickle) {
        (false, false) => NAME,
        (true, false) => RAINY_NAME,
        (false, true) => FICKLE_NAME,
        (true, true) => "Taxi-Rainy-Fickle",
    };
    FiniteEnv::new(name, Mdp::new(ns, na, p, r, None)?, start, discount, Some(TIME_LIMIT))?
        .with_terminal_states(terminal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fickle_law_folds_the_redraw_into_the_tables() {
        let env = taxi(false, true, 1.0).unwrap();
        let p = env.mdp().transitions();
        let ns = 2 * BASE_STATES;
        // A fickle passenger aboard at (2, 2), going to R (0), the taxi moving south.
        let s = BASE_STATES + encode(2, 2, 4, 0);
        let row = &p[(s * 6) * ns..(s * 6 + 1) * ns];
        for d in 1..4 {
            assert!((row[encode(3, 2, 4, d)] - 1.0 / 3.0).abs() < 1e-15);
        }
        assert_eq!(row.iter().filter(|&&x| x > 0.0).count(), 3);
        // Not aboard: the flag stays.
        let s = BASE_STATES + encode(2, 2, 1, 0);
        assert_eq!(p[(s * 6) * ns + BASE_STATES + encode(3, 2, 1, 0)], 1.0);
        assert!((env.start_law().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
