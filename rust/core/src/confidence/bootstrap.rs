//! The replicates of a percentile bootstrap: the mean and the interquartile mean (IQM: the mean
//! of the middle half, a quarter trimmed at each end) of each resample of a set of values, the
//! resamples given as indices into the values (the caller draws them, so that every statistic
//! and every set of values of one report shares the same draws).
//!
//! The IQM of a resample is found from how often it draws each value rather than by sorting it:
//! the values sorted once, a resample's middle half is the run of ranks `[low, high)` of its
//! draws, and each value contributes the part of its copies' ranks inside that run. Two passes
//! over the values per resample instead of a sort.

use crate::error::Result;
use crate::invalid;

/// The ranks `[low, high)` a trimmed mean keeps of `n` sorted values with a quarter cut at each
/// end (`low = floor(n / 4)`, SciPy's `trim_mean(x, 0.25)`).
pub fn middle_half(n: usize) -> (usize, usize) {
    let low = n / 4;
    (low, n - low)
}

/// Each resample's mean and interquartile mean: `indices` holds the resamples one after another,
/// each `values.len()` indices into `values`. Returns `(means, iqms)`, one per resample, each
/// summed in a fixed order. On one thread: a report's 2,000 resamples of a few hundred values take
/// a few milliseconds, less than a pool's hand-offs would cost.
///
/// # Errors
/// Empty or non-finite values, `indices` not a whole number of resamples, or an index out of range.
pub fn replicate_means_and_iqms(values: &[f64], indices: &[u32]) -> Result<(Vec<f64>, Vec<f64>)> {
    let n = values.len();
    if n == 0 {
        return Err(invalid!("the bootstrap needs at least one value"));
    }
    if let Some(bad) = values.iter().find(|v| !v.is_finite()) {
        return Err(invalid!("the bootstrap's values must be finite, got {bad}"));
    }
    if !indices.len().is_multiple_of(n) {
        return Err(invalid!(
            "the resampling indices ({}) are not a whole number of resamples of {n} values",
            indices.len()
        ));
    }
    if let Some(bad) = indices.iter().find(|&&i| i as usize >= n) {
        return Err(invalid!("resampling index {bad} is out of range for {n} values"));
    }
    // The values in increasing order (ties in their given order), and each value's place there.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let sorted: Vec<f64> = order.iter().map(|&i| values[i]).collect();
    let mut place = vec![0u32; n];
    for (rank, &i) in order.iter().enumerate() {
        place[i] = rank as u32;
    }
    let (low, high) = middle_half(n);
    let kept = (high - low) as f64;
    let resamples = indices.len() / n;
    let (mut means, mut iqms) = (Vec::with_capacity(resamples), Vec::with_capacity(resamples));
    let mut drawn = vec![0u32; n]; // copies of each sorted value in the resample
    for resample in indices.chunks(n) {
        let mut total = 0.0;
        for &i in resample {
            total += values[i as usize];
            drawn[place[i as usize] as usize] += 1;
        }
        // Walk the sorted values: the copies of the value at sorted place p hold the ranks
        // [before, before + drawn[p]) of the resample.
        let mut before = 0usize;
        let mut middle = 0.0;
        for (p, count) in drawn.iter_mut().enumerate() {
            let copies = *count as usize;
            *count = 0;
            let inside = (before + copies).min(high).saturating_sub(before.max(low));
            if inside > 0 {
                middle += inside as f64 * sorted[p];
            }
            before += copies;
        }
        means.push(total / n as f64);
        iqms.push(middle / kept);
    }
    Ok((means, iqms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn trimmed_mean(mut drawn: Vec<f64>) -> f64 {
        drawn.sort_by(f64::total_cmp);
        let (low, high) = middle_half(drawn.len());
        drawn[low..high].iter().sum::<f64>() / (high - low) as f64
    }

    #[test]
    fn the_iqm_of_zero_to_seven_is_its_middle_half() {
        let values: Vec<f64> = (0..8).map(f64::from).collect();
        let identity: Vec<u32> = (0..8).collect();
        let (means, iqms) = replicate_means_and_iqms(&values, &identity).unwrap();
        assert_eq!(means, vec![3.5]);
        assert_eq!(iqms, vec![3.5]); // 2, 3, 4, 5

        // Every draw of the largest value: all copies are the middle half.
        let (means, iqms) = replicate_means_and_iqms(&values, &[7; 8]).unwrap();
        assert_eq!((means, iqms), (vec![7.0], vec![7.0]));
    }

    #[test]
    fn bad_input_is_an_error_naming_it() {
        let message = |r: Result<(Vec<f64>, Vec<f64>)>| r.unwrap_err().to_string();
        assert!(message(replicate_means_and_iqms(&[], &[])).contains("at least one value"));
        assert!(message(replicate_means_and_iqms(&[1.0, f64::NAN], &[0, 1])).contains("finite"));
        assert!(message(replicate_means_and_iqms(&[1.0, 2.0], &[0, 1, 0])).contains("whole number"));
        assert!(message(replicate_means_and_iqms(&[1.0, 2.0], &[0, 2])).contains("out of range"));
    }

    proptest! {
        #[test]
        fn each_replicate_is_the_mean_and_trimmed_mean_of_its_draws(
            values in prop::collection::vec(-50i32..50, 1..40),
            draws in prop::collection::vec(any::<u32>(), 1..400),
            halves in any::<bool>(),
        ) {
            // Integers (ties included), halved or not: sums exact enough to compare at 1e-12.
            let values: Vec<f64> = values.iter().map(|&v| if halves { f64::from(v) / 2.0 } else { f64::from(v) }).collect();
            let n = values.len();
            let resamples = draws.len() / n;
            let indices: Vec<u32> = draws[..resamples * n].iter().map(|d| d % n as u32).collect();
            let (means, iqms) = replicate_means_and_iqms(&values, &indices).unwrap();
            prop_assert_eq!(means.len(), resamples);
            for (r, resample) in indices.chunks(n).enumerate() {
                let drawn: Vec<f64> = resample.iter().map(|&i| values[i as usize]).collect();
                let mean = drawn.iter().sum::<f64>() / n as f64;
                prop_assert!((means[r] - mean).abs() <= 1e-12 * (1.0 + mean.abs()));
                let iqm = trimmed_mean(drawn);
                prop_assert!((iqms[r] - iqm).abs() <= 1e-12 * (1.0 + iqm.abs()));
            }
        }
    }
}
