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
//! **One-sided bounds.** A caller that acts on one bound only (a race stops a configuration when the
//! upper bound of its difference to another is below a threshold) needs each bound to hold on its
//! own at level 1 − α, not both at once. Mixing Robbins' martingale over positive λ only
//! (a half-normal mixture) gives the upper boundary S_t ≥ z·sqrt(a) with a = (tρ² + 1)/ρ² (in units
//! of σ) and z the root of
//!
//!   z²/2 + log(2Φ(z)) = log( sqrt(tρ² + 1) / α ),
//!
//! (the two-sided boundary is z = sqrt(2 log(sqrt(tρ² + 1)/α)), and 2Φ(z) ≤ 2, so the one-sided z is
//! about the two-sided one at 2α: about 10% narrower at the benchmark's α). The lower bound is the
//! same boundary mirrored; each holds with probability tending to 1 − α on its own, both together
//! with 1 − 2α.
//!
//! The interval read at each checkpoint is the running intersection of the intervals at the
//! checkpoints so far, clamped to the samples' known range.

use super::looks::check_checkpoints;
use crate::error::Result;
use crate::invalid;

/// The running interval after each checkpoint (strictly increasing sample counts, the last at
/// most `samples.len()`), at level 1 − α (`one_sided`: each bound at level 1 − α on its own),
/// tuned for `tuned_for` samples, clamped to [low, high]. Before 2 samples the interval is the
/// whole range.
pub fn asymptotic_intervals_at(
    samples: &[f64],
    low: f64,
    high: f64,
    alpha: f64,
    tuned_for: u64,
    one_sided: bool,
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
            let log_level = ((t * rho2 + 1.0).sqrt() / alpha).ln();
            let z = if one_sided { one_sided_z(log_level) } else { (2.0 * log_level).sqrt() };
            let radius = sd * z * ((t * rho2 + 1.0) / rho2).sqrt() / t;
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

/// The root z ≥ 0 of z²/2 + log(2Φ(z)) = `log_level` (Φ the standard normal distribution
/// function), by bisection: the left side increases in z, from log 1 = 0 at z = 0. A level at or
/// below 0 (α ≥ sqrt(tρ² + 1), never at the levels used) gives 0.
fn one_sided_z(log_level: f64) -> f64 {
    let f = |z: f64| 0.5 * z * z + (libm::erfc(-z / std::f64::consts::SQRT_2)).ln() - log_level;
    if log_level <= 0.0 {
        return 0.0;
    }
    // 1 ≤ 2Φ(z) ≤ 2 for z ≥ 0, so z²/2 lies in [log_level − ln 2, log_level]: the root lies
    // between the two-sided root at 2α and the two-sided root at α.
    let (mut lo, mut hi) = ((2.0 * (log_level - std::f64::consts::LN_2).max(0.0)).sqrt(), (2.0 * log_level).sqrt());
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
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
        let read = asymptotic_intervals_at(&samples, 0.0, 1.0, 0.05, 2000, false, &checkpoints).unwrap();
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
        assert_eq!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 10, false, &[1]).unwrap(), vec![(0.0, 1.0)]);
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.0, 10, false, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 0, false, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 1.0, 1.0, 0.1, 10, false, &[1]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 1.4], 0.0, 1.0, 0.1, 10, false, &[2]).is_err());
        assert!(asymptotic_intervals_at(&[0.3, 0.4], 0.0, 1.0, 0.1, 10, false, &[3]).is_err());
        // Constant samples: the interval collapses onto them.
        let flat = asymptotic_intervals_at(&[0.25; 40], 0.0, 1.0, 0.1, 40, false, &[40]).unwrap();
        assert_eq!(flat, vec![(0.25, 0.25)]);
    }

    #[test]
    fn the_one_sided_root_solves_its_equation_between_the_two_sided_roots() {
        for log_level in [0.1, 1.0, 3.0, 3.7, 10.0] {
            let z = one_sided_z(log_level);
            let phi2 = libm::erfc(-z / std::f64::consts::SQRT_2);
            assert!((0.5 * z * z + phi2.ln() - log_level).abs() < 1e-9, "{log_level}: {z}");
            assert!(z <= (2.0 * log_level).sqrt() + 1e-12);
            assert!(z >= (2.0 * (log_level - std::f64::consts::LN_2)).max(0.0).sqrt() - 1e-12);
        }
        assert_eq!(one_sided_z(-1.0), 0.0);
    }

    #[test]
    fn one_sided_bounds_are_narrower_and_each_covers_at_its_level() {
        // Normal-ish samples (sums of 4 uniforms), 2,000 paths of 500 with a look every 10 from 30:
        // each one-sided bound alone misses the mean with probability about α = 0.05 at most; both
        // sides of the two-sided sequence miss with about α together.
        let checkpoints: Vec<usize> = (3..=50).map(|k| 10 * k).collect();
        let (mut upper_misses, mut lower_misses, mut two_sided_misses) = (0, 0, 0);
        for run in 0..2000 {
            let mut rng = stream(12, 0, run);
            let samples: Vec<f64> = (0..500).map(|_| (0..4).map(|_| rng.random::<f64>()).sum::<f64>() / 4.0).collect();
            let one = asymptotic_intervals_at(&samples, 0.0, 1.0, 0.05, 500, true, &checkpoints).unwrap();
            let two = asymptotic_intervals_at(&samples, 0.0, 1.0, 0.05, 500, false, &checkpoints).unwrap();
            upper_misses += usize::from(one.iter().any(|&(_, hi)| hi < 0.5));
            lower_misses += usize::from(one.iter().any(|&(lo, _)| lo > 0.5));
            two_sided_misses += usize::from(two.iter().any(|&(lo, hi)| hi < 0.5 || lo > 0.5));
            for (a, b) in one.iter().zip(&two) {
                assert!(a.0 >= b.0 && a.1 <= b.1, "one-sided {a:?} not inside two-sided {b:?}");
            }
        }
        // α = 0.05 of 2,000 is 100; 100 + 3 sd (sd 9.7) = 130.
        assert!(
            upper_misses <= 130 && lower_misses <= 130 && two_sided_misses <= 130,
            "{upper_misses} {lower_misses} {two_sided_misses}"
        );
    }
}
