//! RandomAgent (SPEC 4.1): a uniformly random action at every step.

use super::spec::{Example, KindSpec};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::fdm::Fdm;
use crate::rng::{random_below, Rng};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "random",
    display: "Random",
    params: &[],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[Example { doc: "the only setting", params: &[] }],
    not_in_quick: None,
    episodic_baseline: false,
    build: |_| Ok(Box::new(RandomAgent::new())),
};

#[derive(Clone, Debug, Default)]
pub struct RandomAgent {
    /// The number of actions; 0 before `learn_offline`.
    n_actions: u32,
}

impl RandomAgent {
    pub fn new() -> Self {
        Self::default()
    }

    fn actions(&self) -> Result<u32> {
        match self.n_actions {
            0 => Err(not_trained("Random")),
            n => Ok(n),
        }
    }
}

impl Agent for RandomAgent {
    fn name(&self) -> String {
        "Random".into()
    }

    fn learn_offline(&mut self, prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.n_actions = u32::try_from(prior.n_actions())
            .map_err(|_| invalid!("Random supports at most {} actions, got {}", u32::MAX, prior.n_actions()))?;
        Ok(())
    }

    fn start_task(&mut self, _context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.actions().map(|_| ())
    }

    #[inline]
    fn act(&mut self, _state: usize, rng: &mut Rng) -> Result<usize> {
        // The draw of `rng.random_range(0..n)`, inlined.
        Ok(random_below(self.actions()?, rng) as usize)
    }

    #[inline]
    fn observe(&mut self, _transition: Transition, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    fn action_probabilities(&mut self, _state: usize, out: &mut [f64]) -> Result<()> {
        let n = self.actions()?;
        out.fill(1.0 / f64::from(n));
        Ok(())
    }

    /// Nothing learned offline: learn_offline only records the number of actions.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}
