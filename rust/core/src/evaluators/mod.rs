//! The evaluators: each owns its loop and drives agents only through [`crate::stepper::Stepper`].
//! - [`protocol`]: the BBRL benchmark (N test MDPs, one trajectory each, paired, timed);
//! - [`replay`]: offline evaluation of online learners from logged data (Mandel et al. 2016);
//! - [`value_error`]: high-confidence value-error estimates (Sajed, Chung and White 2018).

pub mod protocol;
pub mod replay;
pub mod value_error;
