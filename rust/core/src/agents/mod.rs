//! The built-in agents, one module per algorithm, and the registry that builds them by name.
//! The interface they implement is [`crate::agent::Agent`].

mod bamcp;
#[cfg(test)]
mod baseline_test_support;
mod beb;
mod bfs3;
mod common;
mod egreedy;
mod formula_agent;
mod mbie_eb;
mod mean_model;
mod opps;
mod opsrl;
mod optimal;
mod optql;
#[cfg(test)]
mod planning_test_support;
mod psrl;
mod qlearning;
mod random;
pub mod registry;
mod reward_rows;
mod rlberry_psrl;
mod rlsvi;
mod rmax;
mod sboss;
mod softmax;
pub mod spec;
mod tabular;
mod tabularl_bonus;
#[cfg(test)]
mod test_support;
mod ucbvi;
mod ucfh;
mod ucrl2;

pub use bamcp::Bamcp;
pub use beb::Beb;
pub use bfs3::Bfs3;
pub use common::{
    argmax_random_tie, argmax_random_tie_by, argmax_random_tie_by_select, greedy_probabilities, plan_once,
    uniform_below, PlanningStream,
};
pub use egreedy::EGreedy;
pub use formula_agent::{variable_counts, FormulaAgent};
pub use mbie_eb::MbieEb;
pub use mean_model::MeanModelQ;
pub use opps::{ucb1, Bandit, OppsDs, Ucb1Outcome, DEFAULT_C as OPPS_DEFAULT_C};
pub use opsrl::OptimisticPsrl;
pub use optimal::Optimal;
pub use optql::OptQl;
pub use psrl::Psrl;
pub use qlearning::QLearning;
pub use random::RandomAgent;
pub use registry::{build, load_text, KINDS};
pub use rlsvi::Rlsvi;
pub use rmax::Rmax;
pub use sboss::Sboss;
pub use softmax::SoftMax;
pub use spec::{Example, KindSpec, ParamSpec, ParamType, ParamValue, Params};
pub use tabular::RewardModel;
pub use ucbvi::{Bonus as UcbviBonus, Ucbvi};
pub use ucfh::Ucfh;
pub use ucrl2::Ucrl2;
