//! UCRL2 (Jaksch, Ortner & Auer 2010, Algorithm 1 and Figure 2) in the discounted continuing
//! protocol: doubling epochs and discounted extended value iteration (docs/baselines.md).
//!
//! # Epochs
//! Epoch k starts at step `t_k` (counted from 1) with the statistics frozen: `N_k(s, a)`,
//! `p̂ = n(s, a, ·) / max(1, N_k)` and `r̂ = R_k / max(1, N_k)`. The epoch ends after the step
//! whose pair's in-epoch count `nu(s, a)` reaches `max(1, N_k(s, a))` (the doubling rule tested
//! after the step, as Colosseum's `is_episode_end`: the plan depends on the observed history
//! only, so a query never decides when an epoch ends).
//!
//! # Confidence sets
//! `d_r = scale sqrt(7 ln(2 S A t_k / delta) / (2 max(1, N_k)))` and
//! `d_p = sqrt(14 S ln(2 A t_k / delta) / max(1, N_k))`; `r̃ = min(r_hi, r̂ + d_r)`. Under known
//! rewards `d_r = 0` and the table's `R(s, a, y)` enters the inner maximisation with the values.
//!
//! # Discounted extended value iteration
//! From `u = 0`: `u'(s) = max_a [r̃(s, a) + max_{p : ||p - p̂||_1 <= d_p} sum_y p(y) w(y)]` with
//! `w(y) = gamma u(y)` (plus `R(s, a, y)` under known rewards), until `max_s |u' - u|` falls
//! below `(1 - gamma) scale / sqrt(t_k)` (the average-reward span test of the paper has no
//! discounted counterpart; this bounds the values' error by `gamma scale / sqrt(t_k)`). The inner
//! maximisation is the paper's Figure 2: the best next state gets `min(1, p̂ + d_p / 2)` and the
//! excess is removed from the worst states first ([`inner_max`]). Greedy on the last backup's Q,
//! ties uniformly at random.

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType};
use super::tabular::{count_sweep, Experience, RewardModel, REWARDS};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "ucrl2",
    display: "UCRL2",
    params: &[
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.05)),
            range: "[1e-9, 0.5]",
            doc: "confidence parameter of the confidence sets",
        },
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    examples: &[
        Example { doc: "quick", params: &[] },
        Example {
            doc: "wider sets, learned rewards",
            params: &[("delta", ParamDefault::Float(0.01)), ("rewards", ParamDefault::Text("learned"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| Ok(Box::new(Ucrl2::new(r.float("delta")?, RewardModel::read(r)?)?)),
};

/// The most sweeps one extended value iteration runs (a guard: it converges geometrically).
const MAX_SWEEPS: usize = 100_000;

/// `max_{p : ||p - p̂||_1 <= d, p a distribution} sum_y p(y) w(y)` (Jaksch et al. 2010, Fig. 2):
/// the best next state gets `min(1, p̂ + d / 2)` and the mass it gains is taken from the worst
/// states first. Only the states of `p̂`'s support (`seen`, increasing) have mass to give, so only
/// they are sorted (into `order`, S entries): a row costs `O(S + k log k)` for a support of k
/// states rather than a sort of all S. Ties in `w` change which state gives, not the value.
pub fn inner_max(p_hat: &[f64], w: &[f64], d: f64, seen: &[u32], order: &mut [u32]) -> f64 {
    let mut best = 0;
    for (y, &value) in w.iter().enumerate() {
        if value > w[best] {
            best = y;
        }
    }
    let gain = (d / 2.0).min(1.0 - p_hat[best]).max(0.0);
    let mut value = gain * w[best];
    let mut givers = 0;
    for &y in seen {
        value += p_hat[y as usize] * w[y as usize];
        if y as usize != best {
            order[givers] = y;
            givers += 1;
        }
    }
    let order = &mut order[..givers];
    order.sort_unstable_by(|&a, &b| w[a as usize].total_cmp(&w[b as usize]).then(a.cmp(&b)));
    let mut excess = gain;
    for &y in order.iter() {
        if excess <= 0.0 {
            break;
        }
        let cut = p_hat[y as usize].min(excess);
        value -= cut * w[y as usize];
        excess -= cut;
    }
    value
}

/// UCRL2 (module doc).
#[derive(Clone, Debug)]
pub struct Ucrl2 {
    delta: f64,
    rewards: RewardModel,
    state: Option<Ucrl2State>,
}

#[derive(Clone, Debug)]
struct Ucrl2State {
    exp: Experience,
    gamma: f64,
    /// Steps observed in the task.
    t: usize,
    /// `N_k`, `p̂` and `r̂` of the current epoch, and the in-epoch counts.
    n_k: Vec<f64>,
    p_hat: Vec<f64>,
    r_hat: Vec<f64>,
    nu: Vec<f64>,
    u: Vec<f64>,
    u_next: Vec<f64>,
    q: Vec<f64>,
    order: Vec<u32>,
    w: Vec<f64>,
    epoch_due: bool,
    /// Epoch start steps `t_k`, for the tests (capacity reserved: no allocation per step).
    epochs: u64,
    last_epoch_start: usize,
}

impl Ucrl2 {
    pub fn new(delta: f64, rewards: RewardModel) -> Result<Self> {
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        Ok(Self { delta, rewards, state: None })
    }

    fn state(&mut self) -> Result<&mut Ucrl2State> {
        self.state.as_mut().ok_or_else(|| not_trained("UCRL2"))
    }

    /// Epochs started since the task start, and the step `t_k` of the last one.
    pub fn epochs(&self) -> (u64, usize) {
        self.state.as_ref().map_or((0, 0), |st| (st.epochs, st.last_epoch_start))
    }

    fn ensure_planned(&mut self) -> Result<&Ucrl2State> {
        let (delta, rewards) = (self.delta, self.rewards);
        let st = self.state()?;
        if st.epoch_due {
            st.new_epoch(delta, rewards);
        }
        Ok(st)
    }
}

impl Ucrl2State {
    fn new_epoch(&mut self, delta: f64, rewards: RewardModel) {
        let (ns, na) = (self.exp.n_states, self.exp.n_actions);
        let t_k = (self.t + 1) as f64;
        for row in 0..ns * na {
            let n = self.exp.visits(row);
            self.n_k[row] = n;
            let denominator = n.max(1.0);
            let counts = self.exp.counts_row(row);
            for (p, &c) in self.p_hat[row * ns..(row + 1) * ns].iter_mut().zip(counts) {
                *p = c / denominator;
            }
            self.r_hat[row] = self.exp.reward_sum(row) / denominator;
        }
        self.nu.fill(0.0);
        let scale = self.exp.scale();
        let (s, a) = (ns as f64, na as f64);
        let log_r = (2.0 * s * a * t_k / delta).ln();
        let log_p = (2.0 * a * t_k / delta).ln();
        let threshold = (1.0 - self.gamma) * scale / t_k.sqrt();
        self.u.fill(0.0);
        for _ in 0..MAX_SWEEPS {
            let mut change: f64 = 0.0;
            if rewards == RewardModel::Learned {
                // w = gamma u is the same for every row.
                for (w, &u) in self.w.iter_mut().zip(&self.u) {
                    *w = self.gamma * u;
                }
            }
            for st in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for act in 0..na {
                    let row = st * na + act;
                    let n = self.n_k[row].max(1.0);
                    let d_p = (14.0 * s * log_p / n).sqrt();
                    let p_hat = &self.p_hat[row * ns..(row + 1) * ns];
                    let value = match rewards {
                        RewardModel::Known => {
                            let known = self.exp.known_row(row);
                            for ((w, &r), &u) in self.w.iter_mut().zip(known).zip(&self.u) {
                                *w = r + self.gamma * u;
                            }
                            inner_max(p_hat, &self.w, d_p, self.exp.seen(row), &mut self.order)
                        }
                        RewardModel::Learned => {
                            let d_r = scale * (7.0 * log_r / (2.0 * n)).sqrt();
                            let r = (self.r_hat[row] + d_r).min(self.exp.r_hi);
                            r + inner_max(p_hat, &self.w, d_p, self.exp.seen(row), &mut self.order)
                        }
                    };
                    self.q[row] = value;
                    best = best.max(value);
                }
                change = change.max((best - self.u[st]).abs());
                self.u_next[st] = best;
            }
            count_sweep(ns * na, ns * na * ns);
            std::mem::swap(&mut self.u, &mut self.u_next);
            if change < threshold {
                break;
            }
        }
        self.epoch_due = false;
        self.epochs += 1;
        self.last_epoch_start = self.t + 1;
    }
}

impl Agent for Ucrl2 {
    fn name(&self) -> String {
        format!("UCRL2 (delta = {}{})", self.delta, self.rewards.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let exp = Experience::new(prior);
        let (ns, na) = (exp.n_states, exp.n_actions);
        self.state = Some(Ucrl2State {
            exp,
            gamma: setting.gamma,
            t: 0,
            n_k: vec![0.0; ns * na],
            p_hat: vec![0.0; ns * na * ns],
            r_hat: vec![0.0; ns * na],
            nu: vec![0.0; ns * na],
            u: vec![0.0; ns],
            u_next: vec![0.0; ns],
            q: vec![0.0; ns * na],
            order: (0..ns as u32).collect(),
            w: vec![0.0; ns],
            epoch_due: true,
            epochs: 0,
            last_epoch_start: 0,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.exp.clear();
        st.t = 0;
        st.epoch_due = true;
        st.epochs = 0;
        st.last_epoch_start = 0;
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let st = self.ensure_planned()?;
        let na = st.exp.n_actions;
        Ok(argmax_random_tie(&st.q[state * na..(state + 1) * na], rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        let row = t.state * st.exp.n_actions + t.action;
        st.exp.observe(&t);
        st.t += 1;
        st.nu[row] += 1.0;
        if st.nu[row] >= st.n_k[row].max(1.0) {
            st.epoch_due = true;
        }
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.ensure_planned()?;
        let na = st.exp.n_actions;
        greedy_probabilities(&st.q[state * na..(state + 1) * na], out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::baseline_test_support::learns_chain;
    use proptest::prelude::*;

    /// The maximum of `p . w` over the distributions within L1 distance d of p̂, by enumeration:
    /// every transfer of up to d / 2 of mass onto one state, taken from the others in every
    /// possible order (each a feasible distribution; the optimum, moving the most mass onto the
    /// best state from the worst ones, is among them).
    fn brute_force(p_hat: &[f64], w: &[f64], d: f64) -> f64 {
        fn permutations(items: Vec<usize>) -> Vec<Vec<usize>> {
            if items.len() <= 1 {
                return vec![items];
            }
            let mut out = Vec::new();
            for i in 0..items.len() {
                let mut rest = items.clone();
                let x = rest.remove(i);
                for mut p in permutations(rest) {
                    p.insert(0, x);
                    out.push(p);
                }
            }
            out
        }
        let n = p_hat.len();
        let mut best = f64::NEG_INFINITY;
        for gain in 0..n {
            let others: Vec<usize> = (0..n).filter(|&y| y != gain).collect();
            for loss_order in permutations(others) {
                // Move up to d / 2 of mass onto `gain`, taken in `loss_order`.
                let mut p = p_hat.to_vec();
                let mut budget = (d / 2.0).min(1.0 - p[gain]);
                p[gain] += budget;
                for &y in &loss_order {
                    let cut = p[y].min(budget);
                    p[y] -= cut;
                    budget -= cut;
                }
                best = best.max(p.iter().zip(w).map(|(p, w)| p * w).sum());
            }
        }
        best
    }

    proptest! {
        #[test]
        fn inner_maximisation_matches_enumeration(
            raw in proptest::collection::vec(0.0f64..1.0, 2..6),
            zeros in proptest::collection::vec(proptest::bool::ANY, 6),
            w in proptest::collection::vec(-5.0f64..5.0, 6),
            d in 0.0f64..2.5,
        ) {
            // Some states outside the support (p̂ = 0), at least one inside.
            let mut raw = raw.clone();
            for (x, &zero) in raw.iter_mut().zip(&zeros).skip(1) {
                if zero {
                    *x = 0.0;
                }
            }
            raw[0] += 1e-3;
            let total: f64 = raw.iter().sum();
            let p_hat: Vec<f64> = raw.iter().map(|x| x / total).collect();
            let w = &w[..p_hat.len()];
            let seen: Vec<u32> = (0..p_hat.len() as u32).filter(|&y| p_hat[y as usize] > 0.0).collect();
            let mut order = vec![0u32; p_hat.len()];
            let got = inner_max(&p_hat, w, d, &seen, &mut order);
            let expected = brute_force(&p_hat, w, d);
            prop_assert!((got - expected).abs() < 1e-9, "{} vs {}", got, expected);
            // Never below the plain expectation under p̂ (p̂ itself is feasible).
            let plain: f64 = p_hat.iter().zip(w).map(|(p, w)| p * w).sum();
            prop_assert!(got >= plain - 1e-12);
        }
    }

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn epochs_double_the_counts() {
        // One state, one action: every step visits the same pair, so epoch k ends when the
        // count doubles: epochs start at steps 1, 2, 3, 5, 9, 17, ...
        let prior = Fdm::new(1, 1, vec![1.0], vec![0.5], Some(0)).unwrap();
        let mut agent = Ucrl2::new(0.05, RewardModel::Known).unwrap();
        let setting = Setting { gamma: 0.9, horizon: 40 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        let mut starts = Vec::new();
        for _ in 0..40 {
            agent.act(0, &mut rng).unwrap();
            let (k, t_k) = agent.epochs();
            if starts.len() < k as usize {
                starts.push(t_k);
            }
            agent.observe(Transition { state: 0, action: 0, reward: 0.5, next_state: 0 }, &mut rng).unwrap();
        }
        assert_eq!(starts, vec![1, 2, 3, 5, 9, 17, 33]);
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(&mut Ucrl2::new(0.05, RewardModel::Known).unwrap(), 1500);
        learns_chain(&mut Ucrl2::new(0.05, RewardModel::Learned).unwrap(), 4000);
    }
}
