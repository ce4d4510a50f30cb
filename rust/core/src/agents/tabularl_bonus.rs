//! TabulaRL's bonus planners: the one machine behind its `BEB`, `UCBVI` and `GaussianPSRL`
//! (three subclasses there that differ only in the bonus they add), offered as the
//! `reference = "tabularl"` setting of BEB and UCBVI and the `reference = "tabularl-gaussian"`
//! setting of PSRL (docs/baselines.md, Reference settings). None of the three is its paper's
//! algorithm; they are here for side-by-side checks against that code.
//!
//! # Model
//! A MAP model, re-estimated at every plan: `P̂(y | s, a) = (alpha(s, a, y) + n(s, a, y)) /
//! (sum_y alpha(s, a, y) + n(s, a))`, with `alpha` the Dirichlet pseudo-counts (the prior's own
//! for BEB and PSRL, `1` on every next state for UCBVI, TabulaRL's `alpha0 = 1`), and the
//! posterior mean reward `r̂ = sum r / (1 + n_r)` of a Gaussian model with prior `N(0, 1)` and
//! unit noise (TabulaRL's `mu0 = 0`, `tau0 = tau = 1`; on rewards rescaled to [0, 1], see
//! [`Experience::reward_posterior`]). As in TabulaRL, the transition of an episode's (a block's)
//! last step is not counted in `n(s, a, ·)`, while its reward is counted in `n_r`.
//!
//! # Plan: once per episode, H stages, no clipping
//! With `tau = 1 + n_r(s, a)` and `m = sum_y alpha(s, a, y) + n(s, a)`, each pair gets a reward
//! bonus `b_r` and a transition bonus `b_p`, in units of the reward range (`scale`):
//! * BEB: `b_r = scale / (1 + tau)`, `b_p = beta H scale / (1 + m)` (TabulaRL's `beta = 2 H^2`);
//! * UCBVI: `b_r = c scale sqrt(2 ln(2 + k) / tau)`, `b_p = c scale sqrt(2 ln(2 + k) / m)`, k the
//!   1-based plan index (TabulaRL's episode index);
//! * Gaussian: `b_r = scale xi_r / sqrt(tau)`, `b_p = scale xi_p / sqrt(m)`, two standard normal
//!   draws per pair and plan (reward first), shared by every stage.
//!
//! Backward induction from `V_H = 0`: `Q_h(s, a) = r̂ + b_r + gamma P̂ V_{h+1} + b_p (H - 1 - h)`
//! (the transition bonus once per step left after this one), `V_h = max_a Q_h`; no clipping.
//! Greedy on `Q_h` at the episode's step h, ties uniformly at random.
//!
//! # Schedule
//! H is `plan_horizon` when given; else, once the protocol starts episodes
//! ([`Agent::start_episode`]), the episode length (the setting's horizon), and in the continuing
//! protocol the block of `ceil(1 / (1 - gamma))` steps (never longer than the task).
//!
//! # Randomness
//! The Gaussian draws come from a private stream seeded at every task start
//! ([`planning_stream`]), so a plan made by `action_probabilities` is the plan `act` would make.

use rand::Rng as _;
use rand_distr::StandardNormal;

use super::common::{argmax_random_tie, greedy_probabilities};
use super::tabular::{block_length, count_sweep, episode_length, planning_stream, staged_memory, Blocks, Experience};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The bonus that tells TabulaRL's three planners apart (module doc).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TabularlBonus {
    /// `BEB`, with TabulaRL's `beta` (its default `2 H^2`).
    Beb { beta: f64 },
    /// `UCBVI`, with its `scaling`.
    Ucbvi { scaling: f64 },
    /// `GaussianPSRL`.
    Gaussian,
}

/// Where the Dirichlet pseudo-counts `alpha` come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TabularlPrior {
    /// The prior the agent learns offline from (its theta).
    Given,
    /// `alpha0` on every next state, whatever the prior.
    Uniform(f64),
}

/// TabulaRL's bonus planner (module doc).
#[derive(Clone, Debug)]
pub struct TabularlPlanner {
    /// The agent it stands for, for its name ("BEB", "UCBVI", "PSRL").
    display: &'static str,
    bonus: TabularlBonus,
    prior: TabularlPrior,
    /// 0: the episode length (module doc).
    plan_horizon: usize,
    state: Option<PlannerState>,
}

#[derive(Clone, Debug)]
struct PlannerState {
    exp: Experience,
    /// `alpha(s, a, y)`, `(s * A + a) * S + y`.
    alpha: Vec<f64>,
    /// `sum_y alpha(s, a, y)`.
    alpha_sums: Vec<f64>,
    /// The value `c` of a row whose pseudo-counts are `c` on every next state (NaN otherwise):
    /// its prior term of `P̂ V` is then `c sum_y V(y)`, one sum per stage.
    alpha_flat: Vec<f64>,
    gamma: f64,
    /// The setting's horizon (in episodes, their length).
    horizon: usize,
    episodic: bool,
    blocks: Blocks,
    /// `Q_h(s, a)`, `(h * S + s) * A + a`.
    q: Vec<f64>,
    /// `V_h(s)`, `h <= H`.
    v: Vec<f64>,
    r_bonus: Vec<f64>,
    p_bonus: Vec<f64>,
    rng: Rng,
    plans: u64,
}

impl TabularlPlanner {
    pub fn new(display: &'static str, bonus: TabularlBonus, prior: TabularlPrior, plan_horizon: usize) -> Self {
        Self { display, bonus, prior, plan_horizon, state: None }
    }

    fn state(&mut self) -> Result<&mut PlannerState> {
        if self.state.is_none() {
            return Err(not_trained(self.display));
        }
        Ok(self.state.as_mut().expect("checked above"))
    }

    /// The plans made since the task started.
    #[cfg(test)]
    fn plans(&self) -> u64 {
        self.state.as_ref().map_or(0, |st| st.plans)
    }

    /// Each pair's bonuses for the next plan (module doc).
    fn bonuses(bonus: TabularlBonus, st: &mut PlannerState) {
        let scale = st.exp.scale();
        let big_h = st.blocks.length as f64;
        let k = (st.plans + 1) as f64;
        for row in 0..st.r_bonus.len() {
            let tau = 1.0 + st.exp.reward_visits(row);
            let m = st.alpha_sums[row] + st.exp.visits(row);
            let (r, p) = match bonus {
                TabularlBonus::Beb { beta } => (1.0 / (1.0 + tau), beta * big_h / (1.0 + m)),
                TabularlBonus::Ucbvi { scaling } => {
                    let log = 2.0 * (2.0 + k).ln();
                    (scaling * (log / tau).sqrt(), scaling * (log / m).sqrt())
                }
                TabularlBonus::Gaussian => {
                    let xi_r: f64 = st.rng.sample(StandardNormal);
                    let xi_p: f64 = st.rng.sample(StandardNormal);
                    (xi_r / tau.sqrt(), xi_p / m.sqrt())
                }
            };
            st.r_bonus[row] = scale * r;
            st.p_bonus[row] = scale * p;
        }
    }

    /// The H-stage backward induction of an episode (a block) start.
    fn plan(&mut self) -> Result<()> {
        let bonus = self.bonus;
        let st = self.state()?;
        Self::bonuses(bonus, st);
        let (ns, na, len) = (st.exp.n_states, st.exp.n_actions, st.blocks.length);
        st.v[len * ns..].fill(0.0);
        for h in (0..len).rev() {
            let steps_left = (len - 1 - h) as f64;
            let (head, tail) = st.v.split_at_mut((h + 1) * ns);
            let (v_h, v_next) = (&mut head[h * ns..], &tail[..ns]);
            let sum_next: f64 = v_next.iter().sum();
            let mut entries = 0;
            for (s, v_s) in v_h.iter_mut().enumerate() {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let flat = st.alpha_flat[row];
                    let mut weighted = if flat.is_nan() {
                        entries += ns;
                        st.alpha[row * ns..(row + 1) * ns].iter().zip(v_next).map(|(c, v)| c * v).sum()
                    } else {
                        flat * sum_next
                    };
                    let counts = st.exp.counts_row(row);
                    for &y in st.exp.seen(row) {
                        weighted += counts[y as usize] * v_next[y as usize];
                    }
                    entries += st.exp.seen(row).len();
                    let next = weighted / (st.alpha_sums[row] + st.exp.visits(row));
                    let (reward, _) = st.exp.reward_posterior(row);
                    let value = reward + st.r_bonus[row] + st.gamma * next + st.p_bonus[row] * steps_left;
                    st.q[(h * ns + s) * na + a] = value;
                    best = best.max(value);
                }
                *v_s = best;
            }
            count_sweep(ns * na, entries + ns);
        }
        st.blocks.due = false;
        st.plans += 1;
        Ok(())
    }

    fn ensure_planned(&mut self) -> Result<&PlannerState> {
        if self.state()?.blocks.due {
            self.plan()?;
        }
        Ok(self.state.as_ref().expect("planned"))
    }

    fn q_row(st: &PlannerState, state: usize) -> &[f64] {
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        let start = (st.blocks.stage * ns + state) * na;
        &st.q[start..start + na]
    }

    /// Sizes the tables for blocks of `length` steps (allocates only when the length changes).
    fn resize(st: &mut PlannerState, length: usize) {
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        if st.blocks.length != length || st.q.len() != length * ns * na {
            st.blocks = Blocks::new(length);
            st.q = vec![0.0; length * ns * na];
            st.v = vec![0.0; (length + 1) * ns];
        }
        st.blocks.restart();
    }

    /// The block length of the continuing protocol.
    fn continuing_length(&self, setting: Setting) -> usize {
        if self.plan_horizon > 0 {
            self.plan_horizon
        } else {
            block_length(0, setting.gamma).min(setting.horizon.max(1))
        }
    }
}

impl Agent for TabularlPlanner {
    fn name(&self) -> String {
        let what = match self.bonus {
            TabularlBonus::Beb { beta } => format!("TabulaRL's BEB, beta = {beta}"),
            TabularlBonus::Ucbvi { scaling } => format!("TabulaRL's UCBVI, c = {scaling}"),
            TabularlBonus::Gaussian => "TabulaRL's GaussianPSRL".to_string(),
        };
        let h = if self.plan_horizon == 0 { "episode".to_string() } else { self.plan_horizon.to_string() };
        format!("{} ({what}, H = {h})", self.display)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let (ns, na) = (prior.n_states(), prior.n_actions());
        let alpha = match self.prior {
            TabularlPrior::Given => prior.theta().to_vec(),
            TabularlPrior::Uniform(alpha0) => vec![alpha0; ns * na * ns],
        };
        let rows: Vec<&[f64]> = alpha.chunks(ns).collect();
        let alpha_sums = rows.iter().map(|r| r.iter().sum()).collect();
        let alpha_flat = rows.iter().map(|r| if r.iter().all(|&c| c == r[0]) { r[0] } else { f64::NAN }).collect();
        let length = self.continuing_length(setting);
        self.state = Some(PlannerState {
            exp: Experience::new(prior),
            alpha,
            alpha_sums,
            alpha_flat,
            gamma: setting.gamma,
            horizon: setting.horizon,
            episodic: false,
            blocks: Blocks::new(length),
            q: vec![0.0; length * ns * na],
            v: vec![0.0; (length + 1) * ns],
            r_bonus: vec![0.0; ns * na],
            p_bonus: vec![0.0; ns * na],
            rng: planning_stream(&mut crate::rng::stream(0, 0, 0)),
            plans: 0,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, rng: &mut Rng) -> Result<()> {
        let length = self.continuing_length(context.setting);
        let st = self.state()?;
        st.gamma = context.setting.gamma;
        st.horizon = context.setting.horizon;
        st.episodic = false;
        st.exp.clear();
        st.plans = 0;
        st.rng = planning_stream(rng);
        Self::resize(st, length);
        Ok(())
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let plan_horizon = self.plan_horizon;
        let st = self.state()?;
        if !st.episodic {
            st.episodic = true;
            let length = episode_length(plan_horizon, st.horizon);
            Self::resize(st, length);
        }
        st.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let st = self.ensure_planned()?;
        Ok(argmax_random_tie(Self::q_row(st, state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        // TabulaRL counts the last step's reward, not its transition (module doc).
        if st.blocks.stage + 1 == st.blocks.length {
            st.exp.observe_reward_only(&t);
        } else {
            st.exp.observe(&t);
        }
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let st = self.ensure_planned()?;
        greedy_probabilities(Self::q_row(st, state), out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only copies the pseudo-counts and sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        let bytes = staged_memory(2, self.plan_horizon, n_states, n_actions, setting);
        MemoryNeed { bytes, sized_by: "stage tables (parameter plan_horizon, or the horizon when it is 0)" }
    }

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
    use crate::agents::baseline_test_support::{deterministic_chain, learns_chain};

    const H: usize = 3;

    /// A planner on the 5-state chain (prior Dir(1)), in episodes of `H` steps, one episode started.
    fn planner(bonus: TabularlBonus, prior: TabularlPrior) -> TabularlPlanner {
        let mut agent = TabularlPlanner::new("test", bonus, prior, 0);
        let (_, fdm) = deterministic_chain();
        let setting = Setting { gamma: 1.0, horizon: H };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&fdm, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent.start_episode(0, &mut rng).unwrap();
        agent
    }

    fn step(agent: &mut TabularlPlanner, s: usize, a: usize, reward: f64, y: usize) {
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
    }

    #[test]
    fn last_step_counts_the_reward_not_the_transition() {
        let mut agent = planner(TabularlBonus::Beb { beta: 2.0 }, TabularlPrior::Given);
        for _ in 0..H {
            step(&mut agent, 0, 1, 0.5, 1);
        }
        let st = agent.state.as_ref().unwrap();
        assert_eq!(st.exp.visits(1), (H - 1) as f64);
        assert_eq!(st.exp.reward_visits(1), H as f64);
        assert_eq!(st.exp.counts_row(1)[1], (H - 1) as f64);
        // TabulaRL's posterior mean reward: sum r / (1 + n_r).
        assert!((st.exp.reward_posterior(1).0 - 1.5 / 4.0).abs() < 1e-15);
    }

    #[test]
    fn beb_plan_at_known_counts() {
        let beta = 2.0 * (H * H) as f64;
        let mut agent = planner(TabularlBonus::Beb { beta }, TabularlPrior::Given);
        // One episode: (0, 1) -> 1, (1, 1) -> 2 counted, (2, 1) -> 3 reward only.
        step(&mut agent, 0, 1, 0.0, 1);
        step(&mut agent, 1, 1, 0.0, 2);
        step(&mut agent, 2, 1, 0.0, 3);
        agent.start_episode(0, &mut crate::rng::stream(0, 0, 0)).unwrap();
        agent.act(0, &mut crate::rng::stream(0, 0, 0)).unwrap();
        let st = agent.state.as_ref().unwrap();
        let (ns, na) = (5, 2);
        let q = |h: usize, s: usize, a: usize| st.q[(h * ns + s) * na + a];
        let big_h = H as f64;
        // Last stage: r̂ + 1 / (1 + tau), no transition bonus (no step left).
        assert!((q(2, 0, 0) - 1.0 / 2.0).abs() < 1e-12);
        assert!((q(2, 2, 1) - 1.0 / 3.0).abs() < 1e-12, "{}", q(2, 2, 1));
        // Stage 1, (0, 0) unvisited: uniform P̂ over V_2 = (0.5, 0.5, 0.5, 0.5, 0.5), plus one step's bonus.
        let v2 = [0.5, 0.5, 0.5, 0.5, 0.5];
        let b_unvisited = beta * big_h / (1.0 + 5.0);
        assert!((q(1, 0, 0) - (0.5 + v2[0] + b_unvisited)).abs() < 1e-9);
        // Stage 1, (0, 1) seen once to 1: P̂ = (1, 2, 1, 1, 1) / 6, m = 6, tau = 2.
        let v2_1 = [0.5, 0.5, 0.5, 0.5, 0.5];
        let next: f64 = [1.0, 2.0, 1.0, 1.0, 1.0].iter().zip(v2_1).map(|(c, v)| c * v).sum::<f64>() / 6.0;
        let expected = 1.0 / 3.0 + next + beta * big_h / 7.0;
        assert!((q(1, 0, 1) - expected).abs() < 1e-9, "{} {expected}", q(1, 0, 1));
        // (2, 1): its last-step transition uncounted, so m = 5 while tau = 2.
        let expected = 1.0 / 3.0 + 0.5 + beta * big_h / 6.0;
        assert!((q(1, 2, 1) - expected).abs() < 1e-9, "{} {expected}", q(1, 2, 1));
        // Stage 0 adds two steps' transition bonus.
        let v1: Vec<f64> = (0..ns).map(|s| q(1, s, 0).max(q(1, s, 1))).collect();
        let next: f64 = (v1.iter().sum::<f64>() + v1[1]) / 6.0;
        let expected = 1.0 / 3.0 + next + 2.0 * beta * big_h / 7.0;
        assert!((q(0, 0, 1) - expected).abs() < 1e-9, "{} {expected}", q(0, 0, 1));
    }

    #[test]
    fn ucbvi_bonus_at_known_counts_grows_with_the_episode_index() {
        let mut agent = planner(TabularlBonus::Ucbvi { scaling: 0.5 }, TabularlPrior::Uniform(1.0));
        step(&mut agent, 0, 1, 1.0, 1);
        step(&mut agent, 0, 1, 0.0, 1);
        let st = agent.state.as_mut().unwrap();
        st.plans = 3; // the 4th episode
        TabularlPlanner::bonuses(TabularlBonus::Ucbvi { scaling: 0.5 }, st);
        let log = 2.0 * (2.0f64 + 4.0).ln();
        // (0, 1): tau = 1 + 2, m = 5 + 2.
        assert!((st.r_bonus[1] - 0.5 * (log / 3.0).sqrt()).abs() < 1e-15);
        assert!((st.p_bonus[1] - 0.5 * (log / 7.0).sqrt()).abs() < 1e-15);
        // Unvisited: tau = 1, m = S.
        assert!((st.r_bonus[0] - 0.5 * log.sqrt()).abs() < 1e-15);
        assert!((st.p_bonus[0] - 0.5 * (log / 5.0).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn gaussian_bonus_is_two_normal_draws_per_pair_scaled_by_the_counts() {
        let mut agent = planner(TabularlBonus::Gaussian, TabularlPrior::Given);
        for _ in 0..2 {
            step(&mut agent, 3, 0, 0.0, 0);
        }
        let st = agent.state.as_mut().unwrap();
        let mut draws = st.rng.clone();
        TabularlPlanner::bonuses(TabularlBonus::Gaussian, st);
        for row in 0..10 {
            let xi_r: f64 = draws.sample(StandardNormal);
            let xi_p: f64 = draws.sample(StandardNormal);
            let (tau, m) = if row == 6 { (3.0f64, 7.0f64) } else { (1.0, 5.0) };
            assert!((st.r_bonus[row] - xi_r / tau.sqrt()).abs() < 1e-15, "row {row}");
            assert!((st.p_bonus[row] - xi_p / m.sqrt()).abs() < 1e-15, "row {row}");
        }
    }

    #[test]
    fn plans_once_per_episode_and_sizes_to_the_episode() {
        let mut agent = planner(TabularlBonus::Ucbvi { scaling: 1.0 }, TabularlPrior::Uniform(1.0));
        let mut rng = crate::rng::stream(1, 0, 0);
        for _ in 0..4 {
            agent.start_episode(0, &mut rng).unwrap();
            for _ in 0..H {
                let a = agent.act(0, &mut rng).unwrap();
                step(&mut agent, 0, a, 0.0, 0);
            }
        }
        assert_eq!(agent.plans(), 4);
        assert_eq!(agent.state.as_ref().unwrap().q.len(), H * 5 * 2);
    }

    #[test]
    fn learns_the_chain_with_small_bonuses() {
        learns_chain(
            &mut TabularlPlanner::new("test", TabularlBonus::Ucbvi { scaling: 0.05 }, TabularlPrior::Uniform(1.0), 10),
            3000,
        );
        learns_chain(
            &mut TabularlPlanner::new("test", TabularlBonus::Beb { beta: 0.01 }, TabularlPrior::Given, 10),
            3000,
        );
    }
}
