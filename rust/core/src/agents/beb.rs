//! BEBAgent (SPEC 4.5): Bayesian Exploration Bonus (Kolter & Ng 2009) on the posterior-mean model.

use super::spec::{Example, KindSpec, ParamDefault, ParamSpec, ParamType, Range, COMPAT};
use super::tabularl_bonus::{TabularlBonus, TabularlPlanner, TabularlPrior};
use crate::agent::{not_trained, Agent, Setting, TaskContext, Transition};
use crate::error::Result;
use crate::invalid;
use crate::model::counts::CountModel;
use crate::model::fdm::Fdm;
use crate::rng::Rng;
use crate::solve::{ValueIterationWorkspace, GUEZ_VI_EPSILON};

/// The registry's entry.
pub const SPEC: KindSpec = KindSpec {
    kind: "beb",
    display: "BEB",
    params: &[
        ParamSpec {
            name: "beta",
            ty: ParamType::Float,
            default: None,
            range: Range::at_least(0.0),
            doc: "exploration bonus beta / (1 + n(s, a)) added to the rewards (reference = tabularl: TabulaRL's \
                  beta, its bonus beta H / (1 + n(s, a)) per step left)",
        },
        COMPAT,
        ParamSpec {
            name: "reference",
            ty: ParamType::Text,
            default: Some(ParamDefault::Text("paper")),
            range: Range::Choices(&["paper", "tabularl"]),
            doc: "paper: Kolter & Ng's BEB as the BBRL benchmark runs it; tabularl: TabulaRL's BEB (a MAP model with \
                  learned rewards, its bonuses, one H-stage plan per episode; docs/baselines.md, Reference settings; \
                  compat must stay false)",
        },
    ],
    online_units: &[],
    offline_units: &[],
    sizes_memory: &[],
    examples: &[
        Example { doc: "quick", params: &[("beta", ParamDefault::Float(1.0))] },
        Example {
            doc: "a larger bonus, the original's quirks",
            params: &[("beta", ParamDefault::Float(10.0)), ("compat", ParamDefault::Bool(true))],
        },
        Example {
            doc: "TabulaRL's BEB (its beta 2 H^2 at H = 20)",
            params: &[("beta", ParamDefault::Float(800.0)), ("reference", ParamDefault::Text("tabularl"))],
        },
    ],
    not_in_quick: None,
    episodic_baseline: false,
    build: |r| {
        let (beta, compat) = (r.float("beta")?, r.flag("compat")?);
        match r.text("reference")? {
            "paper" => Ok(Box::new(Beb::new(beta, compat)?)),
            "tabularl" if compat => Err(invalid!(
                "compat = true (the original BBRL's integer beta) does not apply with reference = \"tabularl\""
            )),
            "tabularl" => {
                // Checked as the paper's beta is.
                Beb::new(beta, false)?;
                Ok(Box::new(TabularlPlanner::new("BEB", TabularlBonus::Beb { beta }, TabularlPrior::Given, 0)))
            }
            other => Err(invalid!("reference must be \"paper\" or \"tabularl\", got {other:?}")),
        }
    },
};

/// BEB with bonus `beta / (1 + alpha0(s, a))`, where `alpha0` sums the prior pseudo-counts and the
/// observed counts of (s, a) over next states (SPEC 4.5). The mean model with bonus rewards is
/// solved by Guez value iteration before each decision; ties go to the lowest action.
///
/// `compat = true` truncates beta to an integer as the original does (its `b` is a `uint`, so
/// 0.5 acts as 0 and 2.5 as 2; SPEC 7.2).
///
/// `reference = "tabularl"` builds TabulaRL's BEB instead, a different planner
/// ([`super::tabularl_bonus`]): the posterior's MAP model with learned rewards, a reward bonus
/// `1 / (2 + n_r)` and a transition bonus `beta H / (1 + n)` per step left, planned once per
/// episode by an H-stage backward induction.
#[derive(Clone, Debug)]
pub struct Beb {
    beta: f64,
    compat: bool,
    state: Option<BebState>,
}

#[derive(Clone, Debug)]
struct BebState {
    initial: CountModel,
    model: CountModel,
    /// `b / (1 + alpha0(s, a))` per (s, a).
    bonus: Vec<f64>,
    values: Vec<f64>,
    policy: Vec<usize>,
    workspace: ValueIterationWorkspace,
    /// Whether `policy` is the solution for the current posterior (it only changes on `observe`).
    solved: bool,
    gamma: f64,
}

impl Beb {
    pub fn new(beta: f64, compat: bool) -> Result<Self> {
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(invalid!("beta must be a finite number >= 0, got {beta}"));
        }
        Ok(Self { beta, compat, state: None })
    }

    /// The bonus coefficient actually used.
    pub fn effective_beta(&self) -> f64 {
        if self.compat {
            self.beta.trunc()
        } else {
            self.beta
        }
    }

    fn state(&mut self) -> Result<&mut BebState> {
        self.state.as_mut().ok_or_else(|| not_trained("BEB"))
    }

    fn solve(&mut self) -> Result<()> {
        let st = self.state()?;
        if !st.solved {
            st.workspace.solve(
                st.model.view(),
                Some(&st.bonus),
                st.gamma,
                GUEZ_VI_EPSILON,
                &mut st.values,
                &mut st.policy,
            );
            st.solved = true;
        }
        Ok(())
    }
}

impl Agent for Beb {
    fn name(&self) -> String {
        if self.compat {
            format!("BEB (beta = {}, compat)", self.beta)
        } else {
            format!("BEB (beta = {})", self.beta)
        }
    }

    fn learn_offline(&mut self, prior: &Fdm, setting: Setting, _rng: &mut Rng) -> Result<()> {
        let initial = CountModel::from_prior(prior);
        let (ns, na) = (prior.n_states(), prior.n_actions());
        self.state = Some(BebState {
            model: initial.clone(),
            initial,
            bonus: vec![0.0; ns * na],
            values: vec![0.0; ns],
            policy: vec![0; ns],
            workspace: ValueIterationWorkspace::new(ns, na),
            solved: false,
            gamma: setting.gamma,
        });
        Ok(())
    }

    fn start_task(&mut self, context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        let b = self.effective_beta();
        let st = self.state()?;
        st.model.copy_from(&st.initial);
        st.gamma = context.setting.gamma;
        for (bonus, &total) in st.bonus.iter_mut().zip(st.model.row_totals()) {
            *bonus = b / (1.0 + total);
        }
        st.solved = false;
        Ok(())
    }

    fn act(&mut self, state: usize, _rng: &mut Rng) -> Result<usize> {
        self.solve()?;
        Ok(self.state()?.policy[state])
    }

    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        let b = self.effective_beta();
        let st = self.state()?;
        st.model.observe(t.state, t.action, t.next_state);
        let row = t.state * st.model.n_actions() + t.action;
        st.bonus[row] = b / (1.0 + st.model.row_totals()[row]);
        st.solved = false;
        Ok(())
    }

    fn action_probabilities(&mut self, state: usize, out: &mut [f64]) -> Result<()> {
        self.solve()?;
        let action = self.state()?.policy[state];
        out.fill(0.0);
        out[action] = 1.0;
        Ok(())
    }

    /// Nothing learned offline: learn_offline only copies the prior counts and sizes the solver; nothing is solved offline.
    fn learns_offline(&self) -> bool {
        false
    }

    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}
