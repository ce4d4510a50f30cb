//! The queue evaluator (Mandel et al. 2016, Algorithm 1): one queue of logged (reward, next state)
//! per (state, action), in a random order; the agent acts, the evaluator pops. By the Markov
//! property a popped outcome has the environment's law given (state, action) and the history, so
//! every emitted step is distributed as online. The logging policy need not be known.

use rand::seq::SliceRandom;

use super::starts::Starts;
use super::{Config, Dataset, EpisodeReturn, Episodes, Outcome, StopReason};
use crate::agent::Transition;
use crate::error::Result;
use crate::rng::Rng;
use crate::stepper::Stepper;

/// Rows grouped by a key, each group in a random order: `order[offsets[k]..offsets[k + 1]]`.
pub(super) struct Buckets {
    pub order: Vec<usize>,
    pub offsets: Vec<usize>,
}

impl Buckets {
    /// Groups the rows of `episodes` by `key(row)` in `0..n_keys` and shuffles every group with
    /// the one stream `rng` (groups of equal size get independent orders).
    pub fn new(episodes: &Episodes, n_keys: usize, key: impl Fn(usize) -> usize, rng: &mut Rng) -> Self {
        let mut offsets = vec![0usize; n_keys + 1];
        for range in &episodes.ranges {
            for row in range.clone() {
                offsets[key(row) + 1] += 1;
            }
        }
        for k in 0..n_keys {
            offsets[k + 1] += offsets[k];
        }
        let mut fill = offsets.clone();
        let mut order = vec![0usize; offsets[n_keys]];
        for range in &episodes.ranges {
            for row in range.clone() {
                let k = key(row);
                order[fill[k]] = row;
                fill[k] += 1;
            }
        }
        for k in 0..n_keys {
            order[offsets[k]..offsets[k + 1]].shuffle(rng);
        }
        Self { order, offsets }
    }
}

pub(super) fn run(
    stepper: &mut Stepper,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    rng: &mut Rng,
) -> Result<Outcome> {
    let n_actions = data.n_actions();
    let steps = data.steps();
    let queues = Buckets::new(
        episodes,
        data.n_states() * n_actions,
        |row| steps[row].state * n_actions + steps[row].action,
        rng,
    );
    let mut starts = Starts::new(data, episodes, rng);
    let mut cursor = queues.offsets.clone();
    let mut out = Outcome::new(StopReason::MaxEpisodes);
    if config.trace {
        out.trace.reserve(episodes.n_rows());
    }
    let trace_start = |out: &Outcome| out.trace.len();
    loop {
        if config.max_episodes.is_some_and(|m| out.returns.len() >= m) {
            out.stop = StopReason::MaxEpisodes;
            return Ok(out);
        }
        let Some(start) = starts.pop() else {
            out.stop = StopReason::StartsExhausted;
            return Ok(out);
        };
        let first_traced = trace_start(&out);
        stepper.start_episode(start)?;
        let mut state = start;
        let mut episode = EpisodeReturn::new();
        loop {
            let action = stepper.act(state)?;
            let key = state * n_actions + action;
            if cursor[key] == queues.offsets[key + 1] {
                // The partial episode is not emitted.
                out.trace.truncate(first_traced);
                out.stop = StopReason::EmptyQueue { state, action };
                return Ok(out);
            }
            let logged = steps[queues.order[cursor[key]]];
            cursor[key] += 1;
            out.tuples_used += 1;
            out.proposals += 1;
            out.accepted += 1;
            let transition = Transition { state, action, reward: logged.reward, next_state: logged.next_state };
            stepper.observe(transition)?;
            if config.trace {
                out.trace.push((out.returns.len(), transition));
            }
            episode.add(logged.reward, config.gamma);
            if config.end.ends(episode.steps, logged.next_state, logged.terminal, start) {
                break;
            }
            state = logged.next_state;
        }
        out.returns.push(episode.total);
        out.lengths.push(episode.steps);
    }
}
