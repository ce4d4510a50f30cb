//! EGreedyAgent (SPEC 4.3): greedy on the posterior-mean model's Q, random with probability epsilon.

use rand::Rng as _;

use super::common::{argmax_random_tie, greedy_probabilities};
use super::mean_model::MeanModelQ;
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "egreedy",
    display: "e-Greedy",
    params: &[ParamSpec {
        name: "epsilon",
        ty: ParamType::Float,
        default: None,
        range: Range::between(0.0, 1.0),
        doc: "probability of a uniformly random action",
    }],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[("epsilon", ParamDefault::Float(0.1))] },
        Example { doc: "more exploration", params: &[("epsilon", ParamDefault::Float(0.3))] },
    ],
    not_in_quick: None,
    episodic_baseline: true,
    build: |r| Ok(Box::new(EGreedy::new(r.float("epsilon")?)?)),
};

/// e-Greedy. The original re-solves Q after every transition whichever branch acts (SPEC 7.7);
/// here Q is solved only when a greedy step reads it, which takes the same actions (Q depends on
/// the counts alone) in a fraction 1 - epsilon of the time.
#[derive(Clone, Debug)]
pub struct EGreedy {
    epsilon: f64,
    planner: Option<MeanModelQ>,
}

impl EGreedy {
    pub fn new(epsilon: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&epsilon) {
            return Err(invalid!("epsilon must be in [0, 1], got {epsilon}"));
        }
        Ok(Self { epsilon, planner: None })
    }

    fn planner(&mut self) -> Result<&mut MeanModelQ> {
        self.planner.as_mut().ok_or_else(|| not_trained("e-Greedy"))
    }
}

impl Agent for EGreedy {
    fn name(&self) -> String {
        format!("e-Greedy (epsilon = {})", self.epsilon)
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.planner = Some(MeanModelQ::new(CountModel::from_prior(prior), setting));
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.planner()?.reset(context.setting);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        let epsilon = self.epsilon;
        let planner = self.planner()?;
        // `f <= epsilon` with f in [0, 1), as the original.
        if rng.random::<f64>() <= epsilon {
            Ok(rng.random_range(0..planner.n_actions()))
        } else {
            planner.ensure_solved();
            Ok(argmax_random_tie(planner.q_row(state), rng))
        }
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        self.planner()?.observe(t.state, t.action, t.next_state);
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        let epsilon = self.epsilon;
        let planner = self.planner()?;
        planner.ensure_solved();
        greedy_probabilities(planner.q_row(state), out);
        let uniform = epsilon / out.len() as f64;
        for p in out.iter_mut() {
            *p = (1.0 - epsilon) * *p + uniform;
        }
        Ok(())
    }

    /// Nothing learned offline: learn_offline only copies the prior counts into the mean model; Q is solved online.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}
