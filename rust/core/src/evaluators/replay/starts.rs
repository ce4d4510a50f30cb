//! Where the replayed episodes start: the log's fixed start state, or the start states of the
//! log's own episodes in a random order, each used once (a queue, as the evaluators' other data:
//! a start state popped from the log has the environment's start law, and when the queue is
//! empty the data can no longer say where the next episode starts).

use rand::seq::SliceRandom;

use super::{Dataset, Episodes};
use crate::rng::Rng;

/// The start states of an evaluation.
pub(super) enum Starts {
    /// Every episode starts here (a log whose episodes all start in one given state).
    Fixed(usize),
    /// The start states of the complete logged episodes, shuffled, popped one per episode.
    Logged { order: Vec<usize>, next: usize },
}

impl Starts {
    /// The start states of `data`'s complete `episodes`. A fixed start draws nothing from `rng`
    /// (results on single-start logs do not change with the option).
    pub fn new(data: &Dataset, episodes: &Episodes, rng: &mut Rng) -> Self {
        match data.start_state() {
            Some(start) => Starts::Fixed(start),
            None => {
                let mut order: Vec<usize> = episodes.ranges.iter().map(|r| data.start_of(r)).collect();
                order.shuffle(rng);
                Starts::Logged { order, next: 0 }
            }
        }
    }

    /// The start of the next episode, `None` when the logged starts are used up.
    pub fn pop(&mut self) -> Option<usize> {
        match self {
            Starts::Fixed(start) => Some(*start),
            Starts::Logged { order, next } => {
                let start = order.get(*next).copied();
                *next += 1;
                start
            }
        }
    }
}
