//! The binomial survival function P(X >= t), X ~ Binomial(n, p), accurate in the far upper tail.
//!
//! The importance-weighted PERS estimate divides by it; computing it as 1 - cdf returns 0 as soon
//! as the tail falls below the double rounding of 1 (for n = 1000, p = 2^-20, t = 5 the true value
//! is 6.5e-18). Here the smaller tail is summed directly, term by term from the one nearest the
//! mode outwards (terms shrink monotonically away from the mode, so the sum stops once they no
//! longer change it): the upper tail when t lies above the mode, else the lower tail, which is then
//! at most about one half, so that 1 - lower loses no relative accuracy.

/// ln(k!), exact summation below 256 and Stirling's series above (error below 1e-16 there).
pub fn ln_factorial(k: f64) -> f64 {
    if k < 256.0 {
        let mut sum = 0.0;
        let mut i = 2.0;
        while i <= k {
            sum += f64::ln(i);
            i += 1.0;
        }
        return sum;
    }
    let inv = 1.0 / k;
    let inv2 = inv * inv;
    k * k.ln() - k
        + 0.5 * (2.0 * std::f64::consts::PI * k).ln()
        + inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)))
}

/// ln P(X = k).
fn ln_pmf(n: u64, k: u64, ln_p: f64, ln_q: f64) -> f64 {
    let (nf, kf) = (n as f64, k as f64);
    ln_factorial(nf) - ln_factorial(kf) - ln_factorial(nf - kf) + kf * ln_p + (nf - kf) * ln_q
}

/// The sum of the terms k = from, from + step, ... (step = +1 or -1, staying in 0..=n) relative to
/// the first, with the ratio of consecutive terms; stops when a term no longer changes the sum.
fn relative_tail(n: u64, from: u64, upward: bool, odds: f64) -> f64 {
    let (mut k, mut term, mut sum) = (from, 1.0f64, 1.0f64);
    loop {
        let ratio = if upward {
            if k == n {
                break;
            }
            (n - k) as f64 / (k + 1) as f64 * odds
        } else {
            if k == 0 {
                break;
            }
            k as f64 / (n - k + 1) as f64 / odds
        };
        term *= ratio;
        k = if upward { k + 1 } else { k - 1 };
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
    }
    sum
}

/// [`binomial_sf`] at every `t` (`t <= 0`: 1), after checking that `p` is in [0, 1].
pub fn binomial_survival(n: u64, p: f64, t: &[i64]) -> crate::Result<Vec<f64>> {
    if !(0.0..=1.0).contains(&p) {
        return Err(crate::invalid!("p must be in [0, 1], got {p}"));
    }
    Ok(t.iter().map(|&k| if k <= 0 { 1.0 } else { binomial_sf(n, p, k as u64) }).collect())
}

/// P(X >= t) for X ~ Binomial(n, p), p in [0, 1].
pub fn binomial_sf(n: u64, p: f64, t: u64) -> f64 {
    if t == 0 {
        return 1.0;
    }
    if t > n || p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    let (ln_p, ln_q) = (p.ln(), (-p).ln_1p());
    let odds = p / (1.0 - p);
    let mode = ((n as f64 + 1.0) * p).floor() as u64;
    if t > mode {
        // Terms decrease from t upwards.
        (ln_pmf(n, t, ln_p, ln_q) + relative_tail(n, t, true, odds).ln()).exp()
    } else {
        // Terms decrease from t - 1 downwards; the lower tail is at most about 1/2.
        let lower = (ln_pmf(n, t - 1, ln_p, ln_q) + relative_tail(n, t - 1, false, odds).ln()).exp();
        1.0 - lower
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survival_checks_p_and_is_one_at_or_below_zero() {
        assert_eq!(binomial_survival(10, 0.3, &[-2, 0, 3]).unwrap()[..2], [1.0, 1.0]);
        assert_eq!(binomial_survival(10, 0.3, &[3]).unwrap()[0], binomial_sf(10, 0.3, 3));
        assert!(binomial_survival(10, 1.5, &[1]).unwrap_err().to_string().contains("p must be in [0, 1]"));
    }

    #[test]
    fn far_tail_is_accurate_where_one_minus_cdf_is_zero() {
        // n = 1000, p = 2^-20, t = 5: sum_{k>=5} C(1000, k) p^k q^(1000-k) = 6.503e-18 (the
        // k = 5 term alone is 6.50e-18; the next is 1000/6 * p times smaller).
        let v = binomial_sf(1000, 1.0 / (1u64 << 20) as f64, 5);
        assert!((v / 6.503e-18 - 1.0).abs() < 1e-3, "{v:e}");
        let c5 = (0..5).fold(1.0, |c, i| c * (1000.0 - i as f64) / (i as f64 + 1.0));
        let p = 1.0 / (1u64 << 20) as f64;
        let first = c5 * p.powi(5) * (1.0 - p).powi(995);
        assert!(v > first && v < first * (1.0 + 1e-3));
    }

    #[test]
    fn small_cases_match_the_definition() {
        for n in [1u64, 2, 7, 30] {
            for p in [0.01f64, 0.3, 0.5, 0.9] {
                let pmf = |k: u64| {
                    let c = (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64);
                    c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
                };
                for t in 0..=n + 1 {
                    let exact: f64 = (t..=n).map(pmf).sum();
                    let got = binomial_sf(n, p, t);
                    assert!((got - exact).abs() <= 1e-13 * exact.max(1e-300) + 1e-15, "n {n} p {p} t {t}");
                }
            }
        }
        assert!((ln_factorial(300.0) - (2..=300).map(|i| (i as f64).ln()).sum::<f64>()).abs() < 1e-10);
    }
}
