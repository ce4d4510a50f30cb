//! Dirichlet draws that keep zero concentrations at exactly zero probability.

use rand::Rng as _;
use rand_distr::{Distribution, Exp1, Gamma, Open01, StandardNormal};

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

/// `Gamma(shape, 1)` with the constants of its sampler computed once, for callers that draw
/// many variates of the same shape (the planners draw posterior rows thousands of times between
/// two observations). The algorithms and the order of the draws are exactly those of
/// `rand_distr::Gamma::new(shape, 1.0)`, so both give the same variates from the same stream:
/// an exponential at shape 1, Marsaglia–Tsang above, and `Gamma(shape + 1) U^(1 / shape)` below.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GammaSampler {
    /// Marsaglia–Tsang's `d = a - 1/3` and `c = 1 / sqrt(9 d)` for `a = shape` (or `shape + 1`).
    d: f64,
    c: f64,
    /// `1 / shape` below shape 1, 0 at shape 1 or above.
    inv_shape: f64,
    unit: bool,
}

impl GammaSampler {
    /// `shape` must be positive and finite (as for [`gamma`]).
    pub fn new(shape: f64) -> Self {
        let large = |a: f64| {
            let d = a - 1.0 / 3.0;
            (d, 1.0 / (9.0 * d).sqrt())
        };
        if shape == 1.0 {
            Self { d: 0.0, c: 0.0, inv_shape: 0.0, unit: true }
        } else if shape < 1.0 {
            let (d, c) = large(shape + 1.0);
            Self { d, c, inv_shape: 1.0 / shape, unit: false }
        } else {
            let (d, c) = large(shape);
            Self { d, c, inv_shape: 0.0, unit: false }
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        if self.unit {
            return rng.sample(Exp1);
        }
        if self.inv_shape > 0.0 {
            let u: f64 = rng.sample(Open01);
            return self.marsaglia_tsang(rng) * u.powf(self.inv_shape);
        }
        self.marsaglia_tsang(rng)
    }

    #[inline]
    fn marsaglia_tsang(&self, rng: &mut Rng) -> f64 {
        loop {
            let x: f64 = rng.sample(StandardNormal);
            let v_cbrt = 1.0 + self.c * x;
            if v_cbrt <= 0.0 {
                continue;
            }
            let v = v_cbrt * v_cbrt * v_cbrt;
            let u: f64 = rng.sample(Open01);
            let x_sqr = x * x;
            if u < 1.0 - 0.0331 * x_sqr * x_sqr || u.ln() < 0.5 * x_sqr + self.d * (1.0 - v + v.ln()) {
                return self.d * v;
            }
        }
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
    fn cached_gamma_sampler_reproduces_rand_distr() {
        for shape in [1e-3, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 7.25, 120.0] {
            let sampler = GammaSampler::new(shape);
            let (mut a, mut b) = (stream(4, 0, 0), stream(4, 0, 0));
            for _ in 0..2_000 {
                assert_eq!(sampler.sample(&mut a).to_bits(), gamma(shape, &mut b).to_bits(), "shape {shape}");
            }
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
