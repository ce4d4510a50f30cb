//! Benchmark problems: what an agent is evaluated on. A problem is either a test distribution of
//! MDPs with its priors (the BBRL protocol: GC, GDL, Grid) or a registered environment (every
//! entry of [`crate::envs::registry`] is one, through that same entry). Its entry gives its name,
//! long name and summary; [`ProblemSpec::facts`] gives what the agents and the episodic protocol
//! need: sizes, the reward range, the episode horizon where there is one, and the start law.
//!
//! The registry lives in the core, not in a front end, because the core's agents and evaluators
//! read these facts (a reward range to scale a bonus, a horizon to plan to).

pub mod registry;
mod spec;

pub use registry::{all, distribution, find, uniform_names, uniform_prior, NamedFdm, DISTRIBUTIONS, UNIFORM_PREFIX};
pub use spec::{Facts, PriorRule, ProblemSpec, Source, StartLaw};
