//! The Q-values of a counting model, re-solved from scratch after every transition: the engine of
//! e-Greedy, Soft-max and the formula agents' Q-variables (SPEC 4.2–4.4, 4.9.2).

use crate::agents::Setting;
use crate::model::CountModel;
use crate::solve::{QIterationWorkspace, BBRL_Q_ACCURACY};

/// A counting model with its Q-table. `reset` restores the initial counts and solves; `observe`
/// adds a count and solves again (BBRL Q-iteration, cold start, at most T + 1 sweeps).
#[derive(Clone, Debug)]
pub struct MeanModelQ {
    initial: CountModel,
    model: CountModel,
    q: Vec<f64>,
    workspace: QIterationWorkspace,
    setting: Setting,
}

impl MeanModelQ {
    pub fn new(initial: CountModel, setting: Setting) -> Self {
        let (ns, na) = (initial.n_states(), initial.n_actions());
        Self {
            model: initial.clone(),
            initial,
            q: vec![0.0; ns * na],
            workspace: QIterationWorkspace::new(ns, na),
            setting,
        }
    }

    fn solve(&mut self) {
        self.workspace.solve(self.model.view(), self.setting.gamma, self.setting.horizon, BBRL_Q_ACCURACY, &mut self.q);
    }

    /// Back to the initial counts, with the discount and horizon of the new trajectory.
    pub fn reset(&mut self, setting: Setting) {
        self.setting = setting;
        self.model.copy_from(&self.initial);
        self.solve();
    }

    pub fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        self.model.observe(state, action, next_state);
        self.solve();
    }

    /// Q(state, ·).
    #[inline]
    pub fn q_row(&self, state: usize) -> &[f64] {
        let na = self.model.n_actions();
        &self.q[state * na..(state + 1) * na]
    }

    pub fn model(&self) -> &CountModel {
        &self.model
    }

    pub fn n_actions(&self) -> usize {
        self.model.n_actions()
    }
}
