//! RandomAgent (SPEC 4.1): a uniformly random action at every step.

use rand::Rng as _;

use super::{not_trained, Agent, ResetContext, Setting, Transition};
use crate::error::Result;
use crate::fdm::Fdm;
use crate::rng::Rng;

#[derive(Clone, Debug, Default)]
pub struct RandomAgent {
    n_actions: Option<usize>,
}

impl RandomAgent {
    pub fn new() -> Self {
        Self::default()
    }

    fn actions(&self) -> Result<usize> {
        self.n_actions.ok_or_else(|| not_trained("Random"))
    }
}

impl Agent for RandomAgent {
    fn name(&self) -> String {
        "Random".into()
    }

    fn learn_offline(&mut self, prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.n_actions = Some(prior.n_actions());
        Ok(())
    }

    fn reset(&mut self, _context: &ResetContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.actions().map(|_| ())
    }

    fn act(&mut self, _state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(rng.random_range(0..self.actions()?))
    }

    fn observe(&mut self, _transition: Transition, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    fn action_probabilities(&mut self, _state: usize, out: &mut [f64]) -> Result<()> {
        let n = self.actions()?;
        out.fill(1.0 / n as f64);
        Ok(())
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}
