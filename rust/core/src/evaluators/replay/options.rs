//! The options of a replay evaluation and of its online truth, as keyword options
//! ([`crate::options::Options`]), and the evaluations they drive.

use super::{
    evaluate_runs, online_runs, Config, Dataset, EpisodeEnd, MBound, Method, MethodKind, MethodOptions, Outcome,
    PsrsOrder, Schedule, DEFAULT_MAX_STEPS,
};
use crate::envs::FiniteEnv;
use crate::error::Result;
use crate::invalid;
use crate::options::{unknown_key, Options, ParamValue};
use crate::stepper::Stepper;

/// `"start"`, `"terminal"` or an int horizon (>= 1 step).
fn episode_end(key: &str, value: &ParamValue) -> Result<EpisodeEnd> {
    match value {
        ParamValue::Text(kind) if kind == "start" || kind == "terminal" => EpisodeEnd::parse(kind, 0),
        ParamValue::Int(_) | ParamValue::UInt(_) => EpisodeEnd::parse("horizon", value.as_usize(key)?),
        other => Err(invalid!("episode_end must be 'start', 'terminal' or a horizon (int >= 1), got {other:?}")),
    }
}

/// A number, or `None` for an optional option left at its default (a front end omits the key).
fn count(key: &str, value: &ParamValue) -> Result<Option<usize>> {
    value.as_usize(key).map(Some)
}

/// The options of [`evaluate_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOptions {
    pub method: MethodKind,
    pub episode_end: EpisodeEnd,
    /// The discount of the reported returns; `None`: the agent's training discount.
    pub gamma: Option<f64>,
    pub seed: u64,
    pub runs: usize,
    /// The index of the first run (a worker process running a block of runs).
    pub first_run: usize,
    /// Worker threads (`None`: one per core).
    pub threads: Option<usize>,
    /// PSRS: the order of the emptiness check and the pop.
    pub psrs_order: Option<PsrsOrder>,
    /// Model: the longest simulated episode.
    pub max_steps: Option<usize>,
    /// PERS: M by a rule.
    pub m_rule: Option<MBound>,
    /// PERS: a fixed M.
    pub m_value: Option<f64>,
    pub max_length: Option<usize>,
    pub weighted: bool,
    pub max_episodes: Option<usize>,
    pub trace: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        Self {
            method: MethodKind::Queue,
            episode_end: EpisodeEnd::ReturnToStart,
            gamma: None,
            seed: 0,
            runs: 1,
            first_run: 0,
            threads: None,
            psrs_order: None,
            max_steps: None,
            m_rule: None,
            m_value: None,
            max_length: None,
            weighted: false,
            max_episodes: None,
            trace: false,
        }
    }
}

impl ReplayOptions {
    /// The evaluator with its PERS options.
    pub fn method(&self) -> Result<Method> {
        let options = MethodOptions {
            bound: self.m_rule,
            m_value: self.m_value,
            max_length: self.max_length,
            weighted: self.weighted,
            psrs_order: self.psrs_order,
            max_steps: self.max_steps,
        };
        Method::from_options(self.method, options)
    }
}

impl Options for ReplayOptions {
    const KEYS: &'static [&'static str] = &[
        "method",
        "episode_end",
        "gamma",
        "seed",
        "runs",
        "first_run",
        "threads",
        "psrs_order",
        "max_steps",
        "m_rule",
        "m_value",
        "max_length",
        "weighted",
        "max_episodes",
        "trace",
    ];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "method" => self.method = value.parse(key)?,
            "episode_end" => self.episode_end = episode_end(key, value)?,
            "gamma" => self.gamma = Some(value.as_f64(key)?),
            "seed" => self.seed = value.as_u64(key)?,
            "runs" => self.runs = value.as_usize(key)?,
            "first_run" => self.first_run = value.as_usize(key)?,
            "threads" => self.threads = count(key, value)?,
            "psrs_order" => self.psrs_order = Some(value.parse(key)?),
            "max_steps" => self.max_steps = count(key, value)?,
            "m_rule" => self.m_rule = Some(value.parse(key)?),
            "m_value" => self.m_value = Some(value.as_f64(key)?),
            "max_length" => self.max_length = count(key, value)?,
            "weighted" => self.weighted = value.as_bool(key)?,
            "max_episodes" => self.max_episodes = count(key, value)?,
            "trace" => self.trace = value.as_bool(key)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        if self.runs == 0 {
            return Err(invalid!("runs must be >= 1"));
        }
        self.method().map(|_| ())
    }
}

/// `options.runs` evaluations of the agent behind `stepper` on `data` ([`evaluate_runs`]), one
/// after the other when `sequential` (an agent that must stay on the calling thread).
pub fn evaluate_with(
    stepper: &Stepper,
    data: &Dataset,
    options: &ReplayOptions,
    sequential: bool,
) -> Result<Vec<Outcome>> {
    let config = Config {
        method: options.method()?,
        end: options.episode_end,
        gamma: options.gamma.unwrap_or(stepper.setting().gamma),
        max_episodes: options.max_episodes,
        trace: options.trace,
    };
    // The model uses every logged row, whatever the episode end (which applies to its own episodes).
    let episodes = match config.method {
        Method::Model { .. } => super::Episodes { ranges: Vec::new(), dropped_rows: 0, dropped_episode: None },
        _ => data.episodes(config.end)?,
    };
    let schedule = Schedule::new(sequential, options.threads);
    evaluate_runs(stepper, data, &episodes, &config, options.seed, options.first_run, options.runs, schedule)
}

/// The options of [`online_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct OnlineOptions {
    /// Episodes per run (required).
    pub n_episodes: usize,
    pub episode_end: EpisodeEnd,
    /// The discount of the returns; `None`: the agent's training discount.
    pub gamma: Option<f64>,
    /// An episode still running after this many steps is cut.
    pub max_steps: usize,
    pub seed: u64,
    pub runs: usize,
    /// The index of the first run (a worker process running a block of runs).
    pub first_run: usize,
    pub threads: Option<usize>,
}

impl Default for OnlineOptions {
    fn default() -> Self {
        Self {
            n_episodes: 0,
            episode_end: EpisodeEnd::ReturnToStart,
            gamma: None,
            max_steps: DEFAULT_MAX_STEPS,
            seed: 0,
            runs: 1,
            first_run: 0,
            threads: None,
        }
    }
}

impl Options for OnlineOptions {
    const KEYS: &'static [&'static str] =
        &["n_episodes", "episode_end", "gamma", "max_steps", "seed", "runs", "first_run", "threads"];
    const REQUIRED: &'static [&'static str] = &["n_episodes"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "n_episodes" => self.n_episodes = value.as_usize(key)?,
            "episode_end" => self.episode_end = episode_end(key, value)?,
            "gamma" => self.gamma = Some(value.as_f64(key)?),
            "max_steps" => self.max_steps = value.as_usize(key)?,
            "seed" => self.seed = value.as_u64(key)?,
            "runs" => self.runs = value.as_usize(key)?,
            "first_run" => self.first_run = value.as_usize(key)?,
            "threads" => self.threads = count(key, value)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        if self.runs == 0 {
            return Err(invalid!("runs must be >= 1"));
        }
        Ok(())
    }
}

/// `options.runs` online runs of the agent behind `stepper` on `env` ([`online_runs`]), each
/// episode from a start state drawn from the environment's start law: one row of
/// `options.n_episodes` returns per run.
pub fn online_with(
    stepper: &Stepper,
    env: &FiniteEnv,
    options: &OnlineOptions,
    sequential: bool,
) -> Result<Vec<Vec<f64>>> {
    let o = options;
    let gamma = o.gamma.unwrap_or(stepper.setting().gamma);
    let schedule = Schedule::new(sequential, o.threads);
    let (end, first) = (o.episode_end, o.first_run);
    online_runs(stepper, env, o.n_episodes, end, gamma, o.max_steps, o.seed, first, o.runs, schedule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> ParamValue {
        ParamValue::Text(s.into())
    }

    #[test]
    fn replay_options_read_every_key_and_refuse_bad_combinations() {
        let pairs = [
            ("method", text("pers")),
            ("episode_end", ParamValue::Int(20)),
            ("seed", ParamValue::UInt(u64::MAX)),
            ("runs", ParamValue::Int(4)),
            ("m_rule", text("per_step")),
            ("max_length", ParamValue::Int(50)),
        ];
        let o = ReplayOptions::from_pairs(pairs.iter().map(|(k, v)| (*k, v))).unwrap();
        assert_eq!(o.episode_end, EpisodeEnd::Horizon(20));
        assert_eq!((o.seed, o.runs), (u64::MAX, 4));
        assert!(matches!(o.method().unwrap(), Method::Pers(p) if p.bound == MBound::PerStep));
        let defaults = ReplayOptions::from_pairs([]).unwrap();
        assert_eq!(defaults, ReplayOptions::default());
        assert_eq!(defaults.method().unwrap(), Method::Queue);

        let err = |pairs: &[(&str, ParamValue)]| {
            ReplayOptions::from_pairs(pairs.iter().map(|(k, v)| (*k, v))).unwrap_err().to_string()
        };
        let e = err(&[("method", text("fifo"))]);
        assert!(e.contains("'queue', 'psrs', 'pers' or 'model'") && e.contains("fifo"), "{e}");
        let e = err(&[("method", text("queue")), ("weighted", ParamValue::Bool(true))]);
        assert!(e.contains("options of method 'pers', not 'queue'"), "{e}");
        let e = err(&[("method", text("pers")), ("m_rule", text("x"))]);
        assert!(e.contains("'policy', 'per_step', 'logging'"), "{e}");
        let e = err(&[("method", text("pers")), ("m_rule", text("logging")), ("m_value", ParamValue::Float(2.0))]);
        assert!(e.contains("not both"), "{e}");
        let e = err(&[("episode_end", text("horizon"))]);
        assert!(e.contains("episode_end must be 'start', 'terminal' or a horizon"), "{e}");
        let e = err(&[("episode_end", ParamValue::Int(0))]);
        assert!(e.contains("horizon must be >= 1"), "{e}");
        let e = err(&[("psrs_order", text("paper"))]);
        assert!(e.contains("psrs_order is an option of method 'psrs', not 'queue'"), "{e}");
        let e = err(&[("method", text("psrs")), ("psrs_order", text("pop_first"))]);
        assert!(e.contains("'check_first' or 'paper'"), "{e}");
        let e = err(&[("method", text("psrs")), ("max_steps", ParamValue::Int(5))]);
        assert!(e.contains("max_steps is an option of method 'model', not 'psrs'"), "{e}");
        let e = err(&[("runs", ParamValue::Int(0))]);
        assert!(e.contains("runs must be >= 1"), "{e}");
        let e = err(&[("metod", text("queue"))]);
        assert!(e.contains("unknown option 'metod'") && e.contains("method, episode_end"), "{e}");
    }

    #[test]
    fn online_options_need_the_number_of_episodes() {
        let e = OnlineOptions::from_pairs([]).unwrap_err().to_string();
        assert!(e.contains("missing option 'n_episodes'"), "{e}");
        let n = ParamValue::Int(5);
        let o = OnlineOptions::from_pairs([("n_episodes", &n)]).unwrap();
        assert_eq!((o.n_episodes, o.max_steps, o.runs, o.episode_end), (5, 1000, 1, EpisodeEnd::ReturnToStart));
    }

    #[test]
    fn method_kinds_parse_by_name() {
        for kind in [MethodKind::Queue, MethodKind::Psrs, MethodKind::Pers, MethodKind::Model] {
            assert_eq!(kind.name().parse::<MethodKind>().unwrap(), kind);
        }
        assert!("Queue".parse::<MethodKind>().is_err());
    }
}
