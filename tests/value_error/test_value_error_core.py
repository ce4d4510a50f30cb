"""Losses, Algorithm 1's budget, Lemma 5's rollout length and EBGStop (bbrl.value_error)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from bbrl import value_error as ve

finite = st.floats(-1e6, 1e6, allow_nan=False)


# --- losses -------------------------------------------------------------------------------------


def test_losses_on_hand_computed_cases():
    assert ve.clipped_relative_loss(12.0, 10.0, tau=1.0, c=2.0) == pytest.approx(2 / 11, rel=1e-15)
    assert ve.clipped_relative_loss(12.0, 10.0, tau=1.0, c=0.1) == 0.1
    # Cost-to-goal: -990 against -1000 is 1% off, -11 against -1 is 500% off (clipped to c = 2).
    assert ve.clipped_relative_loss(-990.0, -1000.0, 1.0, 2.0) == pytest.approx(10 / 1001, rel=1e-15)
    assert ve.clipped_relative_loss(-11.0, -1.0, 1.0, 2.0) == 2.0
    v_hat, v = np.array([1.0, 2.0, 4.0]), np.array([1.0, 0.0, 2.0])
    assert ve.msve(v_hat, v) == pytest.approx(8 / 3)
    assert ve.mave(v_hat, v) == pytest.approx(4 / 3)
    assert ve.mapve(v_hat, v, tau=1.0) == pytest.approx((0 + 2 + 2 / 3) / 3)
    assert ve.cmapve_estimate(v_hat, v, tau=1.0, c=1.0) == pytest.approx((0 + 1 + 2 / 3) / 3)
    np.testing.assert_allclose(ve.clipped_relative_loss(v_hat, v, 1.0, 1.0), [0.0, 1.0, 2 / 3])
    np.testing.assert_allclose(ve.squared_error(v_hat, 1.0), [0.0, 1.0, 9.0])  # broadcast
    assert ve.relative_error(1.0, 0.0, tau=0.0) == math.inf
    assert ve.relative_error(0.0, 0.0, tau=0.0) == 0.0


def test_losses_reject_bad_parameters():
    with pytest.raises(ValueError, match="tau"):
        ve.clipped_relative_loss(1.0, 2.0, tau=-1.0, c=1.0)
    with pytest.raises(ValueError, match="c"):
        ve.clipped_relative_loss(1.0, 2.0, tau=1.0, c=0.0)
    with pytest.raises(ValueError, match="finite"):
        ve.clipped_relative_loss(np.nan, 2.0, tau=1.0, c=1.0)
    with pytest.raises(ValueError, match="2 values but the references have 3"):
        ve.msve([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError):
        ve.msve([], [])


@given(finite, finite, st.floats(0, 10), st.floats(1e-3, 10))
def test_clipped_loss_properties(a, b, tau, c):
    loss = ve.clipped_relative_loss(a, b, tau, c)
    assert 0.0 <= loss <= c
    assert (loss == 0.0) == (a == b)
    assert ve.clipped_relative_loss(a, a, tau, c) == 0.0


def test_clipped_loss_is_not_symmetric():
    assert ve.clipped_relative_loss(10.0, 1.0, 1.0, 100.0) == pytest.approx(4.5)
    assert ve.clipped_relative_loss(1.0, 10.0, 1.0, 100.0) == pytest.approx(9 / 11)


# --- budget -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("eps", "delta", "c", "k"), [(0.1, 0.1, 1.0, 1), (0.05, 0.01, 2.0, 1000), (0.2, 0.5, 0.5, 7)])
def test_sample_size_is_algorithm_one(eps, delta, c, k):
    expected = math.ceil(math.log(4 * k / delta) * c**2 / (2 * (eps / 2) ** 2))
    assert ve.sample_size(eps, delta, c, k) == expected
    # Lemma 2's error at that m is within eps / 2.
    assert math.sqrt(math.log(4 * k / delta) * c**2 / (2 * expected)) <= eps / 2


def test_sample_size_rejects_bad_input():
    for bad in [dict(epsilon=0.0), dict(delta=1.0), dict(delta=0.0), dict(c=-1.0), dict(k=0)]:
        kwargs = dict(epsilon=0.1, delta=0.1, c=1.0, k=1) | bad
        with pytest.raises(ValueError):
            ve.sample_size(**kwargs)


@pytest.mark.parametrize(
    ("eps", "tau", "r_max", "gamma"), [(0.01, 1.0, 1.0, 0.99), (0.05, 1.0, 81.0, 0.99), (0.1, 0.5, 6000.0, 0.95)]
)
def test_rollout_length_is_lemma_five(eps, tau, r_max, gamma):
    length = ve.rollout_length(eps, tau, r_max, gamma)
    assert length == math.ceil((math.log(eps * tau * (1 - gamma)) - math.log(r_max)) / math.log(gamma))
    assert r_max * gamma**length / (tau * (1 - gamma)) <= eps  # the truncation bias it guarantees


def test_rollout_length_tau_zero_and_bad_gamma_are_errors():
    assert ve.rollout_length(0.01, 1.0, 1.0, 0.99) == 917
    with pytest.raises(ValueError, match="tau = 0"):
        ve.rollout_length(0.01, 0.0, 1.0, 0.99)
    with pytest.raises(ValueError, match="gamma"):
        ve.rollout_length(0.01, 1.0, 1.0, 1.0)


@given(st.floats(1e-4, 0.5), st.floats(0.01, 10))
def test_the_corrected_split_meets_its_target(eps, c):
    a = ve.accuracies(eps, c, "corrected")
    assert a.eps_m + 2 * (1 + c) * a.eps_bar <= eps * (1 + 1e-12)
    p = ve.accuracies(eps, c, "paper")
    assert p.corollary_total == pytest.approx(1.5 * eps)  # the paper's own numbers give 1.5 eps


def test_guaranteed_error_formula():
    m, delta, c, k, eb = 100, 0.1, 1.0, 10, 0.01
    expected = math.sqrt(math.log(4 * k / delta) * c**2 / (2 * m)) + eb * (2 + eb) + c * (1 - (1 + eb) ** -2)
    assert ve.guaranteed_error(m, delta, c, k, eb) == pytest.approx(expected, rel=1e-14)


# --- EBGStop: an independent reference implementation -----------------------------------------


def reference_ebgstop(samples, eps, delta, tau, R, variant="checkpoints", beta=Fraction(11, 10), p=1.1):
    """Algorithm 2 written from the paper's pseudo-code, with exact rational check points."""
    LB, UB, LBh, UBh = 0.0, math.inf, -math.inf, math.inf
    total = total_sq = 0.0
    h, x = 0, 1.0
    j = 1
    while (1 + eps) * LB + 2 * eps * tau < (1 - eps) * UB or LB == 0:
        if j > len(samples):
            return None
        g = samples[j - 1]
        total += g
        total_sq += g * g
        mean = total / j
        sigma = math.sqrt(max(total_sq / j - mean * mean, 0.0))  # population sd from raw sums
        check = j >= math.floor(beta**h)
        if check:
            h += 1
            alpha = math.floor(beta**h) / math.floor(beta ** (h - 1))
            x = -alpha * math.log(delta * (p - 1) / (3 * p * h**p))
        if check or variant == "every":
            c = sigma * math.sqrt(2 * x / j) + 3 * R * x / j
            LB, UB = max(LB, abs(mean) - c), min(UB, abs(mean) + c)
            LBh, UBh = max(LBh, mean - c), min(UBh, mean + c)
            if (UBh - LBh) / 2 <= eps * tau:
                return (UBh + LBh) / 2, j
        j += 1
    return math.copysign(1, mean) * ((1 + eps) * LB + (1 - eps) * UB) / 2, j - 1


PERIODIC = [
    ("constant", [5.0], 0.1, 0.1, 1.0, 10.0),
    ("two-point", [0.0, 1.0, 1.0], 0.1, 0.1, 1.0, 1.0),
    ("negative cycle", [-3.0, -1.0, -2.0, -2.5], 0.05, 0.1, 1.0, 2.0),
    ("zero mean", [-1.0, 1.0], 0.2, 0.2, 1.0, 2.0),
]


@pytest.mark.parametrize("variant", ["checkpoints", "every"])
@pytest.mark.parametrize(("name", "period", "eps", "delta", "tau", "R"), PERIODIC, ids=[p[0] for p in PERIODIC])
def test_ebgstop_matches_the_reference_on_periodic_sequences(variant, name, period, eps, delta, tau, R):
    n = 12_000
    samples = np.resize(np.array(period), n)
    expected = reference_ebgstop(list(samples), eps, delta, tau, R, variant)
    assert expected is not None, "the reference needs more samples"
    got = ve.ebgstop(samples, eps, delta, tau, R, variant=variant)
    assert got.certified
    assert got.n_samples == expected[1]
    assert got.estimate == pytest.approx(expected[0], rel=1e-9, abs=1e-12)
    # The same samples from a Python iterator give the same run.
    again = ve.ebgstop(iter(samples.tolist()), eps, delta, tau, R, variant=variant)
    assert (again.estimate, again.n_samples) == (got.estimate, got.n_samples)


def test_ebgstop_constant_sequence_closed_form():
    # With sigma = 0 the half-width is c_j = 3 R x_j / j; for g > 0 the relative rule stops at the
    # first check point with c <= eps (g + tau) and returns ((1+eps)(g-c) + (1-eps)(g+c))/2 = g - eps c.
    got = ve.ebgstop(np.full(5000, 5.0), 0.1, 0.1, 1.0, 10.0)
    half_width = (got.upper - got.lower) / 2
    assert got.reason == "relative"
    assert half_width <= 0.1 * 6.0
    assert got.estimate == pytest.approx(5.0 - 0.1 * half_width, rel=1e-14)


def test_ebgstop_cap_and_bad_input():
    out = ve.ebgstop(np.resize([-1.0, 1.0], 10_000), 0.1, 0.1, tau=0.0, value_range=2.0, max_samples=3000)
    assert (out.reason, out.n_samples, out.hit_cap) == ("cap", 3000, True)
    out = ve.ebgstop(np.full(10, 0.5), 0.1, 0.1, tau=1.0, value_range=1.0)
    assert (out.reason, out.certified) == ("exhausted", False)
    with pytest.raises(ValueError, match="value_range"):
        ve.ebgstop(np.array([0.0, 3.0]), 0.1, 0.1, 1.0, value_range=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ve.ebgstop(np.zeros(3), 1.5, 0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="variant"):
        ve.ebgstop(np.zeros(3), 0.1, 0.1, 1.0, 1.0, variant="sometimes")
    with pytest.raises(ValueError, match="max_samples"):
        ve.ebgstop(np.zeros(3), 0.1, 0.1, 1.0, 1.0, max_samples=0)

    def failing():
        yield 0.5
        raise RuntimeError("sampler broke")

    with pytest.raises(RuntimeError, match="sampler broke"):
        ve.ebgstop(failing(), 0.1, 0.1, 1.0, 1.0)


# --- EBGStop: coverage on known distributions ---------------------------------------------------

DISTRIBUTIONS = {
    # name: (draw(rng, n), mean, range)
    "bernoulli-0.3": (lambda rng, n: (rng.random(n) < 0.3).astype(float), 0.3, 1.0),
    "uniform-negative": (lambda rng, n: rng.uniform(-3.0, -1.0, n), -2.0, 2.0),
    "rademacher-zero": (lambda rng, n: rng.choice([-1.0, 1.0], n), 0.0, 2.0),
    "beta-skewed": (lambda rng, n: 10.0 * rng.beta(0.5, 4.0, n), 10.0 * 0.5 / 4.5, 10.0),
}


@pytest.mark.parametrize("variant", ["checkpoints", "every"])
@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_ebgstop_coverage(variant, name):
    draw, mu, R = DISTRIBUTIONS[name]
    eps, delta, tau, runs = 0.1, 0.1, 1.0, 300
    rng = np.random.default_rng(2018)
    covered = 0
    for _ in range(runs):
        out = ve.ebgstop(draw(rng, 40_000), eps, delta, tau, R, variant=variant)
        assert out.certified, "the sample array was too short for this configuration"
        covered += abs(out.estimate - mu) <= eps * (abs(mu) + tau)
    # One-sided 99% Clopper-Pearson lower bound on the coverage probability must reach 1 - delta:
    # a guarantee violated in truth would make this fail with probability >= 0.99.
    lower = stats.beta.ppf(0.01, covered, runs - covered + 1) if covered > 0 else 0.0
    assert lower >= 1 - delta, f"coverage {covered}/{runs}, lower bound {lower:.4f}"
