//! A log of transitions from a deployed (logging) policy, validated once, and its split into the
//! complete episodes of an episode-end rule.

use std::ops::Range;

use crate::error::{index_range, Result};
use crate::invalid;

/// Tolerance on a probability row's sum (logs written as text lose a few digits).
pub const SUM_TOLERANCE: f64 = 1e-6;
/// Tolerance between two rows of a stationary log that must give the same probabilities.
pub const STATIONARY_TOLERANCE: f64 = 1e-9;

/// One logged transition.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoggedStep {
    pub state: usize,
    pub action: usize,
    pub reward: f64,
    pub next_state: usize,
    /// The logged environment's terminal flag (false when the log has none).
    pub terminal: bool,
}

/// How an episode ends, chosen by the user of an evaluator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpisodeEnd {
    /// The walk comes back to the start state (Mandel et al.'s tabular setting).
    ReturnToStart,
    /// After a fixed number of steps.
    Horizon(usize),
    /// At a transition the log flags as terminal.
    Terminal,
}

impl EpisodeEnd {
    /// Whether the episode that started in `start` ends after its `steps_done`-th step, which led
    /// to `next_state`.
    #[inline]
    pub fn ends(self, steps_done: usize, next_state: usize, terminal: bool, start: usize) -> bool {
        match self {
            EpisodeEnd::ReturnToStart => next_state == start,
            EpisodeEnd::Horizon(h) => steps_done == h,
            EpisodeEnd::Terminal => terminal,
        }
    }

    /// Parses `"start"`, `"terminal"` or a horizon given as `horizon` (`kind == "horizon"`).
    pub fn parse(kind: &str, horizon: usize) -> Result<Self> {
        match kind {
            "start" => Ok(EpisodeEnd::ReturnToStart),
            "terminal" => Ok(EpisodeEnd::Terminal),
            "horizon" if horizon >= 1 => Ok(EpisodeEnd::Horizon(horizon)),
            "horizon" => Err(invalid!("an episode horizon must be >= 1 step, got {horizon}")),
            other => Err(invalid!("episode_end must be 'start', 'terminal' or a horizon (int >= 1), got '{other}'")),
        }
    }

    fn describe(self) -> String {
        match self {
            EpisodeEnd::ReturnToStart => "return to the start state".into(),
            EpisodeEnd::Horizon(h) => format!("a horizon of {h} steps"),
            EpisodeEnd::Terminal => "a terminal flag".into(),
        }
    }
}

/// The logging policy pi_e, as far as it is known.
#[derive(Clone, Debug, PartialEq)]
pub enum LoggingPolicy {
    /// Unknown: only the Queue evaluator can use the log.
    Unknown,
    /// Stationary: pi_e(a | s), an (S, A) table. A row of NaN is a state the log never visits
    /// (its probabilities are unknown).
    Table(Vec<f64>),
    /// The probabilities of every action at every logged row, (N, A): a policy that may depend on
    /// the history.
    PerRow(Vec<f64>),
}

impl LoggingPolicy {
    /// `"unknown"`, `"table"` or `"per_row"`.
    pub fn kind(&self) -> &'static str {
        match self {
            LoggingPolicy::Unknown => "unknown",
            LoggingPolicy::Table(_) => "table",
            LoggingPolicy::PerRow(_) => "per_row",
        }
    }
}

impl<'a> LoggingInput<'a> {
    /// The logging policy given as a stationary (S, A) `table`, as `rows` of probabilities (N, A)
    /// (`stationary`: the same for every visit of a state), or neither (unknown); not both.
    pub fn from_options(table: Option<&'a [f64]>, rows: Option<&'a [f64]>, stationary: bool) -> Result<Self> {
        match (table, rows) {
            (Some(_), Some(_)) => Err(invalid!("give the logging policy as a table or per row, not both")),
            (Some(t), None) => Ok(LoggingInput::Table(t)),
            (None, Some(r)) => Ok(LoggingInput::PerRow { probabilities: r, stationary }),
            (None, None) => Ok(LoggingInput::Unknown),
        }
    }
}

/// The logging policy as given by the caller, before validation.
pub enum LoggingInput<'a> {
    Unknown,
    Table(&'a [f64]),
    PerRow { probabilities: &'a [f64], stationary: bool },
}

/// The columns of a log, in (episode, t) order.
pub struct LogColumns<'a> {
    pub episode: &'a [i64],
    pub t: &'a [i64],
    pub state: &'a [i64],
    pub action: &'a [i64],
    pub reward: &'a [f64],
    pub next_state: &'a [i64],
    pub terminal: Option<&'a [bool]>,
}

/// A validated log.
#[derive(Clone, Debug)]
pub struct Dataset {
    n_states: usize,
    n_actions: usize,
    /// The one start state every episode must start in, or `None`: the log's own start states.
    start_state: Option<usize>,
    steps: Vec<LoggedStep>,
    /// Row ranges of the logged episodes, in log order.
    episodes: Vec<Range<usize>>,
    episode_ids: Vec<i64>,
    has_terminal: bool,
    logging: LoggingPolicy,
}

/// The complete episodes of a log under an episode-end rule.
#[derive(Clone, Debug, PartialEq)]
pub struct Episodes {
    pub ranges: Vec<Range<usize>>,
    /// Rows of a trailing incomplete episode that were left out (0 if none).
    pub dropped_rows: usize,
    /// The id of that episode.
    pub dropped_episode: Option<i64>,
}

impl Episodes {
    /// The number of logged transitions in complete episodes.
    pub fn n_rows(&self) -> usize {
        self.ranges.iter().map(|r| r.len()).sum()
    }
}

fn index(value: i64, bound: usize, what: &str, row: usize, episode: i64, t: i64) -> Result<usize> {
    if value < 0 || value as u64 >= bound as u64 {
        return Err(invalid!(
            "row {row} (episode {episode}, t {t}): {what} {value} is out of range: allowed {}",
            index_range(bound)
        ));
    }
    Ok(value as usize)
}

/// Checks one probability row: finite entries in [0, 1] summing to 1.
pub(super) fn check_row(row: &[f64], what: &dyn Fn() -> String) -> Result<()> {
    if let Some(p) = row.iter().find(|p| !(p.is_finite() && (0.0..=1.0).contains(*p))) {
        return Err(invalid!("{}: probability {p} is outside [0, 1]", what()));
    }
    let sum: f64 = row.iter().sum();
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(invalid!("{}: probabilities sum to {sum}, not 1", what()));
    }
    Ok(())
}

impl Dataset {
    /// Validates a log: ids in range, episodes contiguous with t = 0, 1, ... and each step
    /// starting where the previous one ended, every episode starting in `start_state` when one is
    /// given (`None`: episodes start where the log says, and replay uses those starts), and the
    /// logging policy (probabilities in [0, 1] summing to 1, the logged action possible under it,
    /// the rows of a stationary log agreeing state by state).
    pub fn new(
        n_states: usize,
        n_actions: usize,
        start_state: Option<usize>,
        columns: LogColumns<'_>,
        logging: LoggingInput<'_>,
    ) -> Result<Self> {
        if n_states == 0 || n_actions == 0 {
            return Err(invalid!("n_states and n_actions must be >= 1, got {n_states} and {n_actions}"));
        }
        if let Some(start_state) = start_state.filter(|&s| s >= n_states) {
            return Err(invalid!("start_state {start_state} is out of range: allowed {}", index_range(n_states)));
        }
        let n = columns.episode.len();
        let lengths = [columns.t.len(), columns.state.len(), columns.action.len(), columns.reward.len()];
        if lengths.iter().chain([&columns.next_state.len()]).any(|&l| l != n)
            || columns.terminal.is_some_and(|t| t.len() != n)
        {
            return Err(invalid!("the log's columns have different lengths"));
        }
        if n == 0 {
            return Err(invalid!("the log has no rows"));
        }
        let mut steps = Vec::with_capacity(n);
        let mut episodes: Vec<Range<usize>> = Vec::new();
        let mut episode_ids = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in 0..n {
            let (e, t) = (columns.episode[i], columns.t[i]);
            let state = index(columns.state[i], n_states, "state", i, e, t)?;
            let action = index(columns.action[i], n_actions, "action", i, e, t)?;
            let next_state = index(columns.next_state[i], n_states, "next_state", i, e, t)?;
            let reward = columns.reward[i];
            if !reward.is_finite() {
                return Err(invalid!("row {i} (episode {e}, t {t}): reward {reward} is not finite"));
            }
            let new_episode = i == 0 || columns.episode[i - 1] != e;
            if new_episode {
                if !seen.insert(e) {
                    return Err(invalid!("the rows of episode {e} are not contiguous: sort the log by episode and t"));
                }
                if let Some(start) = start_state.filter(|&s| s != state) {
                    return Err(invalid!(
                        "episode {e} starts in state {state}, not in the start state {start} (give no start state to \
                         replay from the log's own start states)"
                    ));
                }
                episodes.push(i..i + 1);
                episode_ids.push(e);
            } else {
                episodes.last_mut().expect("opened above").end = i + 1;
                let previous: &LoggedStep = steps.last().expect("not the first row");
                if previous.next_state != state {
                    return Err(invalid!(
                        "episode {e}, t {t}: starts in state {state} but the previous step ended in state {}",
                        previous.next_state
                    ));
                }
            }
            let expected = (i - episodes.last().expect("opened above").start) as i64;
            if t != expected {
                return Err(invalid!(
                    "episode {e}: expected t = {expected}, got t = {t} (t counts 0, 1, ... per episode)"
                ));
            }
            let terminal = columns.terminal.is_some_and(|flags| flags[i]);
            steps.push(LoggedStep { state, action, reward, next_state, terminal });
        }
        let logging = Self::logging_policy(n_states, n_actions, &steps, logging)?;
        Ok(Self {
            n_states,
            n_actions,
            start_state,
            steps,
            episodes,
            episode_ids,
            has_terminal: columns.terminal.is_some(),
            logging,
        })
    }

    fn logging_policy(
        n_states: usize,
        n_actions: usize,
        steps: &[LoggedStep],
        input: LoggingInput<'_>,
    ) -> Result<LoggingPolicy> {
        let a = n_actions;
        let zero_mass = |row: usize, step: &LoggedStep| {
            invalid!(
                "row {row}: the logged action {} has probability 0 under the logging policy in state {}",
                step.action,
                step.state
            )
        };
        match input {
            LoggingInput::Unknown => Ok(LoggingPolicy::Unknown),
            LoggingInput::Table(table) => {
                if table.len() != n_states * a {
                    return Err(invalid!(
                        "the logging policy table has {} entries, expected n_states x n_actions = {}",
                        table.len(),
                        n_states * a
                    ));
                }
                for s in 0..n_states {
                    check_row(&table[s * a..(s + 1) * a], &|| format!("logging policy, state {s}"))?;
                }
                for (i, step) in steps.iter().enumerate() {
                    if table[step.state * a + step.action] == 0.0 {
                        return Err(zero_mass(i, step));
                    }
                }
                Ok(LoggingPolicy::Table(table.to_vec()))
            }
            LoggingInput::PerRow { probabilities, stationary } => {
                if probabilities.len() != steps.len() * a {
                    return Err(invalid!(
                        "the per-row logging probabilities have {} entries, expected rows x n_actions = {}",
                        probabilities.len(),
                        steps.len() * a
                    ));
                }
                for (i, step) in steps.iter().enumerate() {
                    let row = &probabilities[i * a..(i + 1) * a];
                    check_row(row, &|| format!("row {i}: logging probabilities"))?;
                    if row[step.action] == 0.0 {
                        return Err(zero_mass(i, step));
                    }
                }
                if !stationary {
                    return Ok(LoggingPolicy::PerRow(probabilities.to_vec()));
                }
                let mut table = vec![f64::NAN; n_states * a];
                let mut first_row = vec![usize::MAX; n_states];
                for (i, step) in steps.iter().enumerate() {
                    let (row, s) = (&probabilities[i * a..(i + 1) * a], step.state);
                    let known = &mut table[s * a..(s + 1) * a];
                    if first_row[s] == usize::MAX {
                        known.copy_from_slice(row);
                        first_row[s] = i;
                    } else if known.iter().zip(row).any(|(x, y)| (x - y).abs() > STATIONARY_TOLERANCE) {
                        return Err(invalid!(
                            "state {s}: rows {} and {i} give different logging probabilities ({known:?} vs {row:?}) \
                             in a stationary log (pass stationary=False if the policy depends on more than the state)",
                            first_row[s]
                        ));
                    }
                }
                Ok(LoggingPolicy::Table(table))
            }
        }
    }

    pub fn n_states(&self) -> usize {
        self.n_states
    }
    pub fn n_actions(&self) -> usize {
        self.n_actions
    }
    /// The fixed start state, or `None` when replay starts where the log's episodes start.
    pub fn start_state(&self) -> Option<usize> {
        self.start_state
    }
    /// The episode id and step counter `t` of every row.
    pub fn episode_and_t(&self) -> (Vec<i64>, Vec<i64>) {
        let (mut ids, mut t) = (Vec::with_capacity(self.steps.len()), Vec::with_capacity(self.steps.len()));
        for (range, &id) in self.episodes.iter().zip(&self.episode_ids) {
            ids.extend(std::iter::repeat_n(id, range.len()));
            t.extend(0..range.len() as i64);
        }
        (ids, t)
    }
    /// The start state of every logged episode (complete or not), in log order.
    pub fn logged_starts(&self) -> Vec<usize> {
        self.episodes.iter().map(|r| self.start_of(r)).collect()
    }
    /// The state the episode of rows `range` starts in.
    #[inline]
    pub fn start_of(&self, range: &Range<usize>) -> usize {
        self.steps[range.start].state
    }
    pub fn steps(&self) -> &[LoggedStep] {
        &self.steps
    }
    pub fn logging(&self) -> &LoggingPolicy {
        &self.logging
    }
    /// The number of logged episodes (complete or not).
    pub fn n_episodes(&self) -> usize {
        self.episodes.len()
    }

    /// pi_e(. | the state of row `row`): the table's row or the row's own probabilities. `None`
    /// when the policy is unknown.
    #[inline]
    pub fn logging_row(&self, row: usize) -> Option<&[f64]> {
        let a = self.n_actions;
        match &self.logging {
            LoggingPolicy::Unknown => None,
            LoggingPolicy::Table(t) => {
                let s = self.steps[row].state;
                Some(&t[s * a..(s + 1) * a])
            }
            LoggingPolicy::PerRow(p) => Some(&p[row * a..(row + 1) * a]),
        }
    }

    /// The complete episodes under `end`. An episode that ends (under `end`) before its last
    /// row is an error; an episode that has not ended by its last row is incomplete: dropped if it
    /// is the log's last episode (a trailing partial episode, which would bias PSRS), an error
    /// otherwise.
    pub fn episodes(&self, end: EpisodeEnd) -> Result<Episodes> {
        if end == EpisodeEnd::Terminal && !self.has_terminal {
            return Err(invalid!("episode_end='terminal' needs a 'terminal' column in the log"));
        }
        let mut out =
            Episodes { ranges: Vec::with_capacity(self.episodes.len()), dropped_rows: 0, dropped_episode: None };
        let last = self.episodes.len() - 1;
        for (k, range) in self.episodes.iter().enumerate() {
            let id = self.episode_ids[k];
            let (mut ended, start) = (false, self.start_of(range));
            for (t, step) in self.steps[range.clone()].iter().enumerate() {
                if ended {
                    return Err(invalid!(
                        "episode {id} ends at t = {} under {} but has more rows",
                        t - 1,
                        end.describe()
                    ));
                }
                ended = end.ends(t + 1, step.next_state, step.terminal, start);
            }
            if ended {
                out.ranges.push(range.clone());
            } else if k == last {
                out.dropped_rows = range.len();
                out.dropped_episode = Some(id);
            } else {
                return Err(invalid!(
                    "episode {id} is incomplete under {} (and is not the log's last)",
                    end.describe()
                ));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of (episode, state, action, next_state) rows with t counted per episode.
    pub(crate) fn log(rows: &[(i64, i64, i64, i64)], s: usize, a: usize, logging: LoggingInput<'_>) -> Result<Dataset> {
        let mut t = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            t.push(if i > 0 && rows[i - 1].0 == r.0 { t[i - 1] + 1 } else { 0 });
        }
        let col = |f: fn(&(i64, i64, i64, i64)) -> i64| rows.iter().map(f).collect::<Vec<_>>();
        let (e, st, ac, ns) = (col(|r| r.0), col(|r| r.1), col(|r| r.2), col(|r| r.3));
        let reward = vec![0.0; rows.len()];
        let columns = LogColumns {
            episode: &e,
            t: &t,
            state: &st,
            action: &ac,
            reward: &reward,
            next_state: &ns,
            terminal: None,
        };
        Dataset::new(s, a, Some(0), columns, logging)
    }

    #[test]
    fn validation_names_the_problem() {
        let uniform = [0.5; 4];
        let err = |rows: &[(i64, i64, i64, i64)], logging| log(rows, 2, 2, logging).unwrap_err().to_string();
        assert!(
            err(&[(0, 0, 2, 1)], LoggingInput::Table(&uniform)).contains("action 2 is out of range: allowed 0 to 1")
        );
        assert!(err(&[(0, 0, 0, 5)], LoggingInput::Table(&uniform)).contains("next_state 5 is out of range"));
        assert!(err(&[(0, 1, 0, 0)], LoggingInput::Table(&uniform)).contains("starts in state 1"));
        assert!(err(&[(0, 0, 0, 1), (0, 0, 0, 0)], LoggingInput::Table(&uniform)).contains("previous step ended"));
        assert!(err(&[(0, 0, 0, 0), (1, 0, 0, 0), (0, 0, 0, 0)], LoggingInput::Unknown).contains("not contiguous"));
        assert!(err(&[(0, 0, 0, 0)], LoggingInput::Table(&[1.2, -0.2, 0.5, 0.5])).contains("outside [0, 1]"));
        assert!(err(&[(0, 0, 0, 0)], LoggingInput::Table(&[0.6, 0.6, 0.5, 0.5])).contains("sum to"));
        assert!(err(&[(0, 0, 1, 0)], LoggingInput::Table(&[1.0, 0.0, 0.5, 0.5])).contains("probability 0"));
        let per_row = [0.5, 0.5, 0.7, 0.3];
        let stationary = LoggingInput::PerRow { probabilities: &per_row, stationary: true };
        assert!(err(&[(0, 0, 0, 0), (1, 0, 0, 0)], stationary).contains("different logging probabilities"));
        let free = LoggingInput::PerRow { probabilities: &per_row, stationary: false };
        assert!(log(&[(0, 0, 0, 0), (1, 0, 0, 0)], 2, 2, free).is_ok());
    }

    #[test]
    fn trailing_partial_episode_is_dropped_and_others_are_errors() {
        let uniform = [0.5; 4];
        // Episodes: 0 -> 1 -> 0 (complete), 0 -> 1 (no return yet: trailing, dropped).
        let d = log(&[(0, 0, 0, 1), (0, 1, 1, 0), (1, 0, 0, 1)], 2, 2, LoggingInput::Table(&uniform)).unwrap();
        let e = d.episodes(EpisodeEnd::ReturnToStart).unwrap();
        assert_eq!((e.ranges.len(), e.ranges[0].clone(), e.dropped_rows, e.dropped_episode), (1, 0..2, 1, Some(1)));
        // Under a horizon of 1, the first episode goes on after its end.
        assert!(d.episodes(EpisodeEnd::Horizon(1)).unwrap_err().to_string().contains("has more rows"));
        let e = d.episodes(EpisodeEnd::Horizon(2)).unwrap();
        assert_eq!(e.dropped_rows, 1);
        let d = log(&[(0, 0, 0, 1), (1, 0, 0, 0)], 2, 2, LoggingInput::Table(&uniform)).unwrap();
        assert!(d.episodes(EpisodeEnd::ReturnToStart).unwrap_err().to_string().contains("episode 0 is incomplete"));
        assert!(d.episodes(EpisodeEnd::Terminal).unwrap_err().to_string().contains("'terminal' column"));
    }
}
