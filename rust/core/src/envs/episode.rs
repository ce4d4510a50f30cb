//! [`Episode`]: one episode at a time on any [`Env`], with its current state, its step count and
//! its own stream: what a front end steps by hand (`reset`, `step`), where the evaluators pass
//! the state themselves.

use std::sync::Arc;

use super::Env;
use crate::error::{index_range, Result};
use crate::invalid;
use crate::rng::{purpose, stream, Rng};

/// What [`Episode::step`] returns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpisodeStep<S> {
    pub next_state: S,
    pub reward: f64,
    /// The step reached an absorbing state (the environment's terminal flag).
    pub terminated: bool,
    /// The time limit is reached: the episode is cut, not ended by the task.
    pub truncated: bool,
}

/// A stateful episode on a shared environment.
///
/// Rules: [`Episode::step`] needs a [`Episode::reset`] first and an action in `0..n_actions`.
/// `truncated` is true from the step that reaches the time limit on (the count is of steps since
/// the last reset). Neither flag stops the stepping: the caller decides when to reset, as with a
/// Gymnasium environment.
#[derive(Clone, Debug)]
pub struct Episode<E: Env> {
    env: Arc<E>,
    state: Option<E::State>,
    steps: usize,
    rng: Rng,
}

impl<E: Env> Episode<E> {
    /// No episode started yet; the stream is `(0, ENVIRONMENT, 0)` until a seeded reset.
    pub fn new(env: E) -> Self {
        Self { env: Arc::new(env), state: None, steps: 0, rng: stream(0, purpose::ENVIRONMENT, 0) }
    }

    /// The environment, shared with whoever needs it stateless (evaluators).
    pub fn env(&self) -> &Arc<E> {
        &self.env
    }

    /// The current state, `None` before the first reset.
    pub fn state(&self) -> Option<&E::State> {
        self.state.as_ref()
    }

    /// Steps since the last reset.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// Starts an episode in a state drawn from the start law. With a seed, the stream first
    /// becomes `(seed, ENVIRONMENT, index)`: the stream the protocol steps test MDP `index` with.
    pub fn reset(&mut self, seed: Option<u64>, index: u64) -> E::State {
        if let Some(seed) = seed {
            self.rng = stream(seed, purpose::ENVIRONMENT, index);
        }
        let state = self.env.reset(&mut self.rng);
        self.state = Some(state.clone());
        self.steps = 0;
        state
    }

    /// One step under `action`.
    pub fn step(&mut self, action: usize) -> Result<EpisodeStep<E::State>> {
        let state = self.state.as_ref().ok_or_else(|| invalid!("reset() must be called before step()"))?;
        if action >= self.env.n_actions() {
            return Err(invalid!("action {action} is out of range: allowed {}", index_range(self.env.n_actions())));
        }
        let step = self.env.step(state, action, &mut self.rng);
        self.state = Some(step.next_state.clone());
        self.steps += 1;
        let truncated = self.env.time_limit().is_some_and(|limit| self.steps >= limit);
        Ok(EpisodeStep { next_state: step.next_state, reward: step.reward, terminated: step.terminal, truncated })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::{river_swim, six_arms, RiverSwimVariant};

    #[test]
    fn step_needs_a_reset_and_a_valid_action() {
        let mut episode = Episode::new(six_arms(0.95).unwrap());
        assert_eq!(episode.state(), None);
        let e = episode.step(0).unwrap_err().to_string();
        assert!(e.contains("reset() must be called before step()"), "{e}");
        assert_eq!(episode.reset(Some(1), 0), 0);
        let e = episode.step(6).unwrap_err().to_string();
        assert!(e.contains("action 6 is out of range: allowed 0 to 5"), "{e}");
        assert_eq!(episode.steps(), 0, "a refused step counts nothing");
    }

    #[test]
    fn truncation_comes_at_the_time_limit_and_stays() {
        let mut episode = Episode::new(river_swim(RiverSwimVariant::Osband, 1.0).unwrap());
        episode.reset(Some(3), 0);
        for t in 1..=25 {
            let step = episode.step(1).unwrap();
            assert_eq!(step.truncated, t >= 20, "step {t}");
            assert!(!step.terminated);
            assert_eq!(episode.state(), Some(&step.next_state));
            assert_eq!(episode.steps(), t);
        }
        episode.reset(None, 0);
        assert_eq!(episode.steps(), 0);
        assert!(!episode.step(1).unwrap().truncated);
        // No time limit: never truncated.
        let mut continuing = Episode::new(six_arms(0.95).unwrap());
        continuing.reset(None, 0);
        assert!((0..100).all(|_| !continuing.step(0).unwrap().truncated));
    }

    #[test]
    fn a_seeded_reset_replays_the_protocols_environment_stream() {
        let env = river_swim(RiverSwimVariant::Strehl, 0.95).unwrap();
        let walk = |episode: &mut Episode<_>| -> Vec<(usize, f64)> {
            (0..50).map(|t| episode.step(t % 2).map(|s| (s.next_state, s.reward)).unwrap()).collect()
        };
        let mut episode = Episode::new(env.clone());
        let start = episode.reset(Some(7), 2);
        let first = walk(&mut episode);
        // The same walk by hand on the stream (7, ENVIRONMENT, 2).
        let mut rng = stream(7, purpose::ENVIRONMENT, 2);
        let mut state = env.reset(&mut rng);
        assert_eq!(state, start);
        for (t, &(next, reward)) in first.iter().enumerate() {
            let step = env.step(&state, t % 2, &mut rng);
            assert_eq!((step.next_state, step.reward), (next, reward));
            state = step.next_state;
        }
        // An unseeded reset continues the stream; a seeded one restarts it.
        episode.reset(None, 0);
        assert_eq!(episode.reset(Some(7), 2), start);
        assert_eq!(walk(&mut episode), first);
    }
}
