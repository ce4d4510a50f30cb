//! SoftMaxAgent (SPEC 4.4): a Boltzmann draw over the posterior-mean model's Q.

use rand::Rng as _;

use super::mean_model::MeanModelQ;
use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range, COMPAT};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::{BbrlError, Result};
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::fdm::Fdm;
use crate::rng::Rng;

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "softmax",
    display: "Soft-max",
    params: &[
        ParamSpec {
            name: "tau",
            ty: ParamType::Float,
            default: None,
            range: Range::above(0.0),
            doc: "temperature of the Boltzmann distribution over Q-values",
        },
        COMPAT,
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[("tau", ParamDefault::Float(1.0))] },
        Example {
            doc: "a colder choice, the original's quirks",
            params: &[("tau", ParamDefault::Float(0.2)), ("compat", ParamDefault::Bool(true))],
        },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| Ok(Box::new(SoftMax::new(r.float("tau")?, r.flag("compat")?)?)),
};

/// Soft-max with temperature `tau`.
///
/// Default: the intended algorithm, `pi(a | s) ∝ exp(Q(s, a) / tau)` (computed as
/// `exp((Q - max Q) / tau)`, which cannot overflow). `compat = true` reproduces the original:
/// the scores `exp(Q / tau)` are not normalised and the first action whose cumulative score
/// reaches a uniform draw in [0, 1) is played, so with non-negative rewards it always plays
/// action 0 (SPEC 7.1). Where the original would return the out-of-range action `A` (scores
/// summing below the draw, possible only with negative Q), compat mode reports an error.
#[derive(Clone, Debug)]
pub struct SoftMax {
    tau: f64,
    compat: bool,
    planner: Option<MeanModelQ>,
    /// Scratch for the action distribution (length A), allocated once at offline learning.
    weights: Vec<f64>,
}

impl SoftMax {
    pub fn new(tau: f64, compat: bool) -> Result<Self> {
        if !(tau.is_finite() && tau > 0.0) {
            return Err(invalid!("tau must be a finite number > 0, got {tau}"));
        }
        Ok(Self { tau, compat, planner: None, weights: Vec::new() })
    }

    /// Writes pi(· | state) into `self.weights`; in compat mode, the mass of each action under
    /// the unnormalised cumulative walk (any remainder is the original's out-of-range action).
    fn fill_weights(&mut self, state: usize) -> Result<()> {
        let planner = self.planner.as_mut().ok_or_else(|| not_trained("Soft-max"))?;
        planner.ensure_solved();
        let q = planner.q_row(state);
        if self.compat {
            let mut cumul = 0.0f64;
            for (w, &qa) in self.weights.iter_mut().zip(q) {
                let next = cumul + (qa / self.tau).exp();
                *w = next.min(1.0) - cumul.min(1.0);
                cumul = next;
            }
        } else {
            let best = q.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut total = 0.0;
            for (w, &qa) in self.weights.iter_mut().zip(q) {
                *w = ((qa - best) / self.tau).exp();
                total += *w;
            }
            for w in self.weights.iter_mut() {
                *w /= total;
            }
        }
        Ok(())
    }

    fn out_of_range(&self, state: usize) -> BbrlError {
        BbrlError::Agent(format!(
            "Soft-max (compat) scores in state {state} sum below the uniform draw: the original would return \
             the out-of-range action {}; use compat=False",
            self.weights.len()
        ))
    }
}

impl Agent for SoftMax {
    fn name(&self) -> String {
        if self.compat {
            format!("Soft-max (tau = {}, compat)", self.tau)
        } else {
            format!("Soft-max (tau = {})", self.tau)
        }
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        self.planner = Some(MeanModelQ::new(CountModel::from_prior(prior), setting));
        self.weights = vec![0.0; prior.n_actions()];
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.planner.as_mut().ok_or_else(|| not_trained("Soft-max"))?.reset(context.setting);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        self.fill_weights(state)?;
        let f: f64 = rng.random();
        let mut cumul = 0.0;
        if self.compat {
            // The original compares against the raw cumulative scores with `<=`.
            let q = self.planner.as_ref().map(|p| p.q_row(state)).unwrap_or(&[]);
            for (a, &qa) in q.iter().enumerate() {
                cumul += (qa / self.tau).exp();
                if f <= cumul {
                    return Ok(a);
                }
            }
            return Err(self.out_of_range(state));
        }
        let mut last_possible = 0;
        for (a, &w) in self.weights.iter().enumerate() {
            if w > 0.0 {
                last_possible = a;
            }
            cumul += w;
            if f < cumul {
                return Ok(a);
            }
        }
        Ok(last_possible)
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        self.planner.as_mut().ok_or_else(|| not_trained("Soft-max"))?.observe(t.state, t.action, t.next_state);
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.fill_weights(state)?;
        if self.compat && self.weights.iter().sum::<f64>() < 1.0 {
            return Err(self.out_of_range(state));
        }
        out.copy_from_slice(&self.weights);
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
