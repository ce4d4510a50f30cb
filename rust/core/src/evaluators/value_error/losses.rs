//! Value-error losses between a learned value `v_hat` and a reference value `v` (Sajed, Chung and
//! White 2018, section 2): squared, absolute, absolute-percentage and the clipped percentage
//! error that CMAPVE averages. The percentage losses divide by `|v| + tau`, the *reference*
//! value, so they are not symmetric in their two arguments.

use crate::error::Result;
use crate::invalid;

/// Checks `tau >= 0` (finite) and, when given, `c > 0` (finite).
pub fn check_loss_parameters(tau: f64, c: Option<f64>) -> Result<()> {
    if !(tau.is_finite() && tau >= 0.0) {
        return Err(invalid!("tau must be finite and >= 0, got {tau}"));
    }
    if let Some(c) = c {
        if !(c.is_finite() && c > 0.0) {
            return Err(invalid!("c (the clip level) must be finite and > 0, got {c}"));
        }
    }
    Ok(())
}

/// `|v_hat - v| / (|v| + tau)`. With `tau = 0` and `v = 0` this is `+inf` unless `v_hat = 0`
/// (then 0): an exact match has no error whatever the scale.
#[inline]
pub fn relative_error(v_hat: f64, v: f64, tau: f64) -> f64 {
    let diff = (v_hat - v).abs();
    if diff == 0.0 {
        return 0.0;
    }
    diff / (v.abs() + tau)
}

/// The clipped relative error `min(c, |v_hat - v| / (|v| + tau))`, in `[0, c]`.
#[inline]
pub fn clipped_relative_loss(v_hat: f64, v: f64, tau: f64, c: f64) -> f64 {
    relative_error(v_hat, v, tau).min(c)
}

/// Which of the four losses to average.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// Mean squared value error `(v_hat - v)^2`.
    Squared,
    /// Mean absolute value error `|v_hat - v|`.
    Absolute,
    /// Mean absolute percentage value error `|v_hat - v| / (|v| + tau)`.
    Percentage { tau: f64 },
    /// Clipped percentage error `min(c, |v_hat - v| / (|v| + tau))` (CMAPVE).
    ClippedPercentage { tau: f64, c: f64 },
}

impl Loss {
    /// The loss named `name` (`squared`, `absolute`, `percentage`, `clipped`), with its floor
    /// `tau` and clip level `c` where it has them (the others ignore them).
    pub fn from_name(name: &str, tau: f64, c: f64) -> Result<Self> {
        match name {
            "squared" => Ok(Loss::Squared),
            "absolute" => Ok(Loss::Absolute),
            "percentage" => Ok(Loss::Percentage { tau }),
            "clipped" => Ok(Loss::ClippedPercentage { tau, c }),
            other => Err(invalid!("unknown loss {other:?} (squared, absolute, percentage, clipped)")),
        }
    }

    /// The loss of one pair.
    #[inline]
    pub fn of(self, v_hat: f64, v: f64) -> f64 {
        match self {
            Loss::Squared => (v_hat - v) * (v_hat - v),
            Loss::Absolute => (v_hat - v).abs(),
            Loss::Percentage { tau } => relative_error(v_hat, v, tau),
            Loss::ClippedPercentage { tau, c } => clipped_relative_loss(v_hat, v, tau, c),
        }
    }

    fn check(self) -> Result<()> {
        match self {
            Loss::Squared | Loss::Absolute => Ok(()),
            Loss::Percentage { tau } => check_loss_parameters(tau, None),
            Loss::ClippedPercentage { tau, c } => check_loss_parameters(tau, Some(c)),
        }
    }
}

/// The mean loss over paired values (MSVE, MAVE, MAPVE or CMAPVE with uniform weights over the
/// given states). Errors on different lengths, no values, or a non-finite value.
pub fn mean_loss(loss: Loss, v_hat: &[f64], v: &[f64]) -> Result<f64> {
    loss.check()?;
    if v_hat.len() != v.len() {
        return Err(invalid!("v_hat has {} values but the references have {}", v_hat.len(), v.len()));
    }
    if v.is_empty() {
        return Err(invalid!("no values to compare"));
    }
    if let Some(i) = v_hat.iter().chain(v).position(|x| !x.is_finite()) {
        let (which, at) = if i < v_hat.len() { ("v_hat", i) } else { ("the references", i - v_hat.len()) };
        return Err(invalid!("{which} has a non-finite value at index {at}"));
    }
    let total: f64 = v_hat.iter().zip(v).map(|(&a, &b)| loss.of(a, b)).sum();
    Ok(total / v.len() as f64)
}

/// The loss of each pair, written into `out` (all three the same length).
pub fn elementwise_loss(loss: Loss, v_hat: &[f64], v: &[f64], out: &mut [f64]) -> Result<()> {
    loss.check()?;
    if v_hat.len() != v.len() || out.len() != v.len() {
        return Err(invalid!("v_hat has {} values but the references have {}", v_hat.len(), v.len()));
    }
    for ((o, &a), &b) in out.iter_mut().zip(v_hat).zip(v) {
        *o = loss.of(a, b);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_by_name() {
        assert_eq!(Loss::from_name("squared", 1.0, 2.0).unwrap(), Loss::Squared);
        assert_eq!(Loss::from_name("clipped", 1.0, 2.0).unwrap(), Loss::ClippedPercentage { tau: 1.0, c: 2.0 });
        let e = Loss::from_name("huber", 1.0, 2.0).unwrap_err().to_string();
        assert!(e.contains("\"huber\"") && e.contains("squared, absolute, percentage, clipped"), "{e}");
    }
    use proptest::prelude::*;

    #[test]
    fn hand_computed_cases() {
        // |12 - 10| / (10 + 1) = 2/11; clipped at 0.1 -> 0.1.
        assert!((clipped_relative_loss(12.0, 10.0, 1.0, 2.0) - 2.0 / 11.0).abs() < 1e-15);
        assert_eq!(clipped_relative_loss(12.0, 10.0, 1.0, 0.1), 0.1);
        // The paper's cost-to-goal example: -990 vs -1000 and -11 vs -1, tau = 1.
        assert!((clipped_relative_loss(-990.0, -1000.0, 1.0, 2.0) - 10.0 / 1001.0).abs() < 1e-15);
        assert_eq!(clipped_relative_loss(-11.0, -1.0, 1.0, 2.0), 2.0); // 10/2 = 5, clipped to 2
        assert_eq!(relative_error(0.0, 0.0, 0.0), 0.0);
        assert_eq!(relative_error(1.0, 0.0, 0.0), f64::INFINITY);
        let (a, b) = ([1.0, 2.0, 4.0], [1.0, 0.0, 2.0]);
        assert_eq!(mean_loss(Loss::Squared, &a, &b).unwrap(), (0.0 + 4.0 + 4.0) / 3.0);
        assert_eq!(mean_loss(Loss::Absolute, &a, &b).unwrap(), 4.0 / 3.0);
        // MAPVE with tau = 1: 0, 2/1, 2/3.
        assert!((mean_loss(Loss::Percentage { tau: 1.0 }, &a, &b).unwrap() - (2.0 + 2.0 / 3.0) / 3.0).abs() < 1e-15);
        assert!(mean_loss(Loss::Squared, &a, &b[..2]).is_err());
        assert!(mean_loss(Loss::ClippedPercentage { tau: 1.0, c: 0.0 }, &a, &b).is_err());
        assert!(mean_loss(Loss::Percentage { tau: -1.0 }, &a, &b).is_err());
        assert!(mean_loss(Loss::Absolute, &[f64::NAN], &[1.0]).is_err());
    }

    #[test]
    fn not_symmetric() {
        // The denominator is the reference: 10 vs 1 and 1 vs 10 differ.
        assert_ne!(clipped_relative_loss(10.0, 1.0, 1.0, 100.0), clipped_relative_loss(1.0, 10.0, 1.0, 100.0));
    }

    proptest! {
        #[test]
        fn clipped_loss_is_in_range_and_zero_iff_equal(
            a in -1e6f64..1e6, b in -1e6f64..1e6, tau in 0.0f64..10.0, c in 1e-3f64..10.0
        ) {
            let l = clipped_relative_loss(a, b, tau, c);
            prop_assert!((0.0..=c).contains(&l));
            prop_assert_eq!(clipped_relative_loss(a, a, tau, c), 0.0);
            prop_assert_eq!(l == 0.0, a == b);
        }
    }
}
