//! bbrl: the fast core of a Bayesian reinforcement-learning benchmark.
//!
//! The crate knows nothing of Python (the bindings live in `python/`, behind the `python` feature):
//! it can be tested with `cargo test` and benched with criterion on its own.
//!
//! Data flow: an [`fdm::Fdm`] (Dirichlet distribution over MDPs) is sampled into [`mdp::Mdp`]s;
//! an [`agents::Agent`] learns offline from a prior `Fdm`, then [`experiment::Experiment`] runs one
//! trajectory per test MDP (in parallel, bit-identical whatever the thread count).

// Numeric kernels index several parallel tables by the same state/action; index loops read best there.
#![allow(clippy::needless_range_loop)]

pub mod agents;
pub mod cputime;
pub mod dirichlet;
pub mod env;
pub mod error;
pub mod experiment;
pub mod fdm;
pub mod formula;
pub mod host;
mod lanes256;
mod lanes512;
pub mod mdp;
pub mod model;
pub mod problems;
pub mod replay;
pub mod rng;
pub mod simulate;
pub mod solve;
pub mod sparse;
pub mod stepper;
pub mod value_error;

#[cfg(feature = "python")]
mod python;

pub use error::{BbrlError, Result};
