//! Lemma 5: how far to roll out so that cutting a discounted return costs at most ε(|v| + τ).
//! Dropping every reward after step l changes a value by at most R_max γ^l / (1 − γ), and
//! |v| + τ ≥ τ, so l = ⌈(log(ετ(1 − γ)) − log R_max) / log γ⌉ suffices. With τ = 0 no finite l
//! works in general (a value of 0 would need the exact return), so τ = 0 is an error.

use crate::error::Result;
use crate::invalid;

/// Lemma 5's truncation length, at least 1 step. `r_max` bounds |reward|; `r_max = 0` needs 1.
pub fn rollout_length(epsilon: f64, tau: f64, r_max: f64, gamma: f64) -> Result<usize> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(invalid!("epsilon must be finite and > 0, got {epsilon}"));
    }
    if tau == 0.0 {
        return Err(invalid!("tau = 0 gives no finite rollout length (Lemma 5 divides by tau); use tau > 0, e.g. 1"));
    }
    if !(tau.is_finite() && tau > 0.0) {
        return Err(invalid!("tau must be finite and > 0, got {tau}"));
    }
    if !(r_max.is_finite() && r_max >= 0.0) {
        return Err(invalid!("r_max must be finite and >= 0, got {r_max}"));
    }
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(invalid!(
            "gamma must be in (0, 1) for a truncation length, got {gamma} (an undiscounted task needs a time limit)"
        ));
    }
    if r_max == 0.0 {
        return Ok(1);
    }
    let l = (((epsilon * tau * (1.0 - gamma)).ln() - r_max.ln()) / gamma.ln()).ceil();
    if l.is_nan() || l >= 1e12 {
        return Err(invalid!("the rollout length {l} is too large"));
    }
    Ok((l as usize).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_formula_and_the_bound() {
        // ε = 0.01, τ = 1, R_max = 1, γ = 0.99: log(1e-4) / log(0.99) = 916.4 -> 917.
        assert_eq!(rollout_length(0.01, 1.0, 1.0, 0.99).unwrap(), 917);
        for &(eps, tau, r, g) in &[(0.01, 1.0, 81.0, 0.99), (0.05, 0.5, 1.0, 0.9), (0.2, 2.0, 6000.0, 0.95)] {
            let l = rollout_length(eps, tau, r, g).unwrap();
            // The tail bound holds at l and fails at l - 1 (l is the smallest such length).
            assert!(r * g.powi(l as i32) / (tau * (1.0 - g)) <= eps);
            assert!(r * g.powi(l as i32 - 1) / (tau * (1.0 - g)) > eps);
        }
        assert_eq!(rollout_length(0.1, 1.0, 0.0, 0.99).unwrap(), 1);
        assert!(rollout_length(0.1, 0.0, 1.0, 0.99).unwrap_err().to_string().contains("tau = 0"));
        assert!(rollout_length(0.1, 1.0, 1.0, 1.0).is_err());
        assert!(rollout_length(-0.1, 1.0, 1.0, 0.9).is_err());
    }
}
