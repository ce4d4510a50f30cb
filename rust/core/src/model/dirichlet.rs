//! Dirichlet draws that keep zero concentrations at exactly zero probability.

use rand::Rng as _;
use rand_distr::{Distribution, Gamma};

use crate::rng::Rng;

/// Draws `P ~ Dir(alpha)` restricted to `support` (the indices with `alpha > 0`) into `out`;
/// every entry of `out` outside the support is set to exactly 0.
///
/// Gamma variates come from `rand_distr` (Marsaglia–Tsang, with the `U^(1/a)` boost below shape 1,
/// and an exponential draw at shape 1), as in the original. When every Gamma variate underflows
/// (possible only with tiny concentrations), the original puts all mass on a uniform index; this
/// draws the index with probability `alpha_y / sum(alpha)` instead, the limit of the Dirichlet as
/// the concentrations shrink, and never leaves the support.
pub fn sample_row(alpha: &[f64], support: &[u32], out: &mut [f64], rng: &mut Rng) {
    out.fill(0.0);
    let mut total = 0.0;
    for &y in support {
        let y = y as usize;
        let g = gamma(alpha[y], rng);
        out[y] = g;
        total += g;
    }
    if total >= 1e-300 && total.is_finite() {
        let inv = 1.0 / total;
        for &y in support {
            out[y as usize] *= inv;
        }
        return;
    }
    for &y in support {
        out[y as usize] = 0.0;
    }
    let y = pick_proportional(alpha, support, rng);
    out[y] = 1.0;
}

/// One Gamma(shape, 1) variate; `shape` must be positive and finite.
#[inline]
pub fn gamma(shape: f64, rng: &mut Rng) -> f64 {
    // Gamma::new only fails on a non-positive or non-finite shape, excluded by validation upstream.
    match Gamma::new(shape, 1.0) {
        Ok(g) => g.sample(rng),
        Err(_) => 0.0,
    }
}

/// An index of `support` drawn with probability proportional to `weights[y]`.
pub fn pick_proportional(weights: &[f64], support: &[u32], rng: &mut Rng) -> usize {
    let total: f64 = support.iter().map(|&y| weights[y as usize]).sum();
    let mut u = rng.random::<f64>() * total;
    for &y in support {
        u -= weights[y as usize];
        if u < 0.0 {
            return y as usize;
        }
    }
    support[support.len() - 1] as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn rows_sum_to_one_and_keep_support(
            alpha in proptest::collection::vec(prop_oneof![Just(0.0), 1e-3f64..50.0], 1..12),
            seed in any::<u64>(),
        ) {
            prop_assume!(alpha.iter().any(|&a| a > 0.0));
            let support: Vec<u32> = (0..alpha.len() as u32).filter(|&y| alpha[y as usize] > 0.0).collect();
            let mut out = vec![f64::NAN; alpha.len()];
            let mut rng = stream(seed, 0, 0);
            sample_row(&alpha, &support, &mut out, &mut rng);
            let sum: f64 = out.iter().sum();
            prop_assert!((sum - 1.0).abs() < 1e-12);
            for (y, &p) in out.iter().enumerate() {
                prop_assert!(p >= 0.0);
                if alpha[y] == 0.0 { prop_assert_eq!(p, 0.0); }
            }
        }
    }

    #[test]
    fn moments_match_the_dirichlet() {
        // Dir(1, 2, 3): mean a_i/a0, variance a_i (a0 - a_i) / (a0^2 (a0 + 1)).
        let alpha = [1.0, 2.0, 3.0];
        let support = [0u32, 1, 2];
        let n = 200_000;
        let mut rng = stream(1, 0, 0);
        let mut out = [0.0; 3];
        let mut sum = [0.0; 3];
        let mut sum2 = [0.0; 3];
        for _ in 0..n {
            sample_row(&alpha, &support, &mut out, &mut rng);
            for i in 0..3 {
                sum[i] += out[i];
                sum2[i] += out[i] * out[i];
            }
        }
        let a0 = 6.0;
        for i in 0..3 {
            let mean = sum[i] / n as f64;
            let var = sum2[i] / n as f64 - mean * mean;
            let true_mean = alpha[i] / a0;
            let true_var = alpha[i] * (a0 - alpha[i]) / (a0 * a0 * (a0 + 1.0));
            // 5 standard errors of the sample mean: a false alarm has probability < 1e-6.
            assert!((mean - true_mean).abs() < 5.0 * (true_var / n as f64).sqrt(), "mean {i}");
            assert!((var - true_var).abs() < 0.02 * true_var, "variance {i}: {var} vs {true_var}");
        }
    }

    #[test]
    fn underflow_falls_back_inside_the_support() {
        let alpha = [0.0, 1e-300, 0.0, 1e-300];
        let support = [1u32, 3];
        let mut out = [0.0; 4];
        let mut rng = stream(3, 0, 0);
        for _ in 0..100 {
            sample_row(&alpha, &support, &mut out, &mut rng);
            assert_eq!(out[0] + out[2], 0.0);
            assert!((out.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
    }
}
