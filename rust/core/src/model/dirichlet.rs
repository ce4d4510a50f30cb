//! Dirichlet draws that keep zero concentrations at exactly zero probability.

use rand::Rng as _;
use rand_distr::{Distribution, Gamma};

use crate::error::Result;
use crate::invalid;
use crate::rng::{purpose, stream, Rng};

/// One draw `P ~ Dir(alpha)` from stream `(seed, KERNEL, 0)`, after checking `alpha`: non-empty,
/// finite, `>= 0` and not all zero. Zero concentrations give exactly zero probability.
pub fn sample_seeded(alpha: &[f64], seed: u64) -> Result<Vec<f64>> {
    if alpha.is_empty() || alpha.iter().any(|a| !(a.is_finite() && *a >= 0.0)) || alpha.iter().all(|&a| a == 0.0) {
        return Err(invalid!("alpha must be non-empty, finite, >= 0 and not all zero"));
    }
    let support: Vec<u32> = (0..alpha.len() as u32).filter(|&y| alpha[y as usize] > 0.0).collect();
    let mut out = vec![0.0; alpha.len()];
    sample_row(alpha, &support, &mut out, &mut stream(seed, purpose::KERNEL, 0));
    Ok(out)
}

/// One transition table `P[s, a, :] ~ Dir(counts[s, a, :])` for every row of the row-major
/// (S, A, S) `counts`, from stream `(seed, KERNEL, 0)`, after checking each row: finite, `>= 0`
/// and not all zero (the error names the first bad row).
pub fn sample_table_seeded(counts: &[f64], n_states: usize, n_actions: usize, seed: u64) -> Result<Vec<f64>> {
    let (s, a) = (n_states, n_actions);
    if counts.len() != s * a * s {
        return Err(invalid!("counts has {} entries, not S*A*S = {}", counts.len(), s * a * s));
    }
    let mut out = vec![0.0; counts.len()];
    let mut rng = stream(seed, purpose::KERNEL, 0);
    let mut support = Vec::with_capacity(s);
    for (row, (alpha, p)) in counts.chunks_exact(s.max(1)).zip(out.chunks_exact_mut(s.max(1))).enumerate() {
        if alpha.iter().any(|c| !(c.is_finite() && *c >= 0.0)) || alpha.iter().all(|&c| c == 0.0) {
            return Err(invalid!(
                "counts[{}, {}, :] must be finite, >= 0 and not all zero",
                row / a.max(1),
                row % a.max(1)
            ));
        }
        support.clear();
        support.extend((0..s as u32).filter(|&y| alpha[y as usize] > 0.0));
        sample_row(alpha, &support, p, &mut rng);
    }
    Ok(out)
}

/// Draws `P ~ Dir(alpha)` restricted to `support` (the indices with `alpha > 0`) into `out`;
/// every entry of `out` outside the support is set to exactly 0.
///
/// Gamma variates come from `rand_distr` (Marsaglia–Tsang, with the `U^(1/a)` boost below shape 1,
/// and an exponential draw at shape 1), as in the original. When every Gamma variate underflows
/// (possible only with tiny concentrations), the original puts all mass on a uniform index; this
/// draws the index with probability `alpha_y / sum(alpha)` instead, the limit of the Dirichlet as
/// the concentrations shrink, and never leaves the support.
pub fn sample_row(alpha: &[f64], support: &[u32], out: &mut [f64], rng: &mut Rng) {
    crate::work::add(crate::work::Unit::GammaVariates, support.len() as u64);
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
    fn seeded_draws_check_their_concentrations_and_use_the_kernel_stream() {
        let alpha = [0.0, 2.0, 1.0];
        let mut expected = [0.0; 3];
        sample_row(&alpha, &[1, 2], &mut expected, &mut stream(4, purpose::KERNEL, 0));
        assert_eq!(sample_seeded(&alpha, 4).unwrap(), expected);
        for bad in [&[][..], &[0.0, 0.0][..], &[1.0, -1.0][..], &[f64::NAN][..]] {
            let e = sample_seeded(bad, 0).unwrap_err().to_string();
            assert!(e.contains("alpha must be non-empty, finite, >= 0 and not all zero"), "{e}");
        }
        // A 2-state, 1-action table: its rows from one kernel stream, in order.
        let counts = [1.0, 1.0, 0.0, 3.0];
        let mut rng = stream(4, purpose::KERNEL, 0);
        let (mut row0, mut row1) = ([0.0; 2], [0.0; 2]);
        sample_row(&counts[..2], &[0, 1], &mut row0, &mut rng);
        sample_row(&counts[2..], &[1], &mut row1, &mut rng);
        assert_eq!(sample_table_seeded(&counts, 2, 1, 4).unwrap(), [row0, row1].concat());
        let e = sample_table_seeded(&[1.0, 1.0, 0.0, 0.0], 2, 1, 4).unwrap_err().to_string();
        assert!(e.contains("counts[1, 0, :] must be finite"), "{e}");
        assert!(sample_table_seeded(&[1.0; 3], 2, 1, 4).is_err());
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
