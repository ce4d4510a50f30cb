//! Offline evaluation of online learners from logged data (Mandel, Liu, Brunskill & Popović 2016):
//! how would an agent have *learned*, episode after episode, had it been deployed instead of the
//! policy that wrote the log?
//!
//! Three evaluators feed the agent, through its [`Stepper`], only transitions with the law it would
//! meet online given its history (each stops when the data can no longer guarantee that):
//! - [`Method::Queue`]: one queue of logged outcomes per (state, action); the agent acts, the
//!   evaluator pops. The logging policy need not be known.
//! - [`Method::Psrs`]: one stream of logged (action, outcome) per state, rejection-sampled to the
//!   agent's revealed action distribution (per-pop acceptance 1/M). The emptiness check comes
//!   before the pop (the paper's listing pops first, which throws the last tuple away).
//! - [`Method::Pers`]: whole logged episodes, rejection-sampled at the episode level; a rejected
//!   episode rolls the agent back ([`Stepper::restore`]). With a fixed M the number of accepted
//!   episodes is Binomial(N, 1/M) and the importance-weighted estimate is unbiased.
//! - [`Method::Model`]: the model-based baseline the paper argues against: the maximum-likelihood
//!   MDP of the log, on which the agent runs online for a given number of episodes. It never
//!   stops for want of data, and nothing guarantees its transitions have the online law.
//!
//! Episodes start in the log's fixed start state, or, for a log whose episodes start in several
//! states, in the logged start states taken in a random order ([`starts`]).
//!
//! Randomness: the evaluator's own stream (shuffles, uniforms) is separate from the agent's, so
//! the same seed gives the same run whatever the thread count.

mod binomial;
mod collect;
mod dataset;
mod episode_m;
mod model;
mod online;
mod options;
mod pers;
mod psrs;
mod queue;
mod runs;
mod starts;

pub use binomial::{binomial_sf, binomial_survival, ln_factorial};
pub use collect::collect;
pub use dataset::{Dataset, EpisodeEnd, Episodes, LogColumns, LoggedStep, LoggingInput, LoggingPolicy};
pub use episode_m::{episode_bound, MBound};
pub use model::{mle_model, UNVISITED_RULE};
pub use online::online_returns;
pub use options::{evaluate_with, online_with, OnlineOptions, ReplayOptions};
pub use runs::{evaluate_runs, online_runs, Schedule};

use crate::agent::Transition;
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// The three evaluators by name, before their options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MethodKind {
    #[default]
    Queue,
    Psrs,
    Pers,
    Model,
}

impl MethodKind {
    pub fn name(self) -> &'static str {
        match self {
            MethodKind::Queue => "queue",
            MethodKind::Psrs => "psrs",
            MethodKind::Pers => "pers",
            MethodKind::Model => "model",
        }
    }
}

impl std::str::FromStr for MethodKind {
    type Err = crate::error::BbrlError;

    /// `"queue"`, `"psrs"`, `"pers"` or `"model"`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "queue" => Ok(MethodKind::Queue),
            "psrs" => Ok(MethodKind::Psrs),
            "pers" => Ok(MethodKind::Pers),
            "model" => Ok(MethodKind::Model),
            other => Err(invalid!("method must be 'queue', 'psrs', 'pers' or 'model', got '{other}'")),
        }
    }
}

/// The order of PSRS's two steps at a state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PsrsOrder {
    /// Check that the stream is not empty, then pop (every logged row can be used).
    #[default]
    CheckFirst,
    /// The paper's listing (Algorithm 2, lines 9 and 10): pop, then stop if the stream became
    /// empty, throwing the popped row away. Kept to compare with the paper.
    Paper,
}

impl std::str::FromStr for PsrsOrder {
    type Err = crate::error::BbrlError;

    /// `"check_first"` or `"paper"`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "check_first" => Ok(PsrsOrder::CheckFirst),
            "paper" => Ok(PsrsOrder::Paper),
            other => Err(invalid!("psrs_order must be 'check_first' or 'paper', got '{other}'")),
        }
    }
}

/// The options of every method before they are checked against the method.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MethodOptions {
    /// PERS: M by a rule.
    pub bound: Option<MBound>,
    /// PERS: a fixed M.
    pub m_value: Option<f64>,
    /// PERS: the longest possible episode.
    pub max_length: Option<usize>,
    /// PERS: the importance-weighted estimates.
    pub weighted: bool,
    /// PSRS: the order of the emptiness check and the pop.
    pub psrs_order: Option<PsrsOrder>,
    /// Model: the longest simulated episode (steps).
    pub max_steps: Option<usize>,
}

impl Method {
    /// The method `kind` with its `options`; an option of another method is an error.
    pub fn from_options(kind: MethodKind, options: MethodOptions) -> Result<Self> {
        let o = options;
        let pers_only = o.bound.is_some() || o.m_value.is_some() || o.max_length.is_some() || o.weighted;
        if pers_only && kind != MethodKind::Pers {
            return Err(invalid!("m, max_length and weighted are options of method 'pers', not '{}'", kind.name()));
        }
        if o.psrs_order.is_some() && kind != MethodKind::Psrs {
            return Err(invalid!("psrs_order is an option of method 'psrs', not '{}'", kind.name()));
        }
        if o.max_steps.is_some() && kind != MethodKind::Model {
            return Err(invalid!("max_steps is an option of method 'model', not '{}'", kind.name()));
        }
        match kind {
            MethodKind::Queue => Ok(Method::Queue),
            MethodKind::Psrs => Ok(Method::Psrs(o.psrs_order.unwrap_or_default())),
            MethodKind::Model => match o.max_steps {
                Some(0) => Err(invalid!("max_steps must be >= 1 step")),
                steps => Ok(Method::Model { max_steps: steps.unwrap_or(DEFAULT_MAX_STEPS) }),
            },
            MethodKind::Pers => {
                let bound = match (o.bound, o.m_value) {
                    (Some(_), Some(_)) => return Err(invalid!("give M either as a rule or as a number, not both")),
                    (_, Some(m)) => MBound::Fixed(m),
                    (Some(rule), None) => rule,
                    (None, None) if o.weighted => MBound::Logging,
                    (None, None) => MBound::Policy,
                };
                if o.max_length == Some(0) {
                    return Err(invalid!("max_length must be >= 1 step"));
                }
                Ok(Method::Pers(PersOptions { bound, max_length: o.max_length, weighted: o.weighted }))
            }
        }
    }
}

/// The longest episode of an online run (and of the model-based evaluator) by default, in steps.
pub const DEFAULT_MAX_STEPS: usize = 1000;

/// Options of per-episode rejection sampling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PersOptions {
    /// How M is obtained.
    pub bound: MBound,
    /// The longest possible episode, needed by the computed bounds when episodes do not have a
    /// fixed horizon.
    pub max_length: Option<usize>,
    /// Also compute the importance-weighted (unbiased) per-episode estimates; needs a fixed M.
    pub weighted: bool,
}

/// An evaluator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    Queue,
    Psrs(PsrsOrder),
    Pers(PersOptions),
    /// The maximum-likelihood model of the log, run online; an episode still running after
    /// `max_steps` steps is cut there.
    Model {
        max_steps: usize,
    },
}

/// What an evaluation needs besides the agent and the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    pub method: Method,
    pub end: EpisodeEnd,
    /// The discount of the reported returns.
    pub gamma: f64,
    /// Stop after this many emitted episodes (required by the model-based evaluator).
    pub max_episodes: Option<usize>,
    /// Record every transition fed to the agent in emitted episodes.
    pub trace: bool,
}

/// Why an evaluation stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Queue: the agent chose an action whose queue was empty.
    EmptyQueue { state: usize, action: usize },
    /// PSRS: the walk reached a state whose stream was empty.
    EmptyStream { state: usize },
    /// PERS: every logged episode was proposed.
    DataExhausted,
    /// The requested number of episodes was emitted.
    MaxEpisodes,
    /// Queue, PSRS: every logged start state was used (logs replayed from their own starts).
    StartsExhausted,
}

impl StopReason {
    /// A short tag (`empty_queue`, `empty_stream`, `data_exhausted`, `max_episodes`,
    /// `starts_exhausted`).
    pub fn tag(&self) -> &'static str {
        match self {
            StopReason::EmptyQueue { .. } => "empty_queue",
            StopReason::EmptyStream { .. } => "empty_stream",
            StopReason::DataExhausted => "data_exhausted",
            StopReason::MaxEpisodes => "max_episodes",
            StopReason::StartsExhausted => "starts_exhausted",
        }
    }

    /// A sentence for people.
    pub fn describe(&self) -> String {
        match self {
            StopReason::EmptyQueue { state, action } => {
                format!("the queue of state {state}, action {action} was empty")
            }
            StopReason::EmptyStream { state } => format!("the stream of state {state} was empty"),
            StopReason::DataExhausted => "every logged episode was proposed".into(),
            StopReason::MaxEpisodes => "the requested number of episodes was reached".into(),
            StopReason::StartsExhausted => "every logged start state was used".into(),
        }
    }
}

/// The result of one evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The discounted return of each emitted episode, in order.
    pub returns: Vec<f64>,
    /// The number of steps of each emitted episode.
    pub lengths: Vec<usize>,
    /// Logged transitions consumed: popped (Queue, PSRS, accepted or not) or proposed (PERS).
    pub tuples_used: usize,
    /// Queue: pops; PSRS: pops; PERS: proposed episodes.
    pub proposals: usize,
    /// PSRS: accepted pops; PERS: accepted episodes; Queue: pops.
    pub accepted: usize,
    pub stop: StopReason,
    /// PERS: the M each proposal was tested against.
    pub m_values: Vec<f64>,
    /// PERS with `weighted`: R(T) / P(Binomial(N, 1/M) >= T) for T <= accepted, 0 up to N.
    pub weighted: Option<Vec<f64>>,
    /// With `trace`: (emitted episode index, transition) of every step of the emitted episodes.
    pub trace: Vec<(usize, Transition)>,
}

impl Outcome {
    fn new(stop: StopReason) -> Self {
        Self {
            returns: Vec::new(),
            lengths: Vec::new(),
            tuples_used: 0,
            proposals: 0,
            accepted: 0,
            stop,
            m_values: Vec::new(),
            weighted: None,
            trace: Vec::new(),
        }
    }
}

/// Runs one evaluation of the agent behind `stepper` (trained, task not yet started) on the
/// complete `episodes` of `data`, with the evaluator's stream `rng`.
pub fn evaluate(
    stepper: &mut Stepper,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    rng: &mut Rng,
) -> Result<Outcome> {
    if (stepper.n_states(), stepper.n_actions()) != (data.n_states(), data.n_actions()) {
        return Err(invalid!(
            "the agent was trained for {} states and {} actions; the log has {} and {}",
            stepper.n_states(),
            stepper.n_actions(),
            data.n_states(),
            data.n_actions()
        ));
    }
    if !(0.0..=1.0).contains(&config.gamma) {
        return Err(invalid!("gamma must be in [0, 1], got {}", config.gamma));
    }
    if config.max_episodes == Some(0) {
        return Err(invalid!("max_episodes must be >= 1 (or None), got 0"));
    }
    let model = matches!(config.method, Method::Model { .. });
    if model && config.max_episodes.is_none() {
        return Err(invalid!("method 'model' never runs out of data: give max_episodes"));
    }
    // The model uses every logged row, complete episode or not.
    if !model && episodes.ranges.is_empty() {
        return Err(invalid!("the log has no complete episode under the chosen episode end"));
    }
    let needs_policy = matches!(config.method, Method::Psrs(_) | Method::Pers(_));
    if needs_policy && *data.logging() == LoggingPolicy::Unknown {
        return Err(invalid!(
            "PSRS and PERS need the logging policy's probabilities; only 'queue' and 'model' work without"
        ));
    }
    stepper.start_task()?;
    match config.method {
        Method::Queue => queue::run(stepper, data, episodes, config, rng),
        Method::Psrs(order) => psrs::run(stepper, data, episodes, config, order, rng),
        Method::Pers(options) => pers::run(stepper, data, episodes, config, &options, rng),
        Method::Model { max_steps } => model::run(stepper, data, config, max_steps, rng),
    }
}

/// Checks an agent's revealed distribution at `state`: finite entries in [0, 1] summing to 1.
fn check_candidate(pb: &[f64], state: usize) -> Result<()> {
    let sum: f64 = pb.iter().sum();
    if pb.iter().any(|p| !(p.is_finite() && (0.0..=1.0).contains(p))) || (sum - 1.0).abs() > dataset::SUM_TOLERANCE {
        return Err(invalid!("the agent's action probabilities in state {state} are not a distribution: {pb:?}"));
    }
    Ok(())
}

/// max_a pb(a) / pe(a), the rejection-sampling bound at one state. An action the candidate may
/// take but the logging policy never takes is a support violation: the replay could never show
/// the agent its consequences, so every estimate would be silently biased.
fn ratio_bound(pb: &[f64], pe: &[f64], state: usize) -> Result<f64> {
    let mut m: f64 = 0.0;
    for (a, (&b, &e)) in pb.iter().zip(pe).enumerate() {
        if b > 0.0 {
            if e.is_nan() {
                return Err(invalid!("the logging policy is unknown in state {state} (the log never visits it)"));
            }
            if e <= 0.0 {
                return Err(invalid!(
                    "support violation: the agent gives probability {b} to action {a} in state {state}, which the \
                     logging policy never takes"
                ));
            }
            m = m.max(b / e);
        }
    }
    Ok(m)
}

/// The running return of the episode being built.
struct EpisodeReturn {
    total: f64,
    discount: f64,
    steps: usize,
}

impl EpisodeReturn {
    fn new() -> Self {
        Self { total: 0.0, discount: 1.0, steps: 0 }
    }
    #[inline]
    fn add(&mut self, reward: f64, gamma: f64) {
        self.total += self.discount * reward;
        self.discount *= gamma;
        self.steps += 1;
    }
}

#[cfg(test)]
mod tests;
