//! UCBVI (Azar, Osband & Munos 2017, Algorithms 1-3), run in blocks of H steps
//! (docs/baselines.md).
//!
//! At each block start, a backward induction over the H stages of the block, with `V_H = 0`:
//! for a visited pair, `Q_h(s, a) = min(Q'_h(s, a), v_max(h), r̂(s, a) + gamma P̂ V_{h+1}(s, a) + b_h(s, a))`,
//! where `Q'` is the previous plan's Q (Q never increases from plan to plan) and
//! `v_max(h) = r_hi sum_{k < H - h} gamma^k`; an unvisited pair has `Q_h = v_max(h)`.
//! `V_h = max_a Q_h`. With `N = n(s, a)`, `L = ln(5 S A T / delta)`, `scale` the width of the
//! reward range (the paper's rewards in [0, 1], on the original scale):
//! * Hoeffding (UCBVI-CH): `b = c 7 H L scale / sqrt(N)`;
//! * Bernstein-Freedman (UCBVI-BF):
//!   `b = c [ sqrt(8 L Var_{P̂}(gamma V_{h+1}) / N) + 14 H L scale / (3 N)
//!   + sqrt(8 sum_y P̂(y) min(10^4 H^3 S^2 A L^2 scale^2 / N'_{h+1}(y), H^2 scale^2) / N) ]`,
//!   with `N'_{h+1}(y)` the visits of y at stage h + 1 (the last term is 0 at the last stage,
//!   where `V_H = 0` carries no estimation error).
//!
//! Under known rewards `r̂ = sum_y P̂(y) R(s, a, y)`; under learned rewards the observed mean,
//! with the same bonus (its transition term already exceeds a reward confidence width).
//!
//! `reference = "rlberry"` is rlberry's `UCBVIAgent` instead (docs/baselines.md, "Reference
//! settings"): the bonus `b = min(c scale / sqrt(N) + v_max(h) / N, v_max(h))`, stored per stage
//! and refreshed only at the stage where the pair was just visited (the others keep the bonus they
//! had, `v_max(h)` until the first visit at that stage); an unvisited pair plans on a uniform
//! `P̂` and the reward that goes with it (0 under learned rewards); `Q_h = r̂ + b_h + gamma P̂ V_{h+1}`
//! without the paper's `min` with the previous plan or with `v_max(h)`, and `V_h = min(max_a Q_h,
//! v_max(0))`; before the first observation Q is 0 (rlberry plans after each episode).

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use super::tabular::{
    count_sweep, discounted_steps, plan_length, rlberry_bonus, staged_memory, Blocks, Experience, Reference,
    RewardModel, PLAN_HORIZON, REWARDS,
};
use super::tabularl_bonus::{TabularlBonus, TabularlPlanner, TabularlPrior};
use crate::agent::{not_trained, Agent, MemoryNeed, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "ucbvi",
    display: "UCBVI",
    params: &[
        ParamSpec {
            name: "bonus",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("hoeffding")),
            range: Range::Choices(&["hoeffding", "bernstein"]),
            doc: "UCBVI-CH's Hoeffding bonus or UCBVI-BF's Bernstein-Freedman bonus",
        },
        ParamSpec {
            name: "c",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(1.0)),
            range: Range::at_least(0.0),
            doc: "multiplies the bonus (1: the paper's constants)",
        },
        ParamSpec {
            name: "delta",
            ty: ParamType::Float,
            default: Some(ParamDefault::Float(0.1)),
            range: Range::between(1e-9, 0.5),
            doc: "confidence parameter, in L = ln(5 S A T / delta)",
        },
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: Range::Choices(&["paper", "rlberry", "tabularl"]),
            doc: "paper: Azar et al.'s algorithm; rlberry: rlberry's UCBVIAgent (its bonus c / sqrt(N) + v_max(h) / N \
                  refreshed at the visited stage only, no clipping of Q; bonus must stay hoeffding, delta is unused); \
                  tabularl: TabulaRL's UCBVI (a MAP model, its bonus c sqrt(2 ln(2 + k) / n) on rewards and per step \
                  left on transitions, no clipping; needs rewards = learned, bonus must stay hoeffding, delta is unused)",
        },
        PLAN_HORIZON,
        REWARDS,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &["plan_horizon"],
    examples: &[
        Example { doc: "quick: the Hoeffding bonus", params: &[] },
        Example {
            doc: "the Bernstein bonus scaled down, short blocks, learned rewards",
            params: &[
                ("bonus", ParamDefault::Text("bernstein")),
                ("c", ParamDefault::Float(0.05)),
                ("delta", ParamDefault::Float(0.05)),
                ("plan_horizon", ParamDefault::Int(5)),
                ("rewards", ParamDefault::Text("learned")),
            ],
        },
        Example {
            doc: "rlberry's UCBVIAgent (its default bonus scale), learned rewards",
            params: &[("reference", ParamDefault::Text("rlberry")), ("rewards", ParamDefault::Text("learned"))],
        },
        Example {
            doc: "TabulaRL's UCBVI (learned rewards, one plan per episode)",
            params: &[("reference", ParamDefault::Text("tabularl")), ("rewards", ParamDefault::Text("learned"))],
        },
    ],
    not_in_quick: None,
    // An exploration baseline of the regret study (bbrl regret-study).
    episodic_baseline: true,
    build: |r| {
        let bonus = match r.text("bonus")? {
            "hoeffding" => Bonus::Hoeffding,
            "bernstein" => Bonus::Bernstein,
            other => return Err(invalid!("bonus must be \"hoeffding\" or \"bernstein\", got {other:?}")),
        };
        let text = r.text("reference")?;
        if text == "tabularl" {
            return tabularl(r, bonus);
        }
        let reference = Reference::read(text)
            .map_err(|_| invalid!("reference must be \"paper\", \"rlberry\" or \"tabularl\", got {text:?}"))?;
        if reference == Reference::Rlberry && bonus == Bonus::Bernstein {
            return Err(invalid!(
                "bonus = \"bernstein\" does not apply with reference = \"rlberry\" (rlberry's UCBVI has its own bonus)"
            ));
        }
        Ok(Box::new(
            Ucbvi::new(bonus, r.float("c")?, r.float("delta")?, r.count("plan_horizon")?, RewardModel::read(r)?)?
                .with_reference(reference),
        ))
    },
};

/// `reference = "tabularl"`: TabulaRL's `UCBVI`, a different planner ([`super::tabularl_bonus`])
/// whose bonus scale is `c` (TabulaRL's `scaling`) and whose `H` is `plan_horizon` (0: the episode).
fn tabularl(r: &super::spec::Reader<'_>, bonus: Bonus) -> Result<Box<dyn Agent>> {
    if bonus == Bonus::Bernstein {
        return Err(invalid!(
            "bonus = \"bernstein\" does not apply with reference = \"tabularl\" (TabulaRL's UCBVI has its own bonus)"
        ));
    }
    if RewardModel::read(r)? != RewardModel::Learned {
        return Err(invalid!(
            "reference = \"tabularl\" learns the rewards as TabulaRL does: it needs rewards = \"learned\""
        ));
    }
    // Checked as the paper's c, delta and plan_horizon are.
    let agent = Ucbvi::new(bonus, r.float("c")?, r.float("delta")?, r.count("plan_horizon")?, RewardModel::Learned)?;
    let prior = TabularlPrior::Uniform(1.0);
    Ok(Box::new(TabularlPlanner::new("UCBVI", TabularlBonus::Ucbvi { scaling: agent.c }, prior, agent.plan_horizon)))
}

/// The bonus of UCBVI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bonus {
    Hoeffding,
    Bernstein,
}

/// UCBVI (module doc).
#[derive(Clone, Debug)]
pub struct Ucbvi {
    bonus: Bonus,
    reference: Reference,
    c: f64,
    delta: f64,
    plan_horizon: usize,
    rewards: RewardModel,
    state: Option<UcbviState>,
}

#[derive(Clone, Debug)]
struct UcbviState {
    exp: Experience,
    gamma: f64,
    steps: usize,
    blocks: Blocks,
    /// `Q_h(s, a)` of the current plan and of the previous one, `(h * S + s) * A + a`.
    q: Vec<f64>,
    q_previous: Vec<f64>,
    /// `V_h(s)`, `h <= H`.
    v: Vec<f64>,
    /// `N'_h(s)`: visits of s at stage h.
    stage_visits: Vec<f64>,
    v_max: Vec<f64>,
    /// rlberry's per-stage bonus table `B_h(s, a)` (reference = rlberry only), `(h * S + s) * A + a`.
    stage_bonus: Vec<f64>,
    plans: u64,
    /// Whether the protocol starts episodes (the plan then spans the episode: [`plan_length`]).
    episodic: bool,
}

impl Ucbvi {
    pub fn new(bonus: Bonus, c: f64, delta: f64, plan_horizon: usize, rewards: RewardModel) -> Result<Self> {
        if !(c.is_finite() && c >= 0.0) {
            return Err(invalid!("c must be a finite number >= 0, got {c}"));
        }
        if !(1e-9..=0.5).contains(&delta) {
            return Err(invalid!("delta must be in [1e-9, 0.5], got {delta}"));
        }
        Ok(Self { bonus, reference: Reference::Paper, c, delta, plan_horizon, rewards, state: None })
    }

    /// The same agent running `reference`'s algorithm.
    pub fn with_reference(mut self, reference: Reference) -> Self {
        self.reference = reference;
        self
    }

    fn state(&mut self) -> Result<&mut UcbviState> {
        self.state.as_mut().ok_or_else(|| not_trained("UCBVI"))
    }

    /// The bonus of a pair visited `n > 0` times at stage `h`, with the next stage's values
    /// `v_next` and the pair's row (the Bernstein terms read them).
    fn bonus_of(&self, st: &UcbviState, h: usize, row: usize, v_next: &[f64]) -> f64 {
        let exp = &st.exp;
        let (ns, na) = (exp.n_states as f64, exp.n_actions as f64);
        let big_h = st.blocks.length as f64;
        let n = exp.visits(row);
        let l = (5.0 * ns * na * st.steps as f64 / self.delta).ln();
        let scale = exp.scale();
        match self.bonus {
            Bonus::Hoeffding => self.c * 7.0 * big_h * l * scale / n.sqrt(),
            Bonus::Bernstein => {
                let counts = exp.counts_row(row);
                let (mut mean, mut square) = (0.0, 0.0);
                for &y in exp.seen(row) {
                    let (p, x) = (counts[y as usize] / n, st.gamma * v_next[y as usize]);
                    mean += p * x;
                    square += p * x * x;
                }
                let variance = (square - mean * mean).max(0.0);
                let mut correction = 0.0;
                if h + 1 < st.blocks.length {
                    let cap = big_h * big_h * scale * scale;
                    let numerator = 1e4 * big_h.powi(3) * ns * ns * na * l * l * scale * scale;
                    let visits = &st.stage_visits[(h + 1) * exp.n_states..(h + 2) * exp.n_states];
                    for &y in exp.seen(row) {
                        let n_y = visits[y as usize];
                        let term = if n_y > 0.0 { (numerator / n_y).min(cap) } else { cap };
                        correction += counts[y as usize] / n * term;
                    }
                }
                self.c
                    * ((8.0 * l * variance / n).sqrt()
                        + 14.0 * big_h * l * scale / (3.0 * n)
                        + (8.0 * correction / n).sqrt())
            }
        }
    }

    /// rlberry's backward induction (module doc): no clipping of Q, V clipped at `v_max(0)`, an
    /// unvisited pair planned on a uniform `P̂`.
    fn plan_rlberry(&mut self) -> Result<()> {
        let rewards = self.rewards;
        let mut st = self.state.take().ok_or_else(|| not_trained("UCBVI"))?;
        let (ns, na, len) = (st.exp.n_states, st.exp.n_actions, st.blocks.length);
        if st.plans == 0 && (0..ns * na).all(|row| st.exp.visits(row) == 0.0) {
            // rlberry plans after each episode: its first episode acts on Q = 0.
            st.q.fill(0.0);
        } else {
            st.v[len * ns..].fill(0.0);
            let cap = st.v_max[0];
            for h in (0..len).rev() {
                let mut entries = 0;
                let (head, tail) = st.v.split_at_mut((h + 1) * ns);
                let (v_h, v_next) = (&mut head[h * ns..], &tail[..ns]);
                let uniform_next = v_next.iter().sum::<f64>() / ns as f64;
                for s in 0..ns {
                    let mut best = f64::NEG_INFINITY;
                    for a in 0..na {
                        let row = s * na + a;
                        let i = h * ns * na + row;
                        let n = st.exp.visits(row);
                        let (reward, next) = if n == 0.0 {
                            entries += ns;
                            let reward = match rewards {
                                RewardModel::Known => st.exp.known_row(row).iter().sum::<f64>() / ns as f64,
                                RewardModel::Learned => 0.0,
                            };
                            (reward, uniform_next)
                        } else {
                            let counts = st.exp.counts_row(row);
                            let mut next = 0.0;
                            for &y in st.exp.seen(row) {
                                next += counts[y as usize] / n * v_next[y as usize];
                            }
                            entries += st.exp.seen(row).len();
                            (st.exp.empirical_reward(row, rewards), next)
                        };
                        let value = reward + st.stage_bonus[i] + st.gamma * next;
                        st.q[i] = value;
                        best = best.max(value);
                    }
                    v_h[s] = best.min(cap);
                }
                count_sweep(ns * na, entries);
            }
        }
        st.blocks.due = false;
        st.plans += 1;
        self.state = Some(st);
        Ok(())
    }

    /// The backward induction of a block start.
    fn plan(&mut self) -> Result<()> {
        if self.reference == Reference::Rlberry {
            return self.plan_rlberry();
        }
        let rewards = self.rewards;
        let mut st = self.state.take().ok_or_else(|| not_trained("UCBVI"))?;
        let (ns, na, len) = (st.exp.n_states, st.exp.n_actions, st.blocks.length);
        st.v[len * ns..].fill(0.0);
        for h in (0..len).rev() {
            let mut entries = 0;
            for s in 0..ns {
                let mut best = f64::NEG_INFINITY;
                for a in 0..na {
                    let row = s * na + a;
                    let i = h * ns * na + row;
                    let n = st.exp.visits(row);
                    let value = if n == 0.0 {
                        st.v_max[h]
                    } else {
                        let v_next = &st.v[(h + 1) * ns..(h + 2) * ns];
                        let counts = st.exp.counts_row(row);
                        let mut next = 0.0;
                        for &y in st.exp.seen(row) {
                            next += counts[y as usize] / n * v_next[y as usize];
                        }
                        entries += st.exp.seen(row).len();
                        let optimistic = st.exp.empirical_reward(row, rewards)
                            + st.gamma * next
                            + self.bonus_of(&st, h, row, v_next);
                        optimistic.min(st.v_max[h]).min(st.q_previous[i])
                    };
                    st.q[i] = value;
                    best = best.max(value);
                }
                st.v[h * ns + s] = best;
            }
            count_sweep(ns * na, entries);
            // The Bernstein bonus reads each seen entry twice more (its variance, its correction).
            crate::work::add(
                crate::work::Unit::ModelEntries,
                if self.bonus == Bonus::Bernstein { 2 * entries as u64 } else { 0 },
            );
        }
        st.q_previous.copy_from_slice(&st.q);
        st.blocks.due = false;
        st.plans += 1;
        self.state = Some(st);
        Ok(())
    }

    fn ensure_planned(&mut self) -> Result<()> {
        if self.state()?.blocks.due {
            self.plan()?;
        }
        Ok(())
    }

    fn q_row(&self, state: usize) -> &[f64] {
        let st = self.state.as_ref().expect("planned");
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        let start = (st.blocks.stage * ns + state) * na;
        &st.q[start..start + na]
    }

    fn size(&mut self, setting: Setting) -> Result<()> {
        let requested = self.plan_horizon;
        let st = self.state()?;
        let (ns, na) = (st.exp.n_states, st.exp.n_actions);
        let h = plan_length(requested, setting, st.episodic);
        st.gamma = setting.gamma;
        st.steps = setting.horizon;
        st.blocks = Blocks::new(h);
        let r_hi = st.exp.r_hi;
        st.v_max = (0..=h).map(|stage| r_hi * discounted_steps(setting.gamma, h - stage)).collect();
        st.q = vec![0.0; h * ns * na];
        st.q_previous = (0..h * ns * na).map(|i| st.v_max[i / (ns * na)]).collect();
        st.v = vec![0.0; (h + 1) * ns];
        st.stage_visits = vec![0.0; h * ns];
        st.stage_bonus = (0..h * ns * na).map(|i| st.v_max[i / (ns * na)]).collect();
        st.exp.clear();
        st.plans = 0;
        Ok(())
    }
}

impl Agent for Ucbvi {
    fn name(&self) -> String {
        let h = if self.plan_horizon == 0 { "auto".to_string() } else { self.plan_horizon.to_string() };
        let bonus = match self.bonus {
            Bonus::Hoeffding => "Hoeffding",
            Bonus::Bernstein => "Bernstein",
        };
        let bonus = if self.reference == Reference::Rlberry { "rlberry's bonus" } else { bonus };
        format!("UCBVI ({bonus}, c = {}, H = {h}{}{})", self.c, self.rewards.label(), self.reference.label())
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.state = Some(UcbviState {
            exp: Experience::new(prior),
            gamma: setting.gamma,
            steps: setting.horizon,
            blocks: Blocks::new(1),
            q: Vec::new(),
            q_previous: Vec::new(),
            v: Vec::new(),
            stage_visits: Vec::new(),
            v_max: Vec::new(),
            stage_bonus: Vec::new(),
            plans: 0,
            episodic: false,
        });
        self.size(setting)
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let setting = context.setting;
        let requested = self.plan_horizon;
        let st = self.state()?;
        if st.gamma == setting.gamma && st.blocks.length == plan_length(requested, setting, st.episodic) {
            // Same shapes: refill without allocating.
            let per_stage = st.exp.n_states * st.exp.n_actions;
            st.steps = setting.horizon;
            st.blocks.restart();
            for (i, q) in st.q_previous.iter_mut().enumerate() {
                *q = st.v_max[i / per_stage];
            }
            st.stage_visits.fill(0.0);
            for (i, b) in st.stage_bonus.iter_mut().enumerate() {
                *b = st.v_max[i / per_stage];
            }
            st.exp.clear();
            st.plans = 0;
            Ok(())
        } else {
            self.size(setting)
        }
    }

    fn start_episode(&mut self, _state: usize, _rng: &mut Rng) -> Result<()> {
        let st = self.state()?;
        if !st.episodic {
            // The first episode: the plan spans the episode from now on (nothing is learned yet).
            st.episodic = true;
            let setting = Setting { gamma: st.gamma, horizon: st.steps };
            self.size(setting)?;
        }
        self.state()?.blocks.restart();
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.ensure_planned()?;
        Ok(argmax_random_tie(self.q_row(state), rng))
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let (reference, c) = (self.reference, self.c);
        let st = self.state()?;
        let (ns, na, h) = (st.exp.n_states, st.exp.n_actions, st.blocks.stage);
        st.stage_visits[h * ns + t.state] += 1.0;
        st.exp.observe(&t);
        if reference == Reference::Rlberry {
            // rlberry refreshes the bonus at the stage of the visit only.
            let row = t.state * na + t.action;
            st.stage_bonus[h * ns * na + row] = rlberry_bonus(c, st.exp.visits(row), st.v_max[h], st.exp.scale());
        }
        st.blocks.advance();
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.ensure_planned()?;
        greedy_probabilities(self.q_row(state), out);
        Ok(())
    }

    /// Nothing learned offline: learn_offline only sizes the tables.
    fn parameter_memory(&self, n_states: usize, n_actions: usize, setting: Setting) -> MemoryNeed {
        let bytes = staged_memory(3, self.plan_horizon, n_states, n_actions, setting);
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

    fn trained(bonus: Bonus, c: f64) -> Ucbvi {
        let mut agent = Ucbvi::new(bonus, c, 0.1, 3, RewardModel::Known).unwrap();
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent
    }

    #[test]
    fn allocates_nothing_per_step() {
        crate::agents::baseline_test_support::assert_examples_allocate_nothing(&SPEC);
    }

    #[test]
    fn hoeffding_bonus_at_known_counts() {
        let mut agent = trained(Bonus::Hoeffding, 1.0);
        let mut rng = crate::rng::stream(0, 0, 0);
        for _ in 0..4 {
            agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        }
        let st = agent.state.as_ref().unwrap();
        let l = (5.0f64 * 5.0 * 2.0 * 30.0 / 0.1).ln();
        let v = vec![0.0; 5];
        assert!((agent.bonus_of(st, 0, 1, &v) - 7.0 * 3.0 * l / 2.0).abs() < 1e-12);
    }

    #[test]
    fn bernstein_bonus_at_known_counts() {
        let mut agent = trained(Bonus::Bernstein, 1.0);
        let mut rng = crate::rng::stream(0, 0, 0);
        // (0, 1) seen 4 times: twice to 1 and twice to 2 (as if the chain were random), at stage 0.
        for y in [1, 2, 1, 2] {
            agent.state.as_mut().unwrap().blocks.stage = 0;
            agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: y }, &mut rng).unwrap();
        }
        // Stage 1 visits: state 1 seen 3 times, state 2 never.
        agent.state.as_mut().unwrap().stage_visits[5 + 1] = 3.0;
        let st = agent.state.as_ref().unwrap();
        let v = [0.0, 1.0, 3.0, 0.0, 0.0];
        let (h, s, a, n) = (3.0f64, 5.0f64, 2.0f64, 4.0f64);
        let l = (5.0 * s * a * 30.0 / 0.1).ln();
        let (x1, x2): (f64, f64) = (0.9, 0.9 * 3.0);
        let variance = 0.5 * x1 * x1 + 0.5 * x2 * x2 - (0.5 * x1 + 0.5 * x2).powi(2);
        let numerator = 1e4 * h.powi(3) * s * s * a * l * l;
        let correction = 0.5 * (numerator / 3.0).min(h * h) + 0.5 * h * h;
        let expected = (8.0 * l * variance / n).sqrt() + 14.0 * h * l / (3.0 * n) + (8.0 * correction / n).sqrt();
        let got = agent.bonus_of(st, 0, 1, &v);
        assert!((got - expected).abs() < 1e-10, "{got} {expected}");
        // No correction term at the last stage.
        let last = (8.0 * l * variance / n).sqrt() + 14.0 * h * l / (3.0 * n);
        assert!((agent.bonus_of(st, 2, 1, &v) - last).abs() < 1e-10);
    }

    #[test]
    fn q_never_increases_from_plan_to_plan() {
        let mut agent = trained(Bonus::Hoeffding, 0.01);
        let (mdp, _) = deterministic_chain();
        let (mut rng, mut env) = (crate::rng::stream(3, 0, 0), crate::rng::stream(3, 1, 0));
        let mut s = 0;
        let mut previous: Option<Vec<f64>> = None;
        for _ in 0..60 {
            let a = agent.act(s, &mut rng).unwrap();
            let st = agent.state.as_ref().unwrap();
            if st.blocks.stage == 0 {
                if let Some(p) = &previous {
                    assert!(st.q.iter().zip(p).all(|(q, p)| q <= p));
                }
                previous = Some(st.q.clone());
            }
            let (y, r) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward: r, next_state: y }, &mut rng).unwrap();
            s = y;
        }
    }

    #[test]
    fn rlberry_bonus_at_known_counts_refreshed_at_the_visited_stage_only() {
        let mut agent = trained(Bonus::Hoeffding, 0.5).with_reference(Reference::Rlberry);
        let mut rng = crate::rng::stream(0, 0, 0);
        let (ns, na) = (5, 2);
        let v_max = |h: usize| discounted_steps(0.9, 3 - h);
        // Q is 0 before the first observation (rlberry plans after its first episode).
        assert!(agent.act(0, &mut rng).is_ok());
        assert!(agent.state.as_ref().unwrap().q.iter().all(|&q| q == 0.0));
        // (0, 1) seen 4 times, each time at stage 0.
        for _ in 0..4 {
            agent.state.as_mut().unwrap().blocks.stage = 0;
            agent.observe(Transition { state: 0, action: 1, reward: 0.0, next_state: 1 }, &mut rng).unwrap();
        }
        let st = agent.state.as_ref().unwrap();
        let row = 1;
        let expected = (0.5 / 2.0 + v_max(0) / 4.0).min(v_max(0));
        assert!((st.stage_bonus[row] - expected).abs() < 1e-12, "{}", st.stage_bonus[row]);
        assert!((rlberry_bonus(0.5, 4.0, v_max(0), 1.0) - expected).abs() < 1e-15);
        // Capped at v_max(h) while c / sqrt(n) + v_max / n exceeds it (n = 1).
        assert_eq!(rlberry_bonus(0.5, 1.0, v_max(0), 1.0), v_max(0));
        // The same pair keeps the bonus it started with at the stages it was not visited at.
        for h in 1..3 {
            assert_eq!(st.stage_bonus[h * ns * na + row], v_max(h));
        }
    }

    #[test]
    fn rlberry_plan_is_unclipped_backward_induction_on_a_uniform_model_for_unvisited_pairs() {
        let mut agent =
            Ucbvi::new(Bonus::Hoeffding, 1.0, 0.1, 3, RewardModel::Learned).unwrap().with_reference(Reference::Rlberry);
        let (_, prior) = deterministic_chain();
        let setting = Setting { gamma: 0.9, horizon: 30 };
        let mut rng = crate::rng::stream(0, 0, 0);
        agent.learn_offline(&prior, setting, &mut rng).unwrap();
        agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
        agent.observe(Transition { state: 0, action: 1, reward: 0.5, next_state: 1 }, &mut rng).unwrap();
        agent.state.as_mut().unwrap().blocks.restart();
        agent.act(0, &mut rng).unwrap();
        let st = agent.state.as_ref().unwrap();
        let v_max = |h: usize| discounted_steps(0.9, 3 - h);
        // Every pair but (0, 1) is unvisited (reward 0, uniform P̂). Last stage: Q_2 = bonus v_max(2) = 1,
        // (0, 1): 0.5 + 1 (its stage-2 bonus was never refreshed); so V_2 = (1.5, 1, 1, 1, 1).
        assert!((st.q[2 * 10] - 1.0).abs() < 1e-12 && (st.q[2 * 10 + 1] - 1.5).abs() < 1e-12);
        let mean_v2 = (1.5 + 4.0) / 5.0;
        // Stage 1, unvisited: v_max(1) + 0.9 mean V_2, above v_max(1) (Q is not clipped).
        let q1 = v_max(1) + 0.9 * mean_v2;
        assert!((st.q[10] - q1).abs() < 1e-12 && q1 > v_max(1));
        // V_1(1) is clipped at v_max(0) (rlberry's cap on V, the same at every stage).
        let v1_1 = q1.min(v_max(0));
        assert_eq!(v1_1, v_max(0));
        // (0, 1) at stage 0: reward 0.5, its stage-0 bonus at n = 1 (capped: v_max(0)), next state 1.
        let expected = 0.5 + v_max(0) + 0.9 * v1_1;
        assert!((st.q[1] - expected).abs() < 1e-12, "{} {expected}", st.q[1]);
    }

    #[test]
    fn bernstein_is_refused_with_the_rlberry_reference() {
        let example = Example {
            doc: "",
            params: &[("bonus", ParamDefault::Text("bernstein")), ("reference", ParamDefault::Text("rlberry"))],
        };
        let e = crate::agents::build("ucbvi", &example.params()).err().expect("refused");
        assert!(e.to_string().contains("does not apply"), "{e}");
    }

    #[test]
    fn learns_the_chain() {
        learns_chain(
            &mut Ucbvi::new(Bonus::Hoeffding, 1.0, 0.1, 0, RewardModel::Learned)
                .unwrap()
                .with_reference(Reference::Rlberry),
            4000,
        );
        for bonus in [Bonus::Hoeffding, Bonus::Bernstein] {
            learns_chain(&mut Ucbvi::new(bonus, 0.01, 0.1, 0, RewardModel::Known).unwrap(), 4000);
            learns_chain(&mut Ucbvi::new(bonus, 0.01, 0.1, 0, RewardModel::Learned).unwrap(), 4000);
        }
    }
}
