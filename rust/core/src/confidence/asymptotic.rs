//! An asymptotic confidence sequence for a mean (Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas,
//! "Time-uniform central limit theory and asymptotic confidence sequences", Annals of Statistics
//! 2024): the Gaussian-mixture boundary of Robbins with the sample standard deviation in place of
//! the true one,
//!
//!   μ̂_t ± σ̂_t · sqrt( 2(tρ² + 1) / (t²ρ²) · log( sqrt(tρ² + 1) / α ) ),
//!
//! with ρ² = (−2 log α + log(−2 log α + 1)) / t* tuned so that the boundary is narrowest around
//! t* samples. It covers the mean at every time at once with probability tending to 1 − α as the
//! sample counts grow (any distribution with finite variance): the sequential counterpart of the
//! normal interval that the benchmark's paired Z-test uses, and, unlike a confidence sequence for
//! bounded samples, its width follows the samples' spread and not the width of their range.
//!
//! The interval read at each checkpoint is the running intersection of the intervals at the
//! checkpoints so far, clamped to the samples' known range.

use super::looks::check_checkpoints;
use crate::error::Result;
use crate::invalid;

/// The running interval after each checkpoint (strictly increasing sample counts, the last at
/// most `samples.len()`), at level 1 − α, tuned for `tuned_for` samples, clamped to [low, high].
/// Before 2 samples the interval is the whole range.
pub fn asymptotic_intervals_at(
    samples: &[f64],
    low: f64,
    high: f64,
    alpha: f64,
    tuned_for: u64,
    checkpoints: &[usize],
) -> Result<Vec<(f64, f64)>> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(invalid!("alpha must be in (0, 1), got {alpha}"));
    }
    if tuned_for == 0 {
        return Err(invalid!("the sequence must be tuned for at least 1 sample, got 0"));
    }
    if !(low.is_finite() && high.is_finite() && low < high) {
        return Err(invalid!("the samples' range must be finite with low < high, got [{low}, {high}]"));
    }
    check_checkpoints(checkpoints, samples.len())?;
    let log_alpha = -2.0 * alpha.ln();
    let rho2 = (log_alpha + (log_alpha + 1.0).ln()) / tuned_for as f64;
    // Welford's running mean and sum of squared deviations: no cancellation on large sums.
    let (mut mean, mut m2) = (0.0_f64, 0.0_f64);
    let (mut lower, mut upper) = (low, high);
    let mut out = Vec::with_capacity(checkpoints.len());
    let mut next = 0;
    for (k, &x) in samples.iter().enumerate() {
        if next == checkpoints.len() {
            break;
        }
        if !x.is_finite() || x < low || x > high {
            return Err(invalid!("sample {x} is outside the declared range [{low}, {high}]"));
        }
        let t = (k + 1) as f64;
        let delta = x - mean;
        mean += delta / t;
        m2 += delta * (x - mean);
        if checkpoints[next] != k + 1 {
            continue;
        }
        next += 1;
        if k >= 1 {
            let sd = (m2 / (t - 1.0)).sqrt();
            let radius = sd * (2.0 * (t * rho2 + 1.0) / (t * t * rho2) * ((t * rho2 + 1.0).sqrt() / alpha).ln()).sqrt();
            let (low_now, high_now) = (mean - radius, mean + radius);
            if low_now > upper {
                // Disjoint with the interval so far (an event of small probability): keep its
                // point nearest the new one, so that the intervals stay nested.
                lower = upper;
            } else if high_now < lower {
                upper = lower;
            } else {
                (lower, upper) = (lower.max(low_now), upper.min(high_now));
            }
        }
        out.push((lower, upper));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use rand::Rng as _;

    #[test]
    fn narrows_like_the_normal_interval_and_is_nested() {
        let mut rng = stream(11, 0, 0);
        let samples: Vec<f64> = (0..2000).map(|_| rng.random::<f64>()).collect();
        let checkpoints: Vec<usize> = (1..=20).map(|k| 100 * k).collect();
        let read = asymptotic_intervals_at(&samples, 0.0, 1.0, 0.05, 2000, &checkpoints).unwrap();
        for pair in read.windows(2) {
            assert!(pair[1].0 >= pair[0].0 && pair[1].1 <= pair[0].1, "{pair:?}");
        }
        // At the tuned count the half-width is a few standard errors: sd of U(0,1) is 0.289.
        let (lo, hi) = read[19];
        let se = 0.2887 / (2000f64).sqrt();
        assert!((hi - lo) / 2.0 > 1.96 * se && (hi - lo) / 2.0 < 4.0 * se, "{lo} {hi}");
        assert!(lo < 0.5 && hi > 0.5);
    }

    #[test]
    fn the_first_sample_gives_the_range_and_bad_input_is_refused() {
        assert_eq!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 10, &[1]).unwrap(), vec![(0.0, 1.0)]);
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.0, 10, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 0, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 1.0, 1.0, 0.1, 10, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 1.4], 0.0, 1.0, 0.1, 10, &[2]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 10, &[3]).is_err());
        // Constant samples: the interval collapses onto them.
        let flat = asymptotic_intervals_at(&[0.25; 40], 0.0, 1.0, 0.1, 40, &[40]).unwrap();
        assert_eq!(flat, vec![(0.25, 0.25)]);
    }
}
