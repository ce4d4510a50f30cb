//! The Q-values of a counting model, re-solved from scratch after every transition: the engine of
//! e-Greedy, Soft-max and the formula agents' Q-variables (SPEC 4.2–4.4, 4.9.2).

use crate::agent::Setting;
use crate::model::counts::CountModel;
use crate::solve::{QIterationWorkspace, BBRL_Q_ACCURACY};

/// A counting model with its Q-table. `reset` restores the initial counts; `observe` adds a count.
/// Q is the BBRL Q-iteration of the current model (cold start, at most T + 1 sweeps), solved when
/// first needed after a change ([`Self::ensure_solved`]): the original re-solves after every
/// transition, but Q is a deterministic function of the counts, so solving only when a decision
/// reads it (not on e-Greedy's random steps, nor after the last transition) gives the same Q.
#[derive(Clone, Debug)]
pub struct MeanModelQ {
    initial: CountModel,
    model: CountModel,
    q: Vec<f64>,
    workspace: QIterationWorkspace,
    setting: Setting,
    /// Whether `q` is the Q-table of `model` as it stands.
    solved: bool,
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
            solved: false,
        }
    }

    /// Solves the current model unless Q is already its solution. Call before [`Self::q_row`].
    #[inline]
    pub fn ensure_solved(&mut self) {
        if !self.solved {
            self.workspace.solve(
                self.model.view(),
                self.setting.gamma,
                self.setting.horizon,
                BBRL_Q_ACCURACY,
                &mut self.q,
            );
            self.solved = true;
        }
    }

    /// Back to the initial counts, with the discount and horizon of the new trajectory.
    pub fn reset(&mut self, setting: Setting) {
        self.setting = setting;
        self.model.copy_from(&self.initial);
        self.solved = false;
    }

    pub fn observe(&mut self, state: usize, action: usize, next_state: usize) {
        self.model.observe(state, action, next_state);
        self.solved = false;
    }

    /// Q(state, ·) of the current model; [`Self::ensure_solved`] must have run since the last
    /// change.
    #[inline]
    pub fn q_row(&self, state: usize) -> &[f64] {
        debug_assert!(self.solved, "q_row read before ensure_solved");
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
