//! High-confidence value-error estimates (Sajed, Chung and White 2018).
//!
//! A learned value function v̂ is scored by the clipped mean absolute percentage value error
//! (CMAPVE) against stored reference values v̄ at m states. The references come from truncated
//! rollouts (Lemma 5 sets their length) stopped by EBGStop with a τ floor (Algorithm 2), and m
//! and the per-state accuracy come from Algorithm 1, so the stored references certify the
//! CMAPVE of any v̂ to within a stated error with probability at least 1 − δ.
//!
//! | module | one job |
//! |---|---|
//! | `losses` | the clipped relative loss and the plain losses (MSVE, MAVE, MAPVE) |
//! | `sample_size` | Algorithm 1's accuracy split, its m, the guaranteed error |
//! | `rollout_length` | Lemma 5's truncation length |
//! | `ebgstop` | Algorithm 2: EBGStop with the τ rule, check-point or every-sample variant |
//! | `stopping` | the stopping-rule seam: the betting confidence sequence (default) or EBGStop, one contract |
//! | `policy` | fixed policies: uniform, constant, Mountain Car's energy pumping, tabular |
//! | `references` | Algorithm 1's references in parallel over states; CMAPVE with its bound |
//! | `tiles` | sparse binary features: grid tile coding, one-hot |
//! | `learners` | linear TD(λ) learning curves to evaluate |
//! | `options` | the keyword options of EBGStop, the references, the state values, TD(λ) |
//! | `catalog` | the closed set of environments, policies and features the bindings expose |

pub mod catalog;
pub mod ebgstop;
pub mod learners;
pub mod losses;
pub mod options;
pub mod policy;
pub mod references;
pub mod rollout_length;
pub mod sample_size;
pub mod stopping;
pub mod tiles;

pub use ebgstop::{ebgstop, ebgstop_slice, CheckVariant, EbgStopConfig, EbgStopOutcome, StopReason};
pub use losses::{clipped_relative_loss, elementwise_loss, mean_loss, Loss};
pub use options::StateValuesOptions;
pub use policy::{ConstantPolicy, EnergyPumping, Policy, TabularPolicy, UniformPolicy};
pub use references::{cmapve, reference_values, CmapveReport, ReferenceDesign, ReferenceSettings, ReferenceValue};
pub use rollout_length::rollout_length;
pub use sample_size::{accuracies, guaranteed_error, sample_size, state_sampling_error, Accuracies, AccuracySplit};
pub use stopping::{certified_estimate, certify, certify_slice, StopConfig, StoppingRule};
