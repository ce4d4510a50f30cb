//! Finite environments: a finite MDP with a start law, a discount and an optional time limit,
//! optional terminal states and Gaussian reward noise, and the named test MDPs of the replay
//! literature (SixArms, RiverSwim).

use rand::Rng as _;
use rand_distr::StandardNormal;

use super::{Env, Step};
use crate::error::Result;
use crate::invalid;
use crate::model::mdp::{draw_from_law, Mdp};
use crate::rng::Rng;

/// A finite MDP as an [`Env`].
#[derive(Clone, Debug)]
pub struct FiniteEnv {
    name: String,
    mdp: Mdp,
    /// The start law, one probability per state.
    start: Vec<f64>,
    discount: f64,
    time_limit: Option<usize>,
    reward_bounds: (f64, f64),
    /// The start law is uniform over every state: drawn as [`Mdp::initial_state`] draws it, so
    /// an episode on test MDP `i` with the environment stream of MDP `i` is the protocol's.
    uniform_start: bool,
    /// `terminal[s]`: entering `s` ends the episode. Empty when no state is terminal.
    terminal: Vec<bool>,
    /// The standard deviation of the Gaussian noise added to the reward of each `(s, a)`, row
    /// major. Empty when the rewards carry no noise (then no normal is drawn, so the stream of
    /// an environment without noise is what it was before noise existed).
    reward_noise: Vec<f64>,
}

impl FiniteEnv {
    /// Validates the start law (non-negative, summing to 1 within 1e-9), the discount (in [0, 1])
    /// and the time limit (at least 1 step when given). A discount of 1 needs a time limit.
    pub fn new(name: &str, mdp: Mdp, start: Vec<f64>, discount: f64, time_limit: Option<usize>) -> Result<Self> {
        let s = mdp.n_states();
        if start.len() != s {
            return Err(invalid!("the start law has {} entries for {s} states", start.len()));
        }
        if start.iter().any(|p| !(p.is_finite() && *p >= 0.0)) || (start.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
            return Err(invalid!("the start law must be non-negative and sum to 1, got {start:?}"));
        }
        if !(0.0..=1.0).contains(&discount) {
            return Err(invalid!("discount must be in [0, 1], got {discount}"));
        }
        if discount == 1.0 && time_limit.is_none() {
            return Err(invalid!("an undiscounted environment (discount 1) needs a time limit"));
        }
        if time_limit == Some(0) {
            return Err(invalid!("time_limit must be >= 1 step"));
        }
        // Bounds over the rewards of transitions that can happen.
        let (p, r) = (mdp.transitions(), mdp.rewards());
        let reachable = p.iter().zip(r).filter(|(p, _)| **p > 0.0).map(|(_, r)| *r);
        let reward_bounds = reachable.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| (lo.min(r), hi.max(r)));
        let uniform_start = start.iter().all(|&p| p == 1.0 / s as f64);
        Ok(Self {
            name: name.to_string(),
            mdp,
            start,
            discount,
            time_limit,
            reward_bounds,
            uniform_start,
            terminal: Vec::new(),
            reward_noise: Vec::new(),
        })
    }

    /// The same environment whose states flagged in `terminal` end an episode when entered.
    ///
    /// A terminal state must be absorbing with reward 0 under every action (what an episode that
    /// has ended earns), so that finite-horizon values computed on the tables are the episodic
    /// ones; and the start law must give it no mass (an episode never starts ended). The reward
    /// bounds become those of the transitions from live states: a terminal state is not acted in.
    pub fn with_terminal_states(mut self, terminal: Vec<bool>) -> Result<Self> {
        let (ns, na) = (self.mdp.n_states(), self.mdp.n_actions());
        if terminal.len() != ns {
            return Err(invalid!("the terminal flags have {} entries for {ns} states", terminal.len()));
        }
        for s in (0..ns).filter(|&s| terminal[s]) {
            if self.start[s] > 0.0 {
                return Err(invalid!("terminal state {s} has start probability {}", self.start[s]));
            }
            for a in 0..na {
                let i = (s * na + a) * ns + s;
                if self.mdp.transitions()[i] != 1.0 || self.mdp.rewards()[i] != 0.0 {
                    return Err(invalid!("terminal state {s} must stay in itself with reward 0 under action {a}"));
                }
            }
        }
        if terminal.iter().any(|&t| t) {
            // Noisy rewards keep their infinite bounds.
            let (p, r) = (self.mdp.transitions(), self.mdp.rewards());
            let live = (0..ns * na * ns).filter(|i| !terminal[i / (na * ns)] && p[*i] > 0.0).map(|i| r[i]);
            if self.reward_noise.is_empty() {
                self.reward_bounds =
                    live.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)));
            }
            self.terminal = terminal;
        }
        Ok(self)
    }

    /// The same environment with Gaussian noise of standard deviation `sd[s * A + a]` added to
    /// every reward of `(s, a)` (the tables keep the mean). With any noise, the reward bounds
    /// become `(-inf, inf)`: a Gaussian reward has no bound.
    pub fn with_reward_noise(mut self, sd: Vec<f64>) -> Result<Self> {
        let pairs = self.mdp.n_states() * self.mdp.n_actions();
        if sd.len() != pairs {
            return Err(invalid!("the reward noise has {} entries for {pairs} state-action pairs", sd.len()));
        }
        if let Some(bad) = sd.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
            return Err(invalid!("a reward noise standard deviation must be finite and >= 0, got {bad}"));
        }
        if sd.iter().any(|&x| x > 0.0) {
            self.reward_noise = sd;
            self.reward_bounds = (f64::NEG_INFINITY, f64::INFINITY);
        } else {
            self.reward_noise = Vec::new();
        }
        Ok(self)
    }

    /// `terminal[s]`: entering `s` ends the episode (all false when none is terminal).
    pub fn terminal_states(&self) -> Vec<bool> {
        if self.terminal.is_empty() {
            vec![false; self.mdp.n_states()]
        } else {
            self.terminal.clone()
        }
    }

    /// The standard deviation of each `(s, a)`'s reward noise, row major (zeros when none).
    pub fn reward_noise(&self) -> Vec<f64> {
        if self.reward_noise.is_empty() {
            vec![0.0; self.mdp.n_states() * self.mdp.n_actions()]
        } else {
            self.reward_noise.clone()
        }
    }

    /// The continuing form of the tables (the BBRL protocol's view of an episodic problem): a
    /// transition into a terminal state is replaced by a reset, its mass spread over the start
    /// law, `P_c(y|s,a) = P(y|s,a) [y not terminal] + P(terminal|s,a) mu0(y)`. The reward of an
    /// entry is the mean reward of the transitions merged into it, so the expected reward of every
    /// `(s, a)` is unchanged. Terminal states keep their (absorbing) rows; no transition enters
    /// them any more. Without terminal states these are the tables themselves.
    pub fn continuing_tables(&self) -> (Vec<f64>, Vec<f64>) {
        let (p, r) = (self.mdp.transitions(), self.mdp.rewards());
        if self.terminal.is_empty() {
            return (p.to_vec(), r.to_vec());
        }
        let (ns, na) = (self.mdp.n_states(), self.mdp.n_actions());
        let mut pc = vec![0.0; p.len()];
        // Probability-weighted reward sums, divided by the merged probability at the end.
        let mut weighted = vec![0.0; p.len()];
        for s in 0..ns {
            for a in 0..na {
                let base = (s * na + a) * ns;
                if self.terminal[s] {
                    pc[base..base + ns].copy_from_slice(&p[base..base + ns]);
                    weighted[base..base + ns].copy_from_slice(&r[base..base + ns]);
                    continue;
                }
                for y in 0..ns {
                    let (prob, reward) = (p[base + y], r[base + y]);
                    if prob == 0.0 {
                        continue;
                    }
                    if self.terminal[y] {
                        for (x, &mu) in self.start.iter().enumerate().filter(|(_, mu)| **mu > 0.0) {
                            pc[base + x] += prob * mu;
                            weighted[base + x] += prob * mu * reward;
                        }
                    } else {
                        pc[base + y] += prob;
                        weighted[base + y] += prob * reward;
                    }
                }
                for y in 0..ns {
                    if pc[base + y] > 0.0 {
                        weighted[base + y] /= pc[base + y];
                    }
                }
            }
        }
        (pc, weighted)
    }

    /// The underlying MDP.
    pub fn mdp(&self) -> &Mdp {
        &self.mdp
    }

    /// The start law.
    pub fn start_law(&self) -> &[f64] {
        &self.start
    }
}

impl Env for FiniteEnv {
    type State = usize;

    fn name(&self) -> String {
        self.name.clone()
    }
    fn n_actions(&self) -> usize {
        self.mdp.n_actions()
    }
    fn n_states(&self) -> Option<usize> {
        Some(self.mdp.n_states())
    }
    fn discount(&self) -> f64 {
        self.discount
    }
    fn reward_bounds(&self) -> (f64, f64) {
        self.reward_bounds
    }
    fn time_limit(&self) -> Option<usize> {
        self.time_limit
    }

    fn reset(&self, rng: &mut Rng) -> usize {
        if self.uniform_start {
            return rng.random_range(0..self.start.len());
        }
        // A single start state costs no draw (as a fixed initial state in the protocol); otherwise
        // the first state whose cumulative probability exceeds u; rounding falls back to the last
        // state with positive probability.
        if let Some(s) = self.start.iter().position(|&p| p == 1.0) {
            return s;
        }
        draw_from_law(&self.start, rng)
    }

    #[inline]
    fn step(&self, state: &usize, action: usize, rng: &mut Rng) -> Step<usize> {
        let (next_state, mut reward) = self.mdp.step(*state, action, rng);
        if !self.reward_noise.is_empty() {
            let sd = self.reward_noise[*state * self.mdp.n_actions() + action];
            if sd > 0.0 {
                reward += sd * rng.sample::<f64, _>(StandardNormal);
            }
        }
        let terminal = !self.terminal.is_empty() && self.terminal[next_state];
        Step { next_state, reward, terminal }
    }
}

/// Builds dense (S, A, S) tables from `(s, a, s', probability, reward)` entries.
pub(super) fn tables(
    n_states: usize,
    n_actions: usize,
    entries: &[(usize, usize, usize, f64, f64)],
) -> (Vec<f64>, Vec<f64>) {
    let mut p = vec![0.0; n_states * n_actions * n_states];
    let mut r = vec![0.0; n_states * n_actions * n_states];
    for &(s, a, y, prob, reward) in entries {
        let i = (s * n_actions + a) * n_states + y;
        p[i] += prob;
        r[i] = reward;
    }
    (p, r)
}

/// SixArms (Strehl & Littman): a hub (state 0) and six arms. From the hub, action i reaches arm
/// i + 1 with probability `[1, 0.15, 0.10, 0.05, 0.03, 0.01][i]` and otherwise stays, reward 0.
/// In arm 1, every action but 4 stays with reward 50 and action 4 returns to the hub; in arm
/// i in 2..=6 only action i - 1 stays, with reward `[133, 300, 800, 1660, 6000][i - 2]`, and every
/// other action returns to the hub with reward 0. Starts at the hub; continuing (no time limit).
pub fn six_arms(discount: f64) -> Result<FiniteEnv> {
    const REACH: [f64; 6] = [1.0, 0.15, 0.10, 0.05, 0.03, 0.01];
    const ARM_REWARD: [f64; 5] = [133.0, 300.0, 800.0, 1660.0, 6000.0];
    let (s, a) = (7, 6);
    let mut entries = Vec::new();
    for (i, &p) in REACH.iter().enumerate() {
        entries.push((0, i, i + 1, p, 0.0));
        if p < 1.0 {
            entries.push((0, i, 0, 1.0 - p, 0.0));
        }
    }
    for action in 0..a {
        entries.push(if action == 4 { (1, action, 0, 1.0, 0.0) } else { (1, action, 1, 1.0, 50.0) });
    }
    for arm in 2..=6 {
        for action in 0..a {
            entries.push(if action == arm - 1 {
                (arm, action, arm, 1.0, ARM_REWARD[arm - 2])
            } else {
                (arm, action, 0, 1.0, 0.0)
            });
        }
    }
    let (p, r) = tables(s, a, &entries);
    let mut start = vec![0.0; s];
    start[0] = 1.0;
    let limit = (discount == 1.0).then_some(1000);
    FiniteEnv::new("SixArms", Mdp::new(s, a, p, r, Some(0))?, start, discount, limit)
}

/// The two RiverSwim definitions of the literature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RiverSwimVariant {
    /// Osband, Russo & Van Roy 2013 (the one Mandel et al. 2016 replay): start in state 0,
    /// episodes of 20 steps, undiscounted; reward 5/1000 for left at state 0, 1 for right at
    /// state 5.
    Osband,
    /// Strehl & Littman 2008: start in state 1 or 2 (½ each), continuing; reward 5 for staying at
    /// state 0 by going left, 10000 for staying at state 5 by going right.
    Strehl,
}

impl std::str::FromStr for RiverSwimVariant {
    type Err = crate::error::BbrlError;

    /// `"osband"` or `"strehl"`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "osband" => Ok(Self::Osband),
            "strehl" => Ok(Self::Strehl),
            other => Err(invalid!("unknown RiverSwim variant {other:?}; known: \"osband\", \"strehl\"")),
        }
    }
}

/// RiverSwim with 6 states and 2 actions (0 = left, 1 = right). Left always moves one state left
/// (staying at state 0). `discount` defaults by the caller: the Osband variant is undiscounted
/// over its 20 steps (pass 1.0), the Strehl variant continuing (pass < 1).
pub fn river_swim(variant: RiverSwimVariant, discount: f64) -> Result<FiniteEnv> {
    let (s, a) = (6, 2);
    let mut entries = Vec::new();
    let (left, right) = (0, 1);
    match variant {
        RiverSwimVariant::Osband => {
            entries.push((0, left, 0, 1.0, 0.005));
            for x in 1..s {
                entries.push((x, left, x - 1, 1.0, 0.0));
            }
            entries.push((0, right, 0, 0.4, 0.0));
            entries.push((0, right, 1, 0.6, 0.0));
            for x in 1..5 {
                entries.push((x, right, x - 1, 0.05, 0.0));
                entries.push((x, right, x, 0.6, 0.0));
                entries.push((x, right, x + 1, 0.35, 0.0));
            }
            entries.push((5, right, 5, 0.6, 1.0));
            entries.push((5, right, 4, 0.4, 1.0));
        }
        RiverSwimVariant::Strehl => {
            entries.push((0, left, 0, 1.0, 5.0));
            for x in 1..s {
                entries.push((x, left, x - 1, 1.0, 0.0));
            }
            entries.push((0, right, 0, 0.7, 0.0));
            entries.push((0, right, 1, 0.3, 0.0));
            for x in 1..5 {
                entries.push((x, right, x - 1, 0.1, 0.0));
                entries.push((x, right, x, 0.6, 0.0));
                entries.push((x, right, x + 1, 0.3, 0.0));
            }
            entries.push((5, right, 4, 0.7, 0.0));
            entries.push((5, right, 5, 0.3, 10000.0));
        }
    }
    let (p, r) = tables(s, a, &entries);
    let (start, initial, limit, name) = match variant {
        RiverSwimVariant::Osband => (vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0], Some(0), Some(20), "RiverSwim-Osband"),
        RiverSwimVariant::Strehl => (vec![0.0, 0.5, 0.5, 0.0, 0.0, 0.0], None, None, "RiverSwim-Strehl"),
    };
    FiniteEnv::new(name, Mdp::new(s, a, p, r, initial)?, start, discount, limit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn rows_are_distributions_and_starts_follow_the_law() {
        let env = river_swim(RiverSwimVariant::Strehl, 0.95).unwrap();
        let mut rng = stream(1, 0, 0);
        let n = 20_000;
        let ones = (0..n).filter(|_| env.reset(&mut rng) == 1).count() as f64;
        // Binomial(n, 1/2): 5 standard deviations.
        assert!((ones / n as f64 - 0.5).abs() < 5.0 * (0.25 / n as f64).sqrt());
        assert!(six_arms(0.95).is_ok());
        assert!(river_swim(RiverSwimVariant::Osband, 1.0).unwrap().time_limit() == Some(20));
        assert_eq!(six_arms(0.95).unwrap().reward_bounds(), (0.0, 6000.0));
    }

    #[test]
    fn variants_parse_by_name() {
        assert_eq!("osband".parse::<RiverSwimVariant>().unwrap(), RiverSwimVariant::Osband);
        assert_eq!("strehl".parse::<RiverSwimVariant>().unwrap(), RiverSwimVariant::Strehl);
        let e = "Osband".parse::<RiverSwimVariant>().unwrap_err().to_string();
        assert!(e.contains("\"Osband\"") && e.contains("\"osband\", \"strehl\""), "{e}");
    }

    #[test]
    fn rejects_a_bad_start_law_or_discount() {
        let mdp = six_arms(0.9).unwrap().mdp().clone();
        assert!(FiniteEnv::new("x", mdp.clone(), vec![0.5; 7], 0.9, None).is_err());
        assert!(FiniteEnv::new("x", mdp.clone(), vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1.5, None).is_err());
        assert!(FiniteEnv::new("x", mdp, vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], 1.0, None).is_err());
    }
}
