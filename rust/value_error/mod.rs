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

pub mod ebgstop;
pub mod losses;
pub mod rollout_length;
pub mod sample_size;

pub use ebgstop::{ebgstop, ebgstop_slice, CheckVariant, EbgStopConfig, EbgStopOutcome, StopReason};
pub use losses::{clipped_relative_loss, elementwise_loss, mean_loss, Loss};
pub use rollout_length::rollout_length;
pub use sample_size::{accuracies, guaranteed_error, sample_size, state_sampling_error, Accuracies, AccuracySplit};
