//! The evaluators: each owns its loop and drives agents only through [`crate::stepper::Stepper`].
//! - [`protocol`]: the BBRL benchmark (N test MDPs, one trajectory each, paired, timed);
//! - [`episodic`]: K episodes of H steps in one MDP per run, the agent learning across episodes,
//!   with the realised and expected regret of each episode against the finite-horizon optimum;
//! - [`replay`]: offline evaluation of online learners from logged data (Mandel et al. 2016);
//! - [`value_error`]: high-confidence value-error estimates (Sajed, Chung and White 2018).

pub mod episodic;
pub mod protocol;
pub mod replay;
pub mod value_error;
