//! bbrl-core: the fast core of a Bayesian reinforcement-learning benchmark.
//!
//! The crate knows nothing of Python (the `bbrl._core` extension module is the separate binding
//! crate `rust/python`, which reaches only this crate's public API): it is tested with
//! `cargo test` and benched with criterion on its own.
//!
//! Layers, each using only the ones above it:
//! - [`error`], [`names`] (the one name rule of every registry), [`rng`] (the one seed rule),
//!   [`options`] (keyword options read into typed structs), [`platform`] (CPU time, host), [`work`]
//!   (machine-independent work counters);
//! - [`model`]: tabular views and checks, [`model::Mdp`], [`model::Fdm`], Dirichlet rows, posterior
//!   counts, the named problems; [`solve`]: value iteration (scalar, AVX2, AVX-512);
//!   [`formula`]: OPPS formulas and formula spaces;
//! - [`agent`]: the `Agent` trait, its value types and one decision step; [`trajectory`]: one
//!   timed trajectory on a finite MDP; [`stepper`]: the handle every evaluator drives;
//! - [`agents`]: one file per algorithm and the registry; [`envs`]: the `Env` trait, finite and
//!   continuous environments and their registry; [`problems`]: the benchmark problems' registry
//!   (the test distributions with their priors, and every registered environment);
//! - [`evaluators`]: the benchmark protocol, the replay evaluators, the value-error estimates.
//!
//! Data flow of the protocol: an [`model::Fdm`] (Dirichlet distribution over MDPs) is sampled
//! into [`model::Mdp`]s; an [`agent::Agent`] learns offline from a prior `Fdm`, then
//! [`evaluators::protocol::Experiment`] runs one trajectory per test MDP (in parallel,
//! bit-identical whatever the thread count).

// Numeric kernels index several parallel tables by the same state/action; index loops read best there.
#![allow(clippy::needless_range_loop)]

pub mod error;
pub mod names;
pub mod options;
pub mod platform;
pub mod rng;
pub mod work;

pub mod formula;
pub mod model;
pub mod solve;

pub mod agent;
pub mod stepper;
pub mod trajectory;

pub mod agents;
pub mod envs;
pub mod problems;

pub mod confidence;
pub mod evaluators;

pub use error::{BbrlError, Result};
