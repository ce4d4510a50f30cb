//! Per-episode rejection sampling (Mandel et al. 2016, Algorithm 3) with its fixed-M and
//! importance-weighted variants (Theorems 7.1 and 7.2).
//!
//! The logged episodes are shuffled once and each is proposed once. Before a proposal the agent's
//! state is stored ([`Stepper::snapshot`], after `start_episode`, so whatever the agent draws for
//! the episode, e.g. PSRL's posterior models, is part of it) and M is computed from it. The
//! episode is fed to the agent step by step, multiplying p by pi_b(a | s) / pi_e(a | s) with pi_b
//! read *before* the step's update; it is accepted with probability p / M, else the agent is
//! restored. Restoring (rather than re-drawing the agent's randomness) matters: with randomness
//! drawn anew after each rejection, the accepted draws would follow p(chi) / M(chi) instead of
//! p(chi).
//!
//! With a fixed M, each proposal is accepted with probability exactly 1/M whatever the history,
//! so the number of accepted episodes is Binomial(N, 1/M) and R(T) / P(Binomial(N, 1/M) >= T)
//! (0 past the last accepted episode) is an unbiased estimate of the online R(T), T = 1..N.
//!
//! A log replayed from its own start states: the start is part of the proposal, so the agent
//! starts its episode only once the proposal is known, and what it draws then depends on that
//! start. Keeping those draws across rejections is then impossible, so they are drawn anew for
//! every proposal, which is valid only with an M that does not depend on them: a fixed M.

use rand::seq::SliceRandom;
use rand::Rng as _;

use super::binomial::binomial_sf;
use super::episode_m::{episode_bound, MBound};
use super::{
    check_candidate, ratio_bound, Config, Dataset, EpisodeEnd, EpisodeReturn, Episodes, LoggingPolicy, Outcome,
    PersOptions, StopReason,
};
use crate::agent::Transition;
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// Relative slack when checking that M bounds a proposal's ratio (rounding in the products).
const BOUND_SLACK: f64 = 1e-9;
/// Largest difference tolerated between the policy M was computed from and the policy met later in
/// the episode.
const POLICY_TOLERANCE: f64 = 1e-12;

/// What M is computed from.
struct Bounder<'a> {
    bound: MBound,
    data: &'a Dataset,
    end: EpisodeEnd,
    horizon: usize,
    /// The agent's policy at the start of the episode, (S, A), for the policy bounds.
    frozen: Vec<f64>,
    state_max: Vec<f64>,
    work: Vec<f64>,
    /// The logging table, for the computed bounds.
    table: Option<&'a [f64]>,
}

impl<'a> Bounder<'a> {
    fn new(bound: MBound, data: &'a Dataset, end: EpisodeEnd, horizon: usize) -> Result<Self> {
        let table = match data.logging() {
            LoggingPolicy::Table(t) => Some(t.as_slice()),
            _ => None,
        };
        if table.is_none() && !matches!(bound, MBound::Fixed(_)) {
            return Err(invalid!(
                "with a history-dependent (per-row) logging policy, PERS needs a fixed M given by the user (m=<number>)"
            ));
        }
        if let MBound::Fixed(m) = bound {
            if !(m.is_finite() && m >= 1.0) {
                return Err(invalid!("a fixed M must be a finite number >= 1, got {m}"));
            }
        }
        let (s, a) = (data.n_states(), data.n_actions());
        Ok(Self {
            bound,
            data,
            end,
            horizon,
            frozen: vec![0.0; s * a],
            state_max: vec![0.0; s],
            work: Vec::with_capacity(s),
            table,
        })
    }

    /// M for the agent behind `stepper` at the start of an episode.
    fn compute(&mut self, stepper: &mut Stepper) -> Result<f64> {
        let (s_count, a_count) = (self.data.n_states(), self.data.n_actions());
        let m = match self.bound {
            MBound::Fixed(m) => return Ok(m),
            MBound::Logging => {
                let table = self.table.expect("checked in new");
                for s in 0..s_count {
                    let row = &table[s * a_count..(s + 1) * a_count];
                    if row[0].is_nan() {
                        return Err(invalid!(
                            "the logging policy is unknown in state {s} (the log never visits it): give it as a table"
                        ));
                    }
                    self.state_max[s] = row.iter().filter(|&&p| p > 0.0).fold(0.0, |m: f64, &p| m.max(1.0 / p));
                }
                let mut m: f64 = 0.0;
                for start in self.starts() {
                    m = m.max(episode_bound(&self.state_max, start, self.end, self.horizon, &mut self.work));
                }
                m
            }
            MBound::Policy | MBound::PerStep => {
                let table = self.table.expect("checked in new");
                for s in 0..s_count {
                    let pb = &mut self.frozen[s * a_count..(s + 1) * a_count];
                    stepper.action_probabilities(s, pb)?;
                    check_candidate(pb, s)?;
                    let pe = &table[s * a_count..(s + 1) * a_count];
                    // A state the log never visits: the candidate's mass there cannot be checked,
                    // and no proposal goes there; with every state a possible successor, the bound
                    // must still cover it.
                    self.state_max[s] = ratio_bound(pb, pe, s)?;
                }
                let start = self.data.start_state().expect("policy bounds need a fixed start (checked in run)");
                if self.bound == MBound::Policy {
                    episode_bound(&self.state_max, start, self.end, self.horizon, &mut self.work)
                } else {
                    let step_max = self.state_max.iter().fold(0.0, |m: f64, &r| m.max(r));
                    step_max.powi(self.horizon as i32)
                }
            }
        };
        if !m.is_finite() {
            return Err(invalid!(
                "M overflows ({m}): the episode horizon of {} steps is too long for per-episode rejection sampling",
                self.horizon
            ));
        }
        Ok(m)
    }

    /// The states an episode may start in: the fixed start, or every logged start state.
    fn starts(&self) -> Vec<usize> {
        match self.data.start_state() {
            Some(start) => vec![start],
            None => {
                let mut seen = vec![false; self.data.n_states()];
                for step in self.data.steps() {
                    seen[step.state] = true;
                }
                (0..seen.len()).filter(|&s| seen[s]).collect()
            }
        }
    }

    /// For the policy bounds: the agent's policy at `state` must be the one M was computed from.
    fn check_frozen(&self, pb: &[f64], state: usize) -> Result<()> {
        if !matches!(self.bound, MBound::Policy | MBound::PerStep) {
            return Ok(());
        }
        let a = pb.len();
        let frozen = &self.frozen[state * a..(state + 1) * a];
        if frozen.iter().zip(pb).any(|(x, y)| (x - y).abs() > POLICY_TOLERANCE) {
            return Err(invalid!(
                "the agent's policy in state {state} changed within the episode ({frozen:?} -> {pb:?}): M from the \
                 policy ('policy', 'per_step') needs a policy fixed within an episode; use m='logging' or a number"
            ));
        }
        Ok(())
    }
}

pub(super) fn run(
    stepper: &mut Stepper,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    options: &PersOptions,
    rng: &mut Rng,
) -> Result<Outcome> {
    let longest = episodes.ranges.iter().map(|r| r.len()).max().unwrap_or(0);
    let horizon = match (config.end, options.max_length) {
        (EpisodeEnd::Horizon(h), _) => h,
        (_, Some(h)) if h >= longest => h,
        (_, Some(h)) => {
            return Err(invalid!("max_length = {h} but the log has an episode of {longest} steps"));
        }
        (_, None) if matches!(options.bound, MBound::Fixed(_)) => longest,
        (_, None) => {
            return Err(invalid!(
                "PERS needs the longest possible episode (max_length=) when episodes do not have a fixed horizon"
            ))
        }
    };
    if options.weighted && config.max_episodes.is_some() {
        return Err(invalid!(
            "the importance-weighted estimate needs every logged episode proposed: drop max_episodes"
        ));
    }
    if options.weighted && !options.bound.is_fixed() {
        return Err(invalid!("the importance-weighted estimate needs a fixed M: m='logging' or a number"));
    }
    let fixed_start = data.start_state();
    if fixed_start.is_none() && !options.bound.is_fixed() {
        return Err(invalid!(
            "PERS on a log replayed from its own start states needs a fixed M (m='logging' or a number): the \
             agent's per-episode draws depend on the proposal's start, so they cannot be kept across rejections"
        ));
    }
    let mut bounder = Bounder::new(options.bound, data, config.end, horizon)?;
    let steps = data.steps();
    let mut order: Vec<usize> = (0..episodes.ranges.len()).collect();
    order.shuffle(rng);
    let mut pb = vec![0.0; data.n_actions()];
    let mut out = Outcome::new(StopReason::DataExhausted);
    out.m_values.reserve(order.len());
    let mut trace = Vec::with_capacity(if config.trace { longest } else { 0 });

    // With a fixed start the agent starts its episode before the proposal and keeps its draws
    // across rejections; from logged starts it starts each proposal anew (a fixed M).
    if let Some(start) = fixed_start {
        stepper.start_episode(start)?;
    }
    let mut stored = stepper.snapshot()?;
    let mut m = bounder.compute(stepper)?;
    for &k in &order {
        if config.max_episodes.is_some_and(|max| out.returns.len() >= max) {
            out.stop = StopReason::MaxEpisodes;
            break;
        }
        let range = episodes.ranges[k].clone();
        if fixed_start.is_none() {
            stepper.start_episode(data.start_of(&range))?;
        }
        let mut ratio = 1.0;
        let mut episode = EpisodeReturn::new();
        trace.clear();
        for row in range.clone() {
            let logged = steps[row];
            stepper.action_probabilities(logged.state, &mut pb)?;
            check_candidate(&pb, logged.state)?;
            bounder.check_frozen(&pb, logged.state)?;
            let pe = data.logging_row(row).expect("known policy");
            ratio_bound(&pb, pe, logged.state)?; // support check on every action
            ratio *= pb[logged.action] / pe[logged.action];
            let transition = Transition {
                state: logged.state,
                action: logged.action,
                reward: logged.reward,
                next_state: logged.next_state,
            };
            stepper.observe(transition)?;
            if config.trace {
                trace.push(transition);
            }
            episode.add(logged.reward, config.gamma);
        }
        out.tuples_used += range.len();
        out.proposals += 1;
        out.m_values.push(m);
        if ratio > m * (1.0 + BOUND_SLACK) {
            return Err(invalid!("M = {m} does not bound the ratio {ratio} of a logged episode: M is invalid"));
        }
        let u: f64 = rng.random();
        if u * m < ratio {
            out.accepted += 1;
            if config.trace {
                let index = out.returns.len();
                out.trace.extend(trace.iter().map(|t| (index, *t)));
            }
            out.returns.push(episode.total);
            out.lengths.push(episode.steps);
            if let Some(start) = fixed_start {
                stepper.start_episode(start)?;
            }
            stored = stepper.snapshot()?;
            if !options.bound.is_fixed() {
                m = bounder.compute(stepper)?;
            }
        } else {
            stepper.restore(&stored)?;
        }
    }
    if options.weighted {
        let n = episodes.ranges.len() as u64;
        let mut weighted = vec![0.0; episodes.ranges.len()];
        for (t, r) in out.returns.iter().enumerate() {
            weighted[t] = r / binomial_sf(n, 1.0 / m, t as u64 + 1);
        }
        out.weighted = Some(weighted);
    }
    Ok(out)
}
