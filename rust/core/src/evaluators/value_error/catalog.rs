//! The environments, policies and features the bindings expose, as closed enums, and the
//! pairings that make sense (energy pumping is Mountain Car's; a tabular policy or one-hot
//! features need a finite MDP of the same size). Dispatch happens once per call, so the loops
//! inside stay monomorphic.

use super::learners::{td_lambda, LearningCurve, TdSettings};
use super::options::StateValuesOptions;
use super::policy::{ConstantPolicy, EnergyPumping, Policy, TabularPolicy, UniformPolicy};
use super::references::{
    reference_values, rollout_values, state_stream, truncated_return, OnCut, ReferenceDesign, ReferenceSettings,
    ReferenceValue, RolloutCount,
};
use super::tiles::{OneHot, TileCoder};
pub use crate::envs::AnyEnv;
use crate::envs::{Env, FiniteEnv, MountainCar, PuddleWorld};
use crate::error::{index_range, Result};
use crate::invalid;
use crate::platform::threads;
use crate::rng::{purpose, random_below, stream};

#[derive(Clone, Debug)]
pub enum AnyPolicy {
    Uniform(UniformPolicy),
    Constant(ConstantPolicy),
    EnergyPumping(EnergyPumping),
    Tabular(TabularPolicy),
}

#[derive(Clone, Debug)]
pub enum AnyFeatures {
    Tiles(TileCoder),
    OneHot(OneHot),
}

/// Evaluation states: points of a continuous domain or indices of a finite one.
#[derive(Clone, Debug, PartialEq)]
pub enum States {
    Points(Vec<[f64; 2]>),
    Indices(Vec<usize>),
}

impl States {
    pub fn len(&self) -> usize {
        match self {
            States::Points(p) => p.len(),
            States::Indices(i) => i.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a front end shows of an environment: (number of actions, number of states or `None`,
/// discount, (min reward, max reward), time limit or `None`).
pub type EnvSpec = (usize, Option<usize>, f64, (f64, f64), Option<usize>);

impl AnyEnv {
    /// The environment's [`EnvSpec`].
    pub fn spec(&self) -> EnvSpec {
        fn of<E: Env>(e: &E) -> EnvSpec {
            (e.n_actions(), e.n_states(), e.discount(), e.reward_bounds(), e.time_limit())
        }
        match self {
            AnyEnv::MountainCar(e) => of(e),
            AnyEnv::PuddleWorld(e) => of(e),
            AnyEnv::Finite(e) => of(e.as_ref()),
        }
    }

    pub fn name(&self) -> String {
        match self {
            AnyEnv::MountainCar(e) => e.name(),
            AnyEnv::PuddleWorld(e) => e.name(),
            AnyEnv::Finite(e) => e.name(),
        }
    }
}

impl AnyPolicy {
    pub fn describe(&self) -> String {
        match self {
            AnyPolicy::Uniform(p) => Policy::<usize>::describe(p),
            AnyPolicy::Constant(p) => Policy::<usize>::describe(p),
            AnyPolicy::EnergyPumping(p) => p.describe(),
            AnyPolicy::Tabular(p) => p.describe(),
        }
    }
}

/// Typed access to the states of one environment kind.
trait StateKind: Sized + Clone {
    fn slice(states: &States) -> Result<&[Self]>;
}

impl StateKind for [f64; 2] {
    fn slice(states: &States) -> Result<&[Self]> {
        match states {
            States::Points(p) => Ok(p),
            States::Indices(_) => Err(invalid!("a continuous environment needs (m, 2) state coordinates")),
        }
    }
}

impl StateKind for usize {
    fn slice(states: &States) -> Result<&[Self]> {
        match states {
            States::Indices(i) => Ok(i),
            States::Points(_) => Err(invalid!("a finite environment needs integer state indices")),
        }
    }
}

/// A continuous environment's name and state box: (low, high, name) of each coordinate.
fn state_box(env: &AnyEnv) -> (&'static str, [(f64, f64, &'static str); 2]) {
    match env {
        AnyEnv::MountainCar(_) => ("MountainCar", MountainCar::STATE_BOX),
        _ => ("PuddleWorld", PuddleWorld::STATE_BOX),
    }
}

fn check_states(env: &AnyEnv, states: &States) -> Result<()> {
    match (env, states) {
        (AnyEnv::Finite(e), States::Indices(idx)) => {
            let n = e.mdp().n_states();
            match idx.iter().find(|&&s| s >= n) {
                Some(s) => Err(invalid!("state {s} is out of range: allowed {}", index_range(n))),
                None => Ok(()),
            }
        }
        (AnyEnv::Finite(_), States::Points(_)) => Err(invalid!("a finite environment needs integer state indices")),
        (_, States::Points(p)) => {
            if let Some(s) = p.iter().find(|s| !(s[0].is_finite() && s[1].is_finite())) {
                return Err(invalid!("state {s:?} is not finite"));
            }
            let (name, [x, y]) = state_box(env);
            match p.iter().find(|s| !(x.0 <= s[0] && s[0] <= x.1 && y.0 <= s[1] && s[1] <= y.1)) {
                Some(s) => Err(invalid!(
                    "state {s:?} is outside {name}'s state box: allowed {} from {} to {}, {} from {} to {}",
                    x.2,
                    x.0,
                    x.1,
                    y.2,
                    y.0,
                    y.1
                )),
                None => Ok(()),
            }
        }
        (_, States::Indices(_)) => Err(invalid!("a continuous environment needs (m, 2) state coordinates")),
    }
}

/// Calls `$body` with `$e` and `$p` bound to the concrete environment and policy of every
/// pairing that makes sense.
macro_rules! with_pair {
    ($env:expr, $policy:expr, |$e:ident, $p:ident| $body:expr) => {
        match ($env, $policy) {
            (AnyEnv::MountainCar($e), AnyPolicy::EnergyPumping($p)) => $body,
            (AnyEnv::MountainCar($e), AnyPolicy::Uniform($p)) => $body,
            (AnyEnv::MountainCar($e), AnyPolicy::Constant($p)) => $body,
            (AnyEnv::PuddleWorld($e), AnyPolicy::Uniform($p)) => $body,
            (AnyEnv::PuddleWorld($e), AnyPolicy::Constant($p)) => $body,
            (AnyEnv::Finite(boxed), AnyPolicy::Uniform($p)) => {
                let $e: &FiniteEnv = boxed;
                $body
            }
            (AnyEnv::Finite(boxed), AnyPolicy::Constant($p)) => {
                let $e: &FiniteEnv = boxed;
                $body
            }
            (AnyEnv::Finite(boxed), AnyPolicy::Tabular($p)) => {
                let $e: &FiniteEnv = boxed;
                if $p.n_states() != $e.mdp().n_states() {
                    return Err(invalid!(
                        "the tabular policy covers {} states but {} has {}",
                        $p.n_states(),
                        $e.name(),
                        $e.mdp().n_states()
                    ));
                }
                $body
            }
            (env, policy) => Err(invalid!("the policy {} does not apply to {}", policy.describe(), env.name())),
        }
    };
}

/// Reference values at `states` (Algorithm 1 given the states).
pub fn references(
    env: &AnyEnv,
    policy: &AnyPolicy,
    states: &States,
    settings: ReferenceSettings,
) -> Result<(ReferenceDesign, Vec<ReferenceValue>)> {
    check_states(env, states)?;
    with_pair!(env, policy, |e, p| reference_values(e, p, StateKind::slice(states)?, settings))
}

/// Algorithm 2 at each state with explicit per-state parameters (the paper's sample-count study),
/// on `options.threads` threads.
pub fn state_values(
    env: &AnyEnv,
    policy: &AnyPolicy,
    states: &States,
    options: &StateValuesOptions,
) -> Result<Vec<ReferenceValue>> {
    check_states(env, states)?;
    let StateValuesOptions { stop, rollout_length, seed, threads } = *options;
    threads::install(threads, states.len(), || {
        with_pair!(env, policy, |e, p| rollout_values(
            e,
            p,
            StateKind::slice(states)?,
            &stop,
            rollout_length,
            seed,
            OnCut::Count
        ))
    })?
}

/// `m` evaluation states drawn uniformly over the state space (Sajed et al.'s choice): the
/// non-terminal box for the continuous domains, uniform over states for a finite MDP.
pub fn uniform_states(env: &AnyEnv, m: usize, seed: u64) -> Result<States> {
    if m == 0 {
        return Err(invalid!("m (the number of states) must be >= 1"));
    }
    let mut rng = state_stream(seed);
    Ok(match env {
        AnyEnv::MountainCar(e) => States::Points((0..m).map(|_| e.uniform_state(&mut rng)).collect()),
        AnyEnv::PuddleWorld(e) => States::Points((0..m).map(|_| e.uniform_state(&mut rng)).collect()),
        AnyEnv::Finite(e) => {
            let n = e.mdp().n_states() as u32;
            States::Indices((0..m).map(|_| random_below(n, &mut rng) as usize).collect())
        }
    })
}

/// `n` truncated returns of at most `length` steps from `state` (stream (seed, VALUE_ERROR_ROLLOUTS,
/// 0)), and the number of steps simulated: the rollout sampler on its own, for checks and speed.
pub fn sample_returns(
    env: &AnyEnv,
    policy: &AnyPolicy,
    state: &States,
    n: usize,
    length: usize,
    seed: u64,
) -> Result<(Vec<f64>, u64)> {
    if state.len() != 1 {
        return Err(invalid!("give exactly one start state, got {}", state.len()));
    }
    if length == 0 {
        return Err(invalid!("the rollout length must be >= 1"));
    }
    check_states(env, state)?;
    let mut rng = stream(seed, purpose::VALUE_ERROR_ROLLOUTS, 0);
    let mut count = RolloutCount::default();
    with_pair!(env, policy, |e, p| {
        let start = &StateKind::slice(state)?[0];
        let returns = (0..n).map(|_| truncated_return(e, p, start, length, &mut rng, &mut count)).collect();
        Ok((returns, count.steps))
    })
}

/// Linear TD(λ) on `features`, its predictions at `states` over training.
pub fn learning_curve(
    env: &AnyEnv,
    policy: &AnyPolicy,
    features: &AnyFeatures,
    states: &States,
    settings: TdSettings,
) -> Result<LearningCurve> {
    check_states(env, states)?;
    match (env, policy, features) {
        (AnyEnv::MountainCar(e), AnyPolicy::EnergyPumping(p), AnyFeatures::Tiles(f)) => {
            td_lambda(e, p, f, StateKind::slice(states)?, settings)
        }
        (AnyEnv::MountainCar(e), AnyPolicy::Uniform(p), AnyFeatures::Tiles(f)) => {
            td_lambda(e, p, f, StateKind::slice(states)?, settings)
        }
        (AnyEnv::PuddleWorld(e), AnyPolicy::Uniform(p), AnyFeatures::Tiles(f)) => {
            td_lambda(e, p, f, StateKind::slice(states)?, settings)
        }
        (AnyEnv::Finite(e), AnyPolicy::Uniform(p), AnyFeatures::OneHot(f)) if f.n_states == e.mdp().n_states() => {
            td_lambda(e.as_ref(), p, f, StateKind::slice(states)?, settings)
        }
        (AnyEnv::Finite(e), AnyPolicy::Tabular(p), AnyFeatures::OneHot(f))
            if f.n_states == e.mdp().n_states() && p.n_states() == f.n_states =>
        {
            td_lambda(e.as_ref(), p, f, StateKind::slice(states)?, settings)
        }
        (env, policy, _) => Err(invalid!(
            "these features and the policy {} do not fit {} (tiles: continuous domains; one-hot: a finite MDP of that size)",
            policy.describe(),
            env.name()
        )),
    }
}
