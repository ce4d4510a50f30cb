//! Algorithm 1's budget: how the target accuracy ε is split between the number of states m
//! (Hoeffding over states, Lemma 2) and the per-state accuracy ε̄ of the references, the number
//! of states m, and the error bound the stored references guarantee.
//!
//! The paper sets ε_m = ε/2 and ε̄ = ε/(2(1+c)), but its Corollary 1 bounds the error by
//! ε_m + 2(1+c)ε̄, which is then 1.5ε, not ε. [`AccuracySplit::Corrected`] (the default) halves ε̄
//! so the bound is ε; [`AccuracySplit::Paper`] keeps the paper's numbers and reports 1.5ε.

use crate::error::Result;
use crate::invalid;

/// How Algorithm 1 divides the target accuracy between states and references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccuracySplit {
    /// ε_m = ε/2, ε̄ = ε/(4(1+c)): ε_m + 2(1+c)ε̄ = ε.
    Corrected,
    /// ε_m = ε/2, ε̄ = ε/(2(1+c)) as printed: ε_m + 2(1+c)ε̄ = 1.5ε.
    Paper,
}

impl std::str::FromStr for AccuracySplit {
    type Err = crate::error::BbrlError;

    /// `"corrected"` or `"paper"`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "corrected" => Ok(Self::Corrected),
            "paper" => Ok(Self::Paper),
            other => Err(invalid!("split must be 'corrected' or 'paper', got {other:?}")),
        }
    }
}

impl AccuracySplit {
    pub fn name(self) -> &'static str {
        match self {
            Self::Corrected => "corrected",
            Self::Paper => "paper",
        }
    }
}

/// The two accuracies of Algorithm 1 for a target ε.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Accuracies {
    /// The share of ε spent on sampling m states (Lemma 2).
    pub eps_m: f64,
    /// The per-state accuracy of each reference value (Lemmas 3 and 5, Algorithm 2).
    pub eps_bar: f64,
    /// Corollary 1's total ε_m + 2(1+c)ε̄: ε for the corrected split, 1.5ε for the paper's.
    pub corollary_total: f64,
}

fn check_epsilon_c(epsilon: f64, c: f64) -> Result<()> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(invalid!("epsilon must be finite and > 0, got {epsilon}"));
    }
    if !(c.is_finite() && c > 0.0) {
        return Err(invalid!("c (the clip level) must be finite and > 0, got {c}"));
    }
    Ok(())
}

fn check_delta(delta: f64) -> Result<()> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(invalid!("delta must be in (0, 1), got {delta}"));
    }
    Ok(())
}

/// ε_m and ε̄ for target `epsilon` and clip level `c`.
pub fn accuracies(epsilon: f64, c: f64, split: AccuracySplit) -> Result<Accuracies> {
    check_epsilon_c(epsilon, c)?;
    let eps_m = epsilon / 2.0;
    let eps_bar = match split {
        AccuracySplit::Corrected => epsilon / (4.0 * (1.0 + c)),
        AccuracySplit::Paper => epsilon / (2.0 * (1.0 + c)),
    };
    if eps_bar >= 1.0 {
        return Err(invalid!("the per-state accuracy epsilon_bar = {eps_bar} must be < 1 (lower epsilon)"));
    }
    Ok(Accuracies { eps_m, eps_bar, corollary_total: eps_m + 2.0 * (1.0 + c) * eps_bar })
}

/// Lemma 2's error for m states and K queries: sqrt(log(4K/δ) c² / (2m)).
pub fn state_sampling_error(m: usize, delta: f64, c: f64, k: u64) -> Result<f64> {
    check_delta(delta)?;
    check_epsilon_c(1.0, c)?;
    if m == 0 || k == 0 {
        return Err(invalid!("m (states) and k (queries) must be >= 1, got m = {m}, k = {k}"));
    }
    Ok(((4.0 * k as f64 / delta).ln() * c * c / (2.0 * m as f64)).sqrt())
}

/// Algorithm 1's number of states for target `epsilon` (ε_m = ε/2 under both splits):
/// m = ⌈log(4K/δ) c² / (2 ε_m²)⌉.
pub fn sample_size(epsilon: f64, delta: f64, c: f64, k: u64) -> Result<usize> {
    check_epsilon_c(epsilon, c)?;
    check_delta(delta)?;
    if k == 0 {
        return Err(invalid!("k (the number of times the error is queried) must be >= 1"));
    }
    let eps_m = epsilon / 2.0;
    let m = ((4.0 * k as f64 / delta).ln() * c * c / (2.0 * eps_m * eps_m)).ceil();
    if !(m.is_finite() && m < 1e12) {
        return Err(invalid!("the number of states {m} is too large (raise epsilon or delta)"));
    }
    Ok((m as usize).max(1))
}

/// The error the references guarantee, with probability ≥ 1 − δ over all K queries, for m stored
/// states, each an (ε̄, δ/(2m), τ)-approximation of a rollout truncated per Lemma 5: Theorem 1's
/// three terms without the paper's rounding, Lemma 2's term for the actual m, ε̄ + ε̄(1 + ε̄) for
/// truncation plus sampling (Lemma 3; the sampling error is relative to the truncated value, at
/// most (1 + ε̄) times the true one) and c(1 − (1 + ε̄)⁻²) for the changed normaliser (Lemma 4).
pub fn guaranteed_error(m: usize, delta: f64, c: f64, k: u64, eps_bar: f64) -> Result<f64> {
    if !(eps_bar > 0.0 && eps_bar < 1.0) {
        return Err(invalid!("epsilon_bar must be in (0, 1), got {eps_bar}"));
    }
    let states = state_sampling_error(m, delta, c, k)?;
    let references = eps_bar * (2.0 + eps_bar);
    let normaliser = c * (1.0 - (1.0 + eps_bar).powi(-2));
    Ok(states + references + normaliser)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_variants_parse_by_name() {
        assert_eq!("paper".parse::<AccuracySplit>().unwrap(), AccuracySplit::Paper);
        assert_eq!("corrected".parse::<AccuracySplit>().unwrap().name(), "corrected");
        let e = "Paper".parse::<AccuracySplit>().unwrap_err().to_string();
        assert!(e.contains("'corrected' or 'paper'"), "{e}");
        use crate::evaluators::value_error::CheckVariant;
        assert_eq!("every".parse::<CheckVariant>().unwrap(), CheckVariant::Every);
        assert!("each".parse::<CheckVariant>().unwrap_err().to_string().contains("'checkpoints' or 'every'"));
    }
    use proptest::prelude::*;

    #[test]
    fn the_paper_split_gives_one_and_a_half_epsilon() {
        let a = accuracies(0.1, 1.0, AccuracySplit::Paper).unwrap();
        assert!((a.corollary_total - 0.15).abs() < 1e-15);
        let b = accuracies(0.1, 1.0, AccuracySplit::Corrected).unwrap();
        assert!((b.corollary_total - 0.1).abs() < 1e-15);
        assert!(accuracies(0.0, 1.0, AccuracySplit::Paper).is_err());
        assert!(accuracies(0.1, -1.0, AccuracySplit::Paper).is_err());
    }

    #[test]
    fn sample_size_matches_the_formula() {
        // ε = 0.1, δ = 0.1, c = 1, K = 1: log(40) / (2 · 0.05²) = 737.77... -> 738.
        assert_eq!(sample_size(0.1, 0.1, 1.0, 1).unwrap(), 738);
        assert!(sample_size(0.1, 1.0, 1.0, 1).is_err());
        assert!(sample_size(0.1, 0.1, 1.0, 0).is_err());
        // With m from sample_size, Lemma 2's term is at most ε/2.
        let m = sample_size(0.1, 0.1, 1.0, 1).unwrap();
        assert!(state_sampling_error(m, 0.1, 1.0, 1).unwrap() <= 0.05);
    }

    proptest! {
        #[test]
        fn the_corrected_split_meets_the_target(eps in 1e-4f64..0.5, c in 0.01f64..10.0) {
            let a = accuracies(eps, c, AccuracySplit::Corrected).unwrap();
            prop_assert!(a.eps_m + 2.0 * (1.0 + c) * a.eps_bar <= eps * (1.0 + 1e-12));
        }
    }
}
