//! Algorithm 1: reference values at m states, each from truncated-return rollouts stopped by
//! EBGStop, in parallel over states (state i draws from its own stream, so the values do not
//! depend on the thread count), and the CMAPVE of any learned value function against them with
//! the error the design guarantees.

use rayon::prelude::*;

use super::ebgstop::{CheckVariant, StopReason};
use super::losses::{mean_loss, Loss};
use super::policy::Policy;
use super::rollout_length::rollout_length;
use super::sample_size::{accuracies, guaranteed_error, AccuracySplit};
use super::stopping::{certify, Bets, StopConfig, StoppingRule};
use crate::envs::Env;
use crate::error::Result;
use crate::invalid;
use crate::platform::threads;
use crate::rng::{purpose, stream, Rng};

/// The default cap on the steps of a rollout that runs to termination (an undiscounted
/// environment without a time limit). Under the paper's policies no episode comes near it:
/// Mountain Car's energy pumping ends within about a thousand steps from any state, and Puddle
/// World's uniform policy takes 2757 steps on average from the far corner (median 2062, 95th
/// percentile 7694: an exponential tail falling by e every 2 500 steps, which extrapolates to about
/// 10⁻¹⁸ per rollout above 10⁵).
pub const DEFAULT_MAX_ROLLOUT_STEPS: usize = 100_000;

/// What the caller chooses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceSettings {
    /// Target accuracy ε of the CMAPVE estimate (a fraction of the clipped loss).
    pub epsilon: f64,
    /// Failure probability δ of the whole guarantee (all states, all K queries).
    pub delta: f64,
    /// τ > 0, in value units.
    pub tau: f64,
    /// The clip level c of the loss.
    pub c: f64,
    /// K: how many times the error will be queried.
    pub k: u64,
    pub split: AccuracySplit,
    /// The confidence bound that stops each state's sampling (betting by default).
    pub rule: StoppingRule,
    /// The betting rule's bets (aimed at the stopping width by default; unused by EBGStop).
    pub bets: Bets,
    /// EBGStop's check variant, growth and budget exponent (unused by the betting rule).
    pub variant: CheckVariant,
    pub beta: f64,
    pub p: f64,
    /// Per-state cap on sampled returns.
    pub max_samples: u64,
    /// The width of the returns' range (the paper's V_max), anchored at the highest possible
    /// return; None: the range the reward bounds give a return of the rollout length.
    pub value_range: Option<f64>,
    /// The cap on a rollout that runs to termination (an undiscounted environment without a time
    /// limit); None: [`DEFAULT_MAX_ROLLOUT_STEPS`]. Refused for any other environment, whose
    /// rollout length Lemma 5 or the time limit sets.
    pub max_rollout_steps: Option<usize>,
    /// When a rollout to termination reaches the cap: false (the default) refuses with an error
    /// that names the cap and the states; true certifies the return truncated at the cap there.
    pub accept_truncated: bool,
    pub seed: u64,
    /// Threads of the rollouts over states (None: every core); the values never depend on it.
    pub threads: Option<usize>,
}

impl ReferenceSettings {
    /// The checks that need no environment (the design checks the rest against it).
    pub fn validate(&self) -> Result<()> {
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(invalid!("delta must be in (0, 1), got {}", self.delta));
        }
        if self.k == 0 {
            return Err(invalid!("k (the number of times the error is queried) must be >= 1"));
        }
        Ok(())
    }
}

/// Everything derived from the settings and the environment: stored beside the values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceDesign {
    pub settings: ReferenceSettings,
    /// Number of states m.
    pub m: usize,
    pub eps_m: f64,
    /// The per-state relative accuracy ε̄.
    pub eps_bar: f64,
    /// The per-state failure probability δ/(2m).
    pub state_delta: f64,
    /// Steps per rollout at most (Lemma 5 with ε̄, the time limit, or the cap of a rollout to
    /// termination).
    pub rollout_length: usize,
    /// The rollouts run until their episode ends, `rollout_length` being only a cap (an
    /// undiscounted environment without a time limit).
    pub to_termination: bool,
    /// The lowest possible truncated return, and the width R of their range (EBGStop's R).
    pub value_low: f64,
    pub value_range: f64,
    pub discount: f64,
}

impl ReferenceDesign {
    /// The design for m states of `env`.
    pub fn new<E: Env>(env: &E, settings: ReferenceSettings, m: usize) -> Result<Self> {
        if m == 0 {
            return Err(invalid!("at least one state is needed"));
        }
        settings.validate()?;
        let acc = accuracies(settings.epsilon, settings.c, settings.split)?;
        let (lo, hi) = env.reward_bounds();
        if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
            return Err(invalid!("the environment's reward bounds ({lo}, {hi}) are not usable"));
        }
        let gamma = env.discount();
        let r_max = lo.abs().max(hi.abs());
        if gamma >= 1.0 && !(settings.tau.is_finite() && settings.tau > 0.0) {
            return Err(invalid!("tau must be finite and > 0, got {}", settings.tau));
        }
        let to_termination = gamma >= 1.0 && env.time_limit().is_none();
        if let (Some(cap), false) = (settings.max_rollout_steps, to_termination) {
            return Err(invalid!(
                "max_rollout_steps ({cap}) caps rollouts that run to termination, which only an undiscounted \
                 environment without a time limit has; {} has discount {gamma} and time limit {} (the rollout \
                 length comes from {})",
                env.name(),
                env.time_limit().map_or("none".to_string(), |t| t.to_string()),
                if gamma < 1.0 { "Lemma 5 and the time limit" } else { "the time limit" }
            ));
        }
        if settings.accept_truncated && !to_termination {
            return Err(invalid!(
                "accept_truncated applies to rollouts that run to termination (an undiscounted environment \
                 without a time limit); {} has discount {gamma} and time limit {}, whose rollouts are cut by design",
                env.name(),
                env.time_limit().map_or("none".to_string(), |t| t.to_string())
            ));
        }
        let rollout_length = match (gamma < 1.0, env.time_limit()) {
            (true, limit) => {
                let l = rollout_length(acc.eps_bar, settings.tau, r_max, gamma)?;
                limit.map_or(l, |t| l.min(t))
            }
            (false, Some(limit)) => limit,
            (false, None) => match settings.max_rollout_steps.unwrap_or(DEFAULT_MAX_ROLLOUT_STEPS) {
                0 => return Err(invalid!("max_rollout_steps must be >= 1")),
                cap => cap,
            },
        };
        // A return of 1..=l rewards: at least min(lo, lo·S_l), at most max(hi, hi·S_l), where
        // S_l = Σ_{k<l} γ^k (l itself when undiscounted, so a rollout to termination gets the range
        // of any return up to the cap). A single possible return (range 0) is certified by one sample.
        let horizon_weight =
            if gamma < 1.0 { (1.0 - gamma.powi(rollout_length as i32)) / (1.0 - gamma) } else { rollout_length as f64 };
        let lowest = lo.min(lo * horizon_weight);
        let highest = hi.max(hi * horizon_weight);
        let value_range = match settings.value_range {
            Some(r) if !(r.is_finite() && r > 0.0) => {
                return Err(invalid!("value_range must be finite and > 0, got {r}"));
            }
            Some(r) => r,
            None => (highest - lowest).max(f64::MIN_POSITIVE),
        };
        let lowest = highest - value_range;
        let design = Self {
            settings,
            m,
            eps_m: acc.eps_m,
            eps_bar: acc.eps_bar,
            state_delta: settings.delta / (2.0 * m as f64),
            rollout_length,
            to_termination,
            value_low: lowest,
            value_range,
            discount: gamma,
        };
        design.stop_config().validate()?;
        Ok(design)
    }

    /// The stopping rule's parameters for one state: (ε̄, δ/(2m), τ) on returns in
    /// [value_low, value_low + value_range].
    pub fn stop_config(&self) -> StopConfig {
        let s = &self.settings;
        StopConfig {
            rule: s.rule,
            bets: s.bets,
            variant: s.variant,
            beta: s.beta,
            p: s.p,
            max_samples: s.max_samples,
            ..StopConfig::new(self.eps_bar, self.state_delta, s.tau, self.value_low, self.value_range)
        }
    }

    /// Theorem 1's guaranteed error for these m states and K queries.
    pub fn guaranteed_error(&self) -> Result<f64> {
        guaranteed_error(self.m, self.settings.delta, self.settings.c, self.settings.k, self.eps_bar)
    }
}

/// One stored reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReferenceValue {
    pub value: f64,
    /// Returns sampled.
    pub n_samples: u64,
    /// Environment steps simulated.
    pub n_steps: u64,
    /// Rollouts that reached the rollout length before the episode ended (for an undiscounted
    /// episodic task whose time limit is a cap, 0 means every return ran to termination).
    pub n_cut: u64,
    pub reason: StopReason,
}

/// What the rollouts of one state cost: environment steps, and rollouts cut at the length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RolloutCount {
    pub steps: u64,
    pub cut: u64,
}

/// One discounted return of at most `length` steps from `start` under `policy`; also counts the
/// steps and whether the length cut the episode. Allocation-free (states are moved, not collected).
#[inline]
pub fn truncated_return<E: Env, P: Policy<E::State> + ?Sized>(
    env: &E,
    policy: &P,
    start: &E::State,
    length: usize,
    rng: &mut Rng,
    count: &mut RolloutCount,
) -> f64 {
    let gamma = env.discount();
    let (mut total, mut weight) = (0.0, 1.0);
    let mut state = start.clone();
    for _ in 0..length {
        let action = policy.draw(&state, rng);
        let step = env.step(&state, action, rng);
        count.steps += 1;
        total += weight * step.reward;
        if step.terminal {
            return total;
        }
        weight *= gamma;
        state = step.next_state;
    }
    count.cut += 1;
    total
}

fn check_policy<E: Env, P: Policy<E::State> + ?Sized>(env: &E, policy: &P) -> Result<()> {
    if policy.n_actions() != env.n_actions() {
        return Err(invalid!(
            "the policy has {} actions but {} has {}",
            policy.n_actions(),
            env.name(),
            env.n_actions()
        ));
    }
    Ok(())
}

/// What a rollout that reaches the rollout length before its episode ends does to its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCut {
    /// Counted in `n_cut`; the return is the truncated one (a discounted rollout, a time limit,
    /// or a cap the caller accepts).
    Count,
    /// Ends the state's sampling (reason `Exhausted`, `n_cut` 1): its return to termination can
    /// not be certified.
    Stop,
}

/// Algorithm 2 at each state with the given stopping rule and rollout length, in parallel
/// over states; state i uses stream (seed, VALUE_ERROR_ROLLOUTS, i), so the values do not depend
/// on the thread count.
pub fn rollout_values<E: Env, P: Policy<E::State> + ?Sized>(
    env: &E,
    policy: &P,
    states: &[E::State],
    config: &StopConfig,
    length: usize,
    seed: u64,
    on_cut: OnCut,
) -> Result<Vec<ReferenceValue>> {
    check_policy(env, policy)?;
    config.validate()?;
    if length == 0 {
        return Err(invalid!("the rollout length must be >= 1"));
    }
    states
        .par_iter()
        .enumerate()
        .map(|(i, state)| {
            let mut rng = stream(seed, purpose::VALUE_ERROR_ROLLOUTS, i as u64);
            let mut count = RolloutCount::default();
            let out = certify(config, || {
                if on_cut == OnCut::Stop && count.cut > 0 {
                    return None;
                }
                Some(truncated_return(env, policy, state, length, &mut rng, &mut count))
            })?;
            Ok(ReferenceValue {
                value: out.estimate,
                n_samples: out.n_samples,
                n_steps: count.steps,
                n_cut: count.cut,
                reason: out.reason,
            })
        })
        .collect()
}

/// The reference at each state (Algorithm 1's loop, given the states).
pub fn reference_values<E: Env, P: Policy<E::State> + ?Sized>(
    env: &E,
    policy: &P,
    states: &[E::State],
    settings: ReferenceSettings,
) -> Result<(ReferenceDesign, Vec<ReferenceValue>)> {
    check_policy(env, policy)?;
    let design = ReferenceDesign::new(env, settings, states.len())?;
    let config = design.stop_config();
    let on_cut = if design.to_termination && !settings.accept_truncated { OnCut::Stop } else { OnCut::Count };
    let values = threads::install(settings.threads, states.len(), || {
        rollout_values(env, policy, states, &config, design.rollout_length, settings.seed, on_cut)
    })??;
    if on_cut == OnCut::Stop {
        let cut: Vec<usize> = (0..values.len()).filter(|&i| values[i].n_cut > 0).collect();
        if let Some(&first) = cut.first() {
            return Err(invalid!(
                "a rollout from {} of {} states reached max_rollout_steps = {} steps before its episode ended \
                 (the first is states[{}] = {:?}), so its undiscounted return to termination can not be certified; \
                 raise max_rollout_steps if episodes are that long, check that the policy reaches a terminal \
                 state, or accept the return truncated at {} steps (accept_truncated)",
                cut.len(),
                values.len(),
                design.rollout_length,
                first,
                states[first],
                design.rollout_length
            ));
        }
    }
    Ok((design, values))
}

/// CMAPVE of learned values against stored references, and the error it is guaranteed within.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CmapveReport {
    pub estimate: f64,
    /// With probability ≥ 1 − δ over the references, |CMAPVE − estimate| ≤ bound for all K
    /// queries; `inf` if some reference was not certified (cap reached).
    pub bound: f64,
    pub certified: bool,
}

/// CMAPVE of `v_hat` (one value per reference state) against the references.
pub fn cmapve(v_hat: &[f64], references: &[f64], certified: bool, design: &ReferenceDesign) -> Result<CmapveReport> {
    if references.len() != design.m {
        return Err(invalid!("{} references for a design of m = {}", references.len(), design.m));
    }
    let s = &design.settings;
    let estimate = mean_loss(Loss::ClippedPercentage { tau: s.tau, c: s.c }, v_hat, references)?;
    let bound = if certified { design.guaranteed_error()? } else { f64::INFINITY };
    Ok(CmapveReport { estimate, bound, certified })
}

/// Samples from stream (seed, VALUE_ERROR_STATES, 0), for drawing evaluation states.
pub fn state_stream(seed: u64) -> Rng {
    stream(seed, purpose::VALUE_ERROR_STATES, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::MountainCar;
    use crate::evaluators::value_error::policy::EnergyPumping;

    fn settings() -> ReferenceSettings {
        ReferenceSettings {
            epsilon: 0.3,
            delta: 0.1,
            tau: 1.0,
            c: 1.0,
            k: 1,
            split: AccuracySplit::Corrected,
            rule: StoppingRule::Betting,
            bets: Bets::Aimed,
            variant: CheckVariant::Checkpoints,
            beta: 1.1,
            p: 1.1,
            max_samples: 1_000_000,
            value_range: None,
            max_rollout_steps: None,
            accept_truncated: false,
            seed: 9,
            threads: None,
        }
    }

    #[test]
    fn design_by_hand() {
        // ε̄ = 0.3/8 = 0.0375; Lemma 5 with R_max = 1, γ = 0.99: ⌈log(3.75e-4)/log 0.99⌉ = ⌈784.9⌉ = 785;
        // a Mountain Car return (−1 per step) lies in [−S_l, −1], S_l = (1 − 0.99^786)/0.01.
        let env = MountainCar::new(0.99, None).unwrap();
        let d = ReferenceDesign::new(&env, settings(), 10).unwrap();
        assert_eq!(d.rollout_length, 785);
        assert!((d.eps_bar - 0.0375).abs() < 1e-15 && (d.state_delta - 0.005).abs() < 1e-15);
        let s_l = (1.0 - 0.99f64.powi(785)) / 0.01;
        assert!((d.value_range - (s_l - 1.0)).abs() < 1e-9);
        assert!(ReferenceDesign::new(&env, ReferenceSettings { tau: 0.0, ..settings() }, 10).is_err());
        assert!(ReferenceDesign::new(&env, settings(), 0).is_err());
    }

    #[test]
    fn undiscounted_rollouts_run_to_termination_under_a_cap() {
        use crate::evaluators::value_error::policy::ConstantPolicy;
        let env = MountainCar::new(1.0, None).unwrap();
        let capped = ReferenceSettings { max_rollout_steps: Some(2000), ..settings() };
        let d = ReferenceDesign::new(&env, capped, 3).unwrap();
        // Returns of 1 to 2000 steps of −1: the range holds every return up to the cap.
        assert!(d.to_termination && d.rollout_length == 2000);
        assert_eq!((d.value_low, d.value_range), (-2000.0, 1999.0));
        let d = ReferenceDesign::new(&env, settings(), 3).unwrap();
        assert_eq!(d.rollout_length, DEFAULT_MAX_ROLLOUT_STEPS);
        // The cap means nothing where Lemma 5 or a time limit sets the length.
        let e = ReferenceDesign::new(&MountainCar::new(0.99, None).unwrap(), capped, 3).unwrap_err().to_string();
        assert!(e.contains("max_rollout_steps (2000)") && e.contains("Lemma 5"), "{e}");
        let limited = MountainCar::new(1.0, Some(500)).unwrap();
        assert!(ReferenceDesign::new(&limited, capped, 3).is_err());
        let accept = ReferenceSettings { accept_truncated: true, ..settings() };
        let e = ReferenceDesign::new(&limited, accept, 3).unwrap_err().to_string();
        assert!(e.contains("accept_truncated applies to rollouts that run to termination"), "{e}");
        assert!(!ReferenceDesign::new(&limited, settings(), 3).unwrap().to_termination);
        assert!(ReferenceDesign::new(&env, ReferenceSettings { max_rollout_steps: Some(0), ..settings() }, 3).is_err());

        // From (0.3, 0.03) energy pumping ends within a few dozen steps: no rollout is cut.
        let pump = EnergyPumping::new(0.6).unwrap();
        let (_, v) = reference_values(&env, &pump, &[[0.3, 0.03]], capped).unwrap();
        assert!(v[0].n_cut == 0 && v[0].reason.certified() && (v[0].value + 8.0427).abs() < 0.5, "{v:?}");
        // Without a push the car never leaves the valley floor: an error naming the cap and the
        // states, after one rollout per such state; accepted, the truncated return −2000.
        let still = ConstantPolicy::new(1, 3).unwrap();
        let states = [[-0.5, 0.0], [0.3, 0.03], [-0.6, 0.0]];
        let e = reference_values(&env, &still, &states, capped).unwrap_err().to_string();
        assert!(e.contains("from 2 of 3 states reached max_rollout_steps = 2000") && e.contains("states[0]"), "{e}");
        let accept = ReferenceSettings { accept_truncated: true, ..capped };
        let (_, v) = reference_values(&env, &still, &states[..1], accept).unwrap();
        assert!(v[0].n_cut == v[0].n_samples && (v[0].value + 2000.0).abs() < 0.0375 * 2001.0, "{v:?}");
    }

    #[test]
    fn values_do_not_depend_on_the_thread_count() {
        let env = MountainCar::new(0.99, None).unwrap();
        let policy = EnergyPumping::new(0.6).unwrap();
        let mut rng = state_stream(1);
        let states: Vec<[f64; 2]> = (0..6).map(|_| env.uniform_state(&mut rng)).collect();
        let run = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| reference_values(&env, &policy, &states, settings()).unwrap().1)
        };
        assert_eq!(run(1), run(3));
    }
}
