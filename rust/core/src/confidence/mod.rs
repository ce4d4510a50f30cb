//! Anytime-valid confidence sequences for the mean of bounded samples: intervals [L_t, U_t] that
//! contain the mean at every t at once with probability at least 1 − δ, so a caller may stop
//! whenever it likes (after a chosen accuracy is reached, say) and keep the guarantee.
//!
//! | module | one job |
//! |---|---|
//! | `betting` | the hedged capital process with predictable plug-in bets (Waudby-Smith and Ramdas, JRSS-B 2024), optionally aimed at the caller's stopping width, and its running intersection |
//! | `asymptotic` | the asymptotic (time-uniform central limit) sequence of Waudby-Smith et al. (2024): a Gaussian-mixture boundary with the sample standard deviation |
//! | `looks` | the check of the sample counts a sequence is read at |
//! | `checkpoints` | a sequence read after chosen sample counts, for many streams in parallel (a race's pairs) |
//! | `bootstrap` | the replicates of a percentile bootstrap: each resample's mean and interquartile mean |
//!
//! Evaluators use it through [`BettingSequence::push`] and [`BettingSequence::interval`]; the
//! value-error estimator stops it by relative accuracy, and a paired-difference sequence (the
//! difference of two bounded samples is bounded too) can race configurations on the same API.

pub mod asymptotic;
pub mod betting;
pub mod bootstrap;
pub mod checkpoints;
mod looks;

pub use asymptotic::asymptotic_intervals_at;
pub use betting::{BetAim, BettingOptions, BettingSequence};
pub use checkpoints::{intervals_at, intervals_at_rows, Sequence};
