//! A betting confidence sequence for the mean μ of samples in a known interval [low, low + range]
//! (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting", JRSS-B
//! 2024, the hedged capital process with predictable plug-in bets).
//!
//! Samples are rescaled to y ∈ [0, 1]. For each candidate mean m ∈ [0, 1] two gamblers bet that
//! the mean is above or below m:
//!   K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)(y_i − m)),  K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)(y_i − m)),
//! with λ⁺_i(m) = min(λ_i, c/m), λ⁻_i(m) = min(λ_i, c/(1 − m)) and the predictable plug-in bet
//! λ_i = sqrt(2 log(2/δ) / (σ̂²_{i−1} i log(1 + i))), where σ̂² is the regularised running
//! variance (its prior 1/4 counts as one sample); with a [`BetAim`], λ_i is at least w_{i−1}/σ̂²_{i−1}
//! for the half-width w the caller stops at. The only cap is the truncation at c/m and
//! c/(1 − m), which keeps every factor ≥ 1 − c: a low-variance stream may bet far more than c
//! where m is far from the samples, and that is where the interval shrinks fastest. At the true mean both products are nonnegative
//! martingales, so by Ville's inequality the hedged capital max(K⁺/2, K⁻/2) reaches 1/δ with
//! probability at most δ, at any time. The confidence set {m : K⁺_t(m) < 2/δ and K⁻_t(m) < 2/δ}
//! is an interval: every factor of K⁺ decreases in m and every factor of K⁻ increases, so the
//! first test rejects a prefix of [0, 1] and the second a suffix. Its running intersection is
//! again a confidence sequence, and tighter.
//!
//! The capitals are kept on a grid of candidate means spanning the current interval. Because the
//! rejected sets are a prefix and a suffix, the bounds read off the grid (the last rejected point
//! of each side) are conservative: the true interval lies inside them. When fewer than a quarter
//! of the grid points remain inside, a fresh grid is laid over the interval and its capitals are
//! recomputed from the stored samples and bets, so the resolution follows the interval down
//! (a re-grid costs one pass over the samples; it happens about once per halving of the width
//! twice over, so the total cost stays linear in the samples up to a logarithm).
//!
//! Capitals are plain products: a product that overflows is already rejected and leaves the
//! grid's live range, and one that underflows to 0 only makes the interval wider (conservative).

use crate::error::Result;
use crate::invalid;

/// The tuning of the bets and the grid; the guarantee holds for every choice.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BettingOptions {
    /// The truncation c, in (0, 1): a bet at candidate m is at most c/m (upward) or c/(1 − m)
    /// (downward), so each factor stays at least 1 − c > 0 (Waudby-Smith and Ramdas suggest 1/2
    /// or 3/4).
    pub max_bet: f64,
    /// Candidate means on the grid (≥ 8). More points cost more per sample but give a bound
    /// closer to the exact interval between re-grids.
    pub grid: usize,
    /// `None`: the anytime bets, whose `t log(1 + t)` keeps the interval shrinking at every
    /// sample count. `Some(n)`: bets tuned for the interval after `n` samples (the `t log(1 + t)`
    /// of the bet replaced by `n`, Waudby-Smith and Ramdas' fixed-time plug-in): still valid at
    /// every time, and narrowest around `n`, where a race of `n` test MDPs ends.
    pub tuned_for: Option<u64>,
    /// `Some(aim)`: never bet less than the growth-optimal bet against a mean at the half-width
    /// the caller needs, `aim.half_width(μ̂)` from the estimate before the sample (see [`BetAim`]).
    pub aim: Option<BetAim>,
    /// `true`: each bound holds at level 1 − δ on its own (a gambler rejects at capital 1/δ, for a
    /// caller that acts on one bound only); `false`: both at once (the hedged 2/δ).
    pub one_sided: bool,
}

/// The half-width `relative · |μ̂| + absolute` (in the samples' units) that a caller stops at,
/// such as the value-error rule's ε(|μ̂| + τ).
///
/// Why aim: the interval is narrow enough once the candidates about that far from the mean are
/// rejected, and against a candidate at distance w the bet that makes the capital grow fastest
/// is about w/σ² (Kelly's bet for a mean shift w). The anytime plug-in bet shrinks like
/// 1/√(t log t) and falls below that long before the caller's width is reached, so its capital
/// grows slowly where the caller looks. The aimed bet is a function of the samples before it
/// (predictable), so the guarantee is unchanged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BetAim {
    pub relative: f64,
    pub absolute: f64,
}

impl BetAim {
    /// The half-width aimed at when the estimate is `estimate`, in the samples' units.
    pub fn half_width(&self, estimate: f64) -> f64 {
        self.relative * estimate.abs() + self.absolute
    }
}

impl Default for BettingOptions {
    fn default() -> Self {
        Self { max_bet: 0.5, grid: 128, tuned_for: None, aim: None, one_sided: false }
    }
}

impl BettingOptions {
    pub fn validate(&self) -> Result<()> {
        if !(self.max_bet > 0.0 && self.max_bet < 1.0) {
            return Err(invalid!("max_bet must be in (0, 1), got {}", self.max_bet));
        }
        if !(8..=1 << 16).contains(&self.grid) {
            return Err(invalid!("grid must be between 8 and 65536 points, got {}", self.grid));
        }
        if self.tuned_for == Some(0) {
            return Err(invalid!("the bets must be tuned for at least 1 sample, got 0"));
        }
        if let Some(aim) = self.aim {
            let finite = |x: f64| x.is_finite() && x >= 0.0;
            if !(finite(aim.relative) && finite(aim.absolute) && aim.relative + aim.absolute > 0.0) {
                return Err(invalid!(
                    "the aimed half-width needs relative and absolute parts >= 0, not both 0, got {} and {}",
                    aim.relative,
                    aim.absolute
                ));
            }
        }
        Ok(())
    }
}

/// The running betting confidence sequence of one stream of bounded samples.
#[derive(Clone, Debug)]
pub struct BettingSequence {
    low: f64,
    range: f64,
    /// 2/δ: the capital at which a gambler's candidate mean is rejected (hedging halves 1/δ);
    /// 1/δ when each bound stands on its own.
    reject_at: f64,
    /// 2 log(2/δ), the numerator of the plug-in bet.
    bet_scale: f64,
    options: BettingOptions,
    n: u64,
    /// Σ y and Σ (y_i − μ̂_i)² for the regularised mean and variance of the bets.
    sum: f64,
    squared_deviations: f64,
    /// (y_i, λ_i) of every sample, to recompute capitals on a new grid.
    history: Vec<[f64; 2]>,
    grid: Vec<f64>,
    /// The truncations c/m and c/(1 − m) of each grid point's bets (infinite at m = 0 and 1).
    cap_up: Vec<f64>,
    cap_down: Vec<f64>,
    capital_up: Vec<f64>,
    capital_down: Vec<f64>,
    /// Grid points still inside the interval: `first..end`.
    first: usize,
    end: usize,
    /// The running intersection, rescaled to [0, 1].
    lower: f64,
    upper: f64,
}

impl BettingSequence {
    /// A sequence for samples in [low, low + range] at level 1 − δ.
    pub fn new(low: f64, range: f64, delta: f64, options: BettingOptions) -> Result<Self> {
        if !low.is_finite() {
            return Err(invalid!("the samples' lower bound must be finite, got {low}"));
        }
        if !(range.is_finite() && range > 0.0) {
            return Err(invalid!("value_range (the range of the samples) must be finite and > 0, got {range}"));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(invalid!("delta must be in (0, 1), got {delta}"));
        }
        options.validate()?;
        let mut sequence = Self {
            low,
            range,
            reject_at: if options.one_sided { 1.0 / delta } else { 2.0 / delta },
            bet_scale: 2.0 * (2.0 / delta).ln(),
            options,
            n: 0,
            sum: 0.0,
            squared_deviations: 0.0,
            history: Vec::new(),
            grid: Vec::new(),
            cap_up: Vec::new(),
            cap_down: Vec::new(),
            capital_up: Vec::new(),
            capital_down: Vec::new(),
            first: 0,
            end: 0,
            lower: 0.0,
            upper: 1.0,
        };
        sequence.lay_grid();
        Ok(sequence)
    }

    /// Samples seen.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The running interval on μ in the samples' units, [low, low + range] before any sample.
    pub fn interval(&self) -> (f64, f64) {
        (self.low + self.lower * self.range, self.low + self.upper * self.range)
    }

    /// The mean of the samples seen (NaN before any).
    pub fn mean(&self) -> f64 {
        self.low + self.range * self.sum / self.n as f64
    }

    /// Adds one sample; an error if it is not finite or lies outside [low, low + range] (beyond
    /// rounding), since the guarantee would not hold.
    pub fn push(&mut self, x: f64) -> Result<()> {
        let y = (x - self.low) / self.range;
        if !(-1e-9..=1.0 + 1e-9).contains(&y) {
            return Err(invalid!(
                "sample {x} is outside the declared bounds [{}, {}]: the confidence sequence would not hold",
                self.low,
                self.low + self.range
            ));
        }
        let y = y.clamp(0.0, 1.0);
        let bet = self.next_bet();
        let live = self.first..self.end;
        let points = self.grid[live.clone()].iter().zip(&self.cap_up[live.clone()]).zip(&self.cap_down[live.clone()]);
        let capitals = self.capital_up[live.clone()].iter_mut().zip(&mut self.capital_down[live]);
        for (((&m, &cap_up), &cap_down), (up, down)) in points.zip(capitals) {
            *up *= 1.0 + bet.min(cap_up) * (y - m);
            *down *= 1.0 - bet.min(cap_down) * (y - m);
        }
        self.history.push([y, bet]);
        self.n += 1;
        self.sum += y;
        let mean = (0.5 + self.sum) / (self.n as f64 + 1.0);
        self.squared_deviations += (y - mean) * (y - mean);
        self.tighten();
        if self.live_points() < self.options.grid / 4 && self.upper - self.lower > 1e-14 {
            self.lay_grid();
        }
        Ok(())
    }

    /// The predictable plug-in bet for the next sample, from the samples before it.
    fn next_bet(&self) -> f64 {
        let t = self.n as f64 + 1.0;
        let variance = (0.25 + self.squared_deviations) / t;
        let horizon = match self.options.tuned_for {
            Some(n) => n as f64,
            None => t * (1.0 + t).ln(),
        };
        let plug_in = (self.bet_scale / (variance * horizon)).sqrt();
        match self.options.aim {
            Some(aim) => {
                let estimate = self.low + self.range * (0.5 + self.sum) / t;
                plug_in.max(aim.half_width(estimate) / self.range / variance)
            }
            None => plug_in,
        }
    }

    fn live_points(&self) -> usize {
        self.end - self.first
    }

    /// Moves the bounds past the grid points each gambler has rejected (a prefix for the upward
    /// bets, a suffix for the downward ones), and collapses an empty interval to its middle.
    fn tighten(&mut self) {
        while self.first < self.end && self.capital_up[self.first] >= self.reject_at {
            self.lower = self.lower.max(self.grid[self.first]);
            self.first += 1;
        }
        while self.first < self.end && self.capital_down[self.end - 1] >= self.reject_at {
            self.upper = self.upper.min(self.grid[self.end - 1]);
            self.end -= 1;
        }
        if self.lower > self.upper {
            // Every candidate rejected (an event of probability at most δ): keep a point.
            let middle = 0.5 * (self.lower + self.upper);
            (self.lower, self.upper) = (middle, middle);
        }
    }

    /// A grid of `options.grid` candidate means over the current interval, its capitals replayed
    /// from the stored samples.
    fn lay_grid(&mut self) {
        let size = self.options.grid;
        let (lo, hi) = (self.lower, self.upper);
        self.grid = (0..size).map(|k| lo + (hi - lo) * k as f64 / (size - 1) as f64).collect();
        let c = self.options.max_bet;
        self.cap_up = self.grid.iter().map(|&m| if m > 0.0 { c / m } else { f64::INFINITY }).collect();
        self.cap_down = self.grid.iter().map(|&m| if m < 1.0 { c / (1.0 - m) } else { f64::INFINITY }).collect();
        let mut up = vec![1.0; size];
        let mut down = vec![1.0; size];
        for g in 0..size {
            let (m, cap_up, cap_down) = (self.grid[g], self.cap_up[g], self.cap_down[g]);
            for &[y, bet] in &self.history {
                up[g] *= 1.0 + bet.min(cap_up) * (y - m);
                down[g] *= 1.0 - bet.min(cap_down) * (y - m);
            }
        }
        (self.capital_up, self.capital_down) = (up, down);
        (self.first, self.end) = (0, size);
        self.tighten();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;
    use proptest::prelude::*;
    use rand::Rng as _;

    #[test]
    fn the_interval_shrinks_around_a_constant_and_is_nested() {
        let mut cs = BettingSequence::new(-10.0, 20.0, 0.05, BettingOptions::default()).unwrap();
        assert_eq!(cs.interval(), (-10.0, 10.0));
        let mut previous = cs.interval();
        for _ in 0..2000 {
            cs.push(3.0).unwrap();
            let now = cs.interval();
            assert!(now.0 >= previous.0 && now.1 <= previous.1, "{now:?} not inside {previous:?}");
            assert!(now.0 <= 3.0 && 3.0 <= now.1, "{now:?}");
            previous = now;
        }
        assert!(previous.1 - previous.0 < 0.2, "{previous:?}");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(BettingSequence::new(0.0, 0.0, 0.1, BettingOptions::default()).is_err());
        assert!(BettingSequence::new(0.0, 1.0, 1.0, BettingOptions::default()).is_err());
        assert!(BettingSequence::new(0.0, 1.0, 0.1, BettingOptions { max_bet: 1.0, ..Default::default() }).is_err());
        assert!(BettingSequence::new(0.0, 1.0, 0.1, BettingOptions { grid: 2, ..Default::default() }).is_err());
        for (relative, absolute) in [(0.0, 0.0), (-0.1, 1.0), (0.1, f64::NAN)] {
            let aim = Some(BetAim { relative, absolute });
            let e = BettingSequence::new(0.0, 1.0, 0.1, BettingOptions { aim, ..Default::default() }).unwrap_err();
            assert!(e.to_string().contains("aimed half-width"), "{e}");
        }
        let mut cs = BettingSequence::new(0.0, 1.0, 0.1, BettingOptions::default()).unwrap();
        let e = cs.push(1.5).unwrap_err().to_string();
        assert!(e.contains("outside the declared bounds"), "{e}");
        assert!(cs.push(f64::NAN).is_err());
    }

    #[test]
    fn covers_a_bernoulli_mean_at_every_time() {
        // 200 paths of 1000 Bernoulli(0.3) samples at δ = 0.1: a path fails if the interval ever
        // misses 0.3. Expected failures ≤ 20; 20 + 4 sd (sd = 4.2) = 37 would contradict the
        // guarantee (a smoke check; the Clopper–Pearson coverage tests are in Python).
        let aimed = BettingOptions { aim: Some(BetAim { relative: 0.1, absolute: 0.02 }), ..Default::default() };
        for options in [BettingOptions::default(), aimed] {
            assert!(bernoulli_failures(options) <= 37, "{options:?}");
        }
    }

    #[test]
    fn aimed_bets_reach_the_aimed_width_sooner() {
        // Samples uniform on [0.15, 0.85] (sd 0.2): the samples until the half-width is 0.02. The
        // anytime bet there is about 0.2, the aimed one 0.02/0.2² = 0.5, both under the cap 1.
        let until_narrow = |options: BettingOptions| {
            let mut rng = stream(6, 0, 0);
            let mut cs = BettingSequence::new(0.0, 1.0, 0.1, options).unwrap();
            while cs.interval().1 - cs.interval().0 > 0.04 {
                cs.push(0.15 + 0.7 * rng.random::<f64>()).unwrap();
            }
            cs.n()
        };
        let anytime = until_narrow(BettingOptions::default());
        let aimed =
            until_narrow(BettingOptions { aim: Some(BetAim { relative: 0.0, absolute: 0.02 }), ..Default::default() });
        assert!(4 * aimed < 3 * anytime, "aimed {aimed} vs anytime {anytime}");
    }

    fn bernoulli_failures(options: BettingOptions) -> usize {
        (0..200)
            .filter(|&run| {
                let mut rng = stream(5, 0, run);
                let mut cs = BettingSequence::new(0.0, 1.0, 0.1, options).unwrap();
                (0..1000).any(|_| {
                    cs.push(if rng.random::<f64>() < 0.3 { 1.0 } else { 0.0 }).unwrap();
                    let (lo, hi) = cs.interval();
                    !(lo <= 0.3 && 0.3 <= hi)
                })
            })
            .count()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever the samples, the interval only shrinks and stays inside the declared bounds.
        #[test]
        fn nested_and_inside_the_bounds(xs in proptest::collection::vec(0.0f64..=1.0, 1..300), delta in 0.01f64..0.5) {
            let mut cs = BettingSequence::new(2.0, 4.0, delta, BettingOptions::default()).unwrap();
            let mut previous = cs.interval();
            for &x in &xs {
                cs.push(2.0 + 4.0 * x).unwrap();
                let now = cs.interval();
                prop_assert!(now.0 >= previous.0 - 1e-12 && now.1 <= previous.1 + 1e-12);
                prop_assert!(now.0 >= 2.0 - 1e-12 && now.1 <= 6.0 + 1e-12 && now.0 <= now.1);
                previous = now;
            }
        }
    }
}
