//! OptimalAgent (SPEC 4.10): the oracle reference line. It is shown the true test MDP at reset
//! (the only agent that is: [`Agent::is_oracle`]) and plays greedily on its Q-values.
//!
//! At reset it runs BBRL Q-iteration (SPEC 2.1) on the true MDP with the experiment's discount
//! (0.95 if the discount is 1, the original's `uGamma`; the protocol rejects gamma = 1 anyway),
//! per-entry accuracy 1e-2, capped at T sweeps as SPEC 4.10 says: the horizon is passed as
//! `max_sweeps`, so at most T + 1 sweeps (SPEC 2.1), exactly the original call
//! `qIteration(gamma, T)`. It then acts greedily with uniformly random ties.

use super::common::{argmax_random_tie, greedy_probabilities};
use super::spec::{Example, KindSpec};
use crate::agent::{Agent, Setting, TaskContext, Transition};
use crate::error::{BbrlError, Result};
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::solve::{QIterationWorkspace, BBRL_Q_ACCURACY};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "optimal",
    display: "Optimal (oracle)",
    params: &[],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[Example { doc: "the only setting", params: &[] }],
    not_in_quick: None,
    episodic_baseline: false,
    build: |_| Ok(Box::new(Optimal::new())),
};

const NAME: &str = "Optimal (oracle: sees the true MDP)";

/// The oracle: greedy on the Q-values of the true MDP.
#[derive(Clone, Debug, Default)]
pub struct Optimal {
    n_actions: usize,
    /// Q(s, a) of the current test MDP; empty before the first reset.
    q: Vec<f64>,
    workspace: Option<QIterationWorkspace>,
}

impl Optimal {
    pub fn new() -> Self {
        Self::default()
    }

    fn q_row(&self, state: usize) -> Result<&[f64]> {
        if self.q.is_empty() {
            return Err(BbrlError::Agent(format!("agent '{NAME}' used before reset")));
        }
        Ok(&self.q[state * self.n_actions..(state + 1) * self.n_actions])
    }
}

impl Agent for Optimal {
    fn name(&self) -> String {
        NAME.into()
    }

    fn learn_offline(&mut self, _prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let mdp = context.true_mdp.ok_or_else(|| {
            BbrlError::Agent(format!("agent '{NAME}' needs the true MDP at reset, and none was given"))
        })?;
        let (ns, na) = (mdp.n_states(), mdp.n_actions());
        // Sized here, once per shape (reset, not a per-step path).
        self.n_actions = na;
        self.q.resize(ns * na, 0.0);
        let gamma = if context.setting.gamma == 1.0 { 0.95 } else { context.setting.gamma };
        let workspace = self.workspace.get_or_insert_with(|| QIterationWorkspace::new(ns, na));
        if workspace.shape() != (ns, na) {
            *workspace = QIterationWorkspace::new(ns, na);
        }
        workspace.solve(mdp.view(), gamma, context.setting.horizon, BBRL_Q_ACCURACY, &mut self.q);
        Ok(())
    }

    fn act(&mut self, state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(argmax_random_tie(self.q_row(state)?, rng))
    }

    fn observe(&mut self, _t: Transition, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        greedy_probabilities(self.q_row(state)?, out);
        Ok(())
    }

    /// Nothing learned offline: the oracle solves the true MDP at each task; it has nothing to learn from the prior.
    fn learns_offline(&self) -> bool {
        false
    }

    fn is_oracle(&self) -> bool {
        true
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::test_support::{gc_prior, rollout, two_state_mdp, SETTING};
    use crate::rng::stream;

    #[test]
    fn matches_a_solve_of_the_true_mdp() {
        let mdp = two_state_mdp();
        let mut agent = Optimal::new();
        assert!(agent.is_oracle());
        let steps = rollout(&mut agent, &mdp, 30, 0);
        assert!(steps.iter().all(|&(s, a, _)| a == 1 - s));
        let mut probs = [0.0; 2];
        agent.action_probabilities(0, &mut probs).unwrap();
        assert_eq!(probs, [0.0, 1.0]);

        // On GC MDPs: the Q-table of BBRL Q-iteration with the horizon as sweep cap, greedy.
        for seed in 0..5 {
            let mdp = gc_prior().sample_mdp(&mut stream(seed, 1, 0));
            let mut agent = Optimal::new();
            let context = TaskContext { setting: SETTING, true_mdp: Some(&mdp) };
            agent.start_task(&context, &mut stream(0, 0, 0)).unwrap();
            let mut q = vec![0.0; 15];
            crate::solve::q_iteration(mdp.view(), 0.95, 250, 1e-2, &mut q);
            assert_eq!(agent.q, q);
            let mut expected = [0.0; 3];
            for s in 0..5 {
                greedy_probabilities(&q[3 * s..3 * s + 3], &mut expected);
                let mut probs = [0.0; 3];
                agent.action_probabilities(s, &mut probs).unwrap();
                assert_eq!(probs, expected);
            }
        }
    }

    #[test]
    fn deterministic_for_a_seed() {
        // GC's three actions share their rows in distribution only, so ties are rare; a prior MDP
        // with identical actions forces random tie breaks.
        let mdp = crate::model::mdp::Mdp::new(2, 2, vec![0.5; 8], vec![1.0; 8], Some(0)).unwrap();
        let a = rollout(&mut Optimal::new(), &mdp, 100, 4);
        let b = rollout(&mut Optimal::new(), &mdp, 100, 4);
        assert_eq!(a, b);
        assert!(a.iter().any(|s| s.1 == 0) && a.iter().any(|s| s.1 == 1), "ties are broken at random");
    }

    #[test]
    fn errors_without_the_true_mdp() {
        let mut agent = Optimal::new();
        assert!(agent.act(0, &mut stream(0, 0, 0)).unwrap_err().to_string().contains("before reset"));
        let context = TaskContext { setting: SETTING, true_mdp: None };
        let e = agent.start_task(&context, &mut stream(0, 0, 0)).unwrap_err();
        assert!(e.to_string().contains("needs the true MDP"), "{e}");
        assert_eq!(agent.name(), "Optimal (oracle: sees the true MDP)");
    }
}
