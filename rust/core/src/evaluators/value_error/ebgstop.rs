//! EBGStop with a τ floor (Sajed, Chung and White 2018, Algorithm 2; Mnih, Szepesvári and Audibert
//! 2008): draw bounded samples until an empirical Bernstein confidence interval certifies the mean
//! μ to within ε(|μ| + τ), with probability at least 1 − δ.
//!
//! After j samples the interval half-width is c_j = σ_j sqrt(2x/j) + 3 R x / j, with σ_j the 1/j
//! (population) standard deviation, R the range of the samples and x = −α log(δ(p − 1)/(3 p h^p))
//! for the h-th geometric check point (the j at which j ≥ ⌊β^h⌋). The running bounds LB ≤ |μ| ≤ UB
//! and LB^ ≤ μ ≤ UB^ only tighten. Two stopping rules:
//! - relative: (1 + ε)LB + 2ετ ≥ (1 − ε)UB with LB > 0, returning sign(mean)·((1 + ε)LB + (1 − ε)UB)/2;
//! - absolute (the τ rule): (UB^ − LB^)/2 ≤ ετ, returning the midpoint (UB^ + LB^)/2.
//!
//! The interval is recomputed either only at the check points (the paper's text, the default)
//! or after every sample (Mnih et al.; the α factor makes that valid too).

use crate::error::Result;
use crate::invalid;

/// When the confidence interval is recomputed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckVariant {
    /// Only at the geometric check points j ≥ ⌊β^h⌋.
    Checkpoints,
    /// After every sample (x still changes only at the check points).
    Every,
}

impl std::str::FromStr for CheckVariant {
    type Err = crate::error::BbrlError;

    /// `"checkpoints"` or `"every"`.
    fn from_str(name: &str) -> Result<Self> {
        match name {
            "checkpoints" => Ok(Self::Checkpoints),
            "every" => Ok(Self::Every),
            other => Err(invalid!("variant must be 'checkpoints' or 'every', got {other:?}")),
        }
    }
}

impl CheckVariant {
    pub fn name(self) -> &'static str {
        match self {
            Self::Checkpoints => "checkpoints",
            Self::Every => "every",
        }
    }
}

/// The parameters of one EBGStop run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EbgStopConfig {
    /// Relative accuracy ε, in (0, 1).
    pub epsilon: f64,
    /// Failure probability δ, in (0, 1).
    pub delta: f64,
    /// The absolute floor τ ≥ 0 (τ = 0 is the original EBGStop; it never stops when μ = 0).
    pub tau: f64,
    /// The range R = b − a of the samples (> 0).
    pub range: f64,
    pub variant: CheckVariant,
    /// The geometric growth of the check points, > 1 (1.1 in both papers).
    pub beta: f64,
    /// The exponent of the per-check-point failure budget δ(p − 1)/(p h^p), > 1 (1.1).
    pub p: f64,
    /// The most samples drawn before giving up (the estimate is then uncertified).
    pub max_samples: u64,
}

impl EbgStopConfig {
    /// The defaults of both papers (β = p = 1.1, check points only) and a cap of 10^9 samples.
    pub fn new(epsilon: f64, delta: f64, tau: f64, range: f64) -> Self {
        Self {
            epsilon,
            delta,
            tau,
            range,
            variant: CheckVariant::Checkpoints,
            beta: 1.1,
            p: 1.1,
            max_samples: 1_000_000_000,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(self.epsilon > 0.0 && self.epsilon < 1.0) {
            return Err(invalid!("epsilon must be in (0, 1), got {}", self.epsilon));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(invalid!("delta must be in (0, 1), got {}", self.delta));
        }
        if !(self.tau.is_finite() && self.tau >= 0.0) {
            return Err(invalid!("tau must be finite and >= 0, got {}", self.tau));
        }
        if !(self.range.is_finite() && self.range > 0.0) {
            return Err(invalid!("value_range (the range of the samples) must be finite and > 0, got {}", self.range));
        }
        if !(self.beta.is_finite() && self.beta > 1.0) {
            return Err(invalid!("beta must be finite and > 1, got {}", self.beta));
        }
        if !(self.p.is_finite() && self.p > 1.0) {
            return Err(invalid!("p must be finite and > 1, got {}", self.p));
        }
        if self.max_samples == 0 {
            return Err(invalid!("max_samples must be >= 1"));
        }
        Ok(())
    }
}

/// Why the run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The relative rule: |estimate − μ| ≤ ε|μ| + ετ certified.
    Relative,
    /// The τ rule: |estimate − μ| ≤ ετ certified.
    Absolute,
    /// `max_samples` reached: the estimate is the sample mean, not certified.
    Cap,
    /// The sample source ran out first: the estimate is the sample mean, not certified.
    Exhausted,
}

impl StopReason {
    pub fn name(self) -> &'static str {
        match self {
            Self::Relative => "relative",
            Self::Absolute => "absolute",
            Self::Cap => "cap",
            Self::Exhausted => "exhausted",
        }
    }

    /// Whether the estimate carries the (ε, δ, τ) guarantee.
    pub fn certified(self) -> bool {
        matches!(self, Self::Relative | Self::Absolute)
    }
}

/// The result of one run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EbgStopOutcome {
    pub estimate: f64,
    /// Samples drawn.
    pub n_samples: u64,
    pub reason: StopReason,
    /// The final signed interval [LB^, UB^] on μ (±inf before the first check point).
    pub lower: f64,
    pub upper: f64,
}

/// Runs EBGStop on the samples `next_sample` yields (`None`: the source is exhausted). Errors on
/// an invalid configuration, a non-finite sample, or samples spanning more than `range`.
pub fn ebgstop(config: &EbgStopConfig, mut next_sample: impl FnMut() -> Option<f64>) -> Result<EbgStopOutcome> {
    config.validate()?;
    let EbgStopConfig { epsilon, tau, range, beta, p, .. } = *config;
    // log(δ(p − 1)/(3p)): x_h = −α (this − p log h).
    let log_budget = (config.delta * (p - 1.0) / (3.0 * p)).ln();
    let every = config.variant == CheckVariant::Every;
    let (mut lb, mut ub) = (0.0f64, f64::INFINITY);
    let (mut lb_hat, mut ub_hat) = (f64::NEG_INFINITY, f64::INFINITY);
    let (mut mean, mut m2) = (0.0f64, 0.0f64);
    let (mut lowest, mut highest) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut h, mut x) = (0i32, 1.0f64);
    // ⌊β^h⌋ for the current h: the next check point.
    let mut next_check = 1.0f64;
    let mut j: u64 = 1;
    let finish =
        |estimate, n, reason, lower, upper| Ok(EbgStopOutcome { estimate, n_samples: n, reason, lower, upper });
    loop {
        if !((1.0 + epsilon) * lb + 2.0 * epsilon * tau < (1.0 - epsilon) * ub || lb == 0.0) {
            let estimate = mean.signum() * 0.5 * ((1.0 + epsilon) * lb + (1.0 - epsilon) * ub);
            return finish(estimate, j - 1, StopReason::Relative, lb_hat, ub_hat);
        }
        if j > config.max_samples {
            return finish(mean, j - 1, StopReason::Cap, lb_hat, ub_hat);
        }
        let Some(g) = next_sample() else {
            return finish(mean, j - 1, StopReason::Exhausted, lb_hat, ub_hat);
        };
        if !g.is_finite() {
            return Err(invalid!("sample {j} is not finite ({g})"));
        }
        lowest = lowest.min(g);
        highest = highest.max(g);
        if highest - lowest > range * (1.0 + 1e-12) {
            return Err(invalid!(
                "the samples span [{lowest}, {highest}], wider than value_range = {range}: the bound would not hold"
            ));
        }
        // Welford's update: mean and the sum of squared deviations.
        let d = g - mean;
        mean += d / j as f64;
        m2 += d * (g - mean);
        let at_check_point = j as f64 >= next_check;
        if at_check_point {
            h += 1;
            let previous = next_check;
            next_check = beta.powi(h).floor();
            let alpha = next_check / previous;
            x = -alpha * (log_budget - p * f64::from(h).ln());
        }
        if at_check_point || every {
            let n = j as f64;
            let sigma = (m2.max(0.0) / n).sqrt();
            let c = sigma * (2.0 * x / n).sqrt() + 3.0 * range * x / n;
            lb = lb.max(mean.abs() - c);
            ub = ub.min(mean.abs() + c);
            lb_hat = lb_hat.max(mean - c);
            ub_hat = ub_hat.min(mean + c);
            if (ub_hat - lb_hat) / 2.0 <= epsilon * tau {
                return finish((ub_hat + lb_hat) / 2.0, j, StopReason::Absolute, lb_hat, ub_hat);
            }
        }
        j += 1;
    }
}

/// EBGStop over a slice: the slice's length caps the samples (reason `Exhausted` if reached).
pub fn ebgstop_slice(config: &EbgStopConfig, samples: &[f64]) -> Result<EbgStopOutcome> {
    let mut it = samples.iter().copied();
    ebgstop(config, || it.next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use proptest::prelude::*;
    use rand::Rng as _;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// On a constant sequence every confidence interval contains the mean (σ = 0, the
        /// half-width is positive), so a certified estimate must be within ε(|g| + τ) of it,
        /// whichever rule stopped and whichever variant ran.
        #[test]
        fn constant_sequences_are_certified_correctly(
            g in -50.0f64..50.0, eps in 0.01f64..0.5, delta in 0.01f64..0.5, tau in 0.0f64..5.0, every in any::<bool>()
        ) {
            let variant = if every { CheckVariant::Every } else { CheckVariant::Checkpoints };
            let cfg = EbgStopConfig { variant, max_samples: 5_000_000, ..EbgStopConfig::new(eps, delta, tau, 100.0) };
            let out = ebgstop(&cfg, || Some(g)).unwrap();
            prop_assume!(out.reason.certified()); // g = 0 with τ = 0 never stops (the cap)
            prop_assert!((out.estimate - g).abs() <= eps * (g.abs() + tau) * (1.0 + 1e-9) + 1e-12);
            prop_assert!(out.lower <= g && g <= out.upper);
        }
    }

    #[test]
    fn a_constant_sequence_stops_by_the_relative_rule_with_the_closed_form_estimate() {
        // With σ = 0, c_j = 3Rx/j; for g > 0 the relative rule reads c ≤ ε(g + τ) and the
        // estimate is ((1 + ε)(g − c) + (1 − ε)(g + c))/2 = g − εc (derivation in the docs).
        let cfg = EbgStopConfig::new(0.1, 0.1, 1.0, 10.0);
        let out = ebgstop(&cfg, || Some(5.0)).unwrap();
        assert_eq!(out.reason, StopReason::Relative);
        let c = (out.upper - out.lower) / 2.0;
        assert!(c <= 0.1 * 6.0);
        assert!((out.estimate - (5.0 - 0.1 * c)).abs() < 1e-12);
    }

    #[test]
    fn zero_mean_stops_by_the_tau_rule_and_tau_zero_hits_the_cap() {
        let mut k = 0u64;
        let mut alternate = || {
            k += 1;
            Some(if k.is_multiple_of(2) { 1.0 } else { -1.0 })
        };
        let out = ebgstop(&EbgStopConfig::new(0.1, 0.1, 1.0, 2.0), &mut alternate).unwrap();
        assert_eq!(out.reason, StopReason::Absolute);
        assert!(out.estimate.abs() <= 0.1);
        let capped = EbgStopConfig { tau: 0.0, max_samples: 10_000, ..EbgStopConfig::new(0.1, 0.1, 0.0, 2.0) };
        let out = ebgstop(&capped, &mut alternate).unwrap();
        assert_eq!((out.reason, out.n_samples), (StopReason::Cap, 10_000));
    }

    #[test]
    fn rejects_bad_input() {
        let cfg = EbgStopConfig::new(0.1, 0.1, 1.0, 1.0);
        assert!(ebgstop_slice(&cfg, &[0.0, 2.0]).is_err());
        assert!(ebgstop_slice(&cfg, &[f64::NAN]).is_err());
        assert!(ebgstop_slice(&EbgStopConfig { beta: 1.0, ..cfg }, &[0.0]).is_err());
        assert!(ebgstop_slice(&EbgStopConfig { epsilon: 1.0, ..cfg }, &[0.0]).is_err());
        assert_eq!(ebgstop_slice(&cfg, &[0.5; 3]).unwrap().reason, StopReason::Exhausted);
    }

    #[test]
    fn every_sample_variant_stops_no_later_than_check_points_on_a_constant() {
        let a = ebgstop(&EbgStopConfig::new(0.05, 0.1, 1.0, 10.0), || Some(3.0)).unwrap();
        let cfg = EbgStopConfig { variant: CheckVariant::Every, ..EbgStopConfig::new(0.05, 0.1, 1.0, 10.0) };
        let b = ebgstop(&cfg, || Some(3.0)).unwrap();
        assert!(b.n_samples <= a.n_samples);
    }

    #[test]
    fn coverage_on_a_bernoulli() {
        // 300 runs with δ = 0.2: a failure count above 60 + 4 sd (sd = sqrt(300·0.2·0.8) ≈ 6.9)
        // would contradict the guarantee; EBGStop is conservative, so we expect almost none.
        let cfg = EbgStopConfig::new(0.1, 0.2, 0.5, 1.0);
        let mu = 0.3;
        let failures = (0..300)
            .filter(|&run| {
                let mut rng = stream(11, 0, run);
                let out = ebgstop(&cfg, || Some(if rng.random::<f64>() < mu { 1.0 } else { 0.0 })).unwrap();
                (out.estimate - mu).abs() > 0.1 * (mu + 0.5)
            })
            .count();
        assert!(failures <= 88, "{failures} failures");
    }
}
