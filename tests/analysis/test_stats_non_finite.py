"""Every statistic refuses a sample holding a NaN or an infinity, naming the function, the argument
and the positions, and gives finite (or documented) results on any finite sample, however near the
float range its values lie."""

from __future__ import annotations

import contextlib
import math
import re
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from bbrl import intervals
from bbrl.analysis import regret, stats
from bbrl.protocol.schema import Col

FINITE = st.floats(allow_nan=False, allow_infinity=False)
BAD = st.sampled_from([math.nan, math.inf, -math.inf])
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def samples(min_size: int = 2, max_size: int = 12) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64, st.integers(min_size, max_size), elements=FINITE)


def _refusal(call: Callable[[], Any]) -> str:
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


def test_the_paired_test_of_a_nan_sample_is_refused_not_a_p_value_of_0() -> None:
    a = np.arange(10.0)
    a[[3, 7]] = np.nan
    b = np.zeros(10)
    assert _refusal(lambda: stats.paired_z_test(a, b)) == (
        "paired_z_test: sample 'a' holds 2 non-finite values (NaN or inf) at indices [3, 7]"
    )
    assert _refusal(lambda: stats.paired_z(b, np.where(a == 4.0, np.inf, 0.0))) == (
        "paired_z: sample 'b' holds 1 non-finite value (NaN or inf) at index 4"
    )
    many = np.full(40, np.nan)
    assert _refusal(lambda: stats.paired_z_test(many, many)).endswith(
        "holds 40 non-finite values (NaN or inf) at indices [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] (the first 10)"
    )


def test_every_statistic_names_its_argument() -> None:
    good = np.array([1.0, 2.0, 3.0, 4.0])
    bad = np.array([1.0, np.nan, 3.0, 4.0])
    frame = pl.DataFrame({"algorithm": ["A", "B"], "mean": [1.0, math.nan]})
    cases = {
        "ci95_halfwidth: sample 'values'": lambda: intervals.ci95_halfwidth(bad),
        "mean_ci95: sample 'values'": lambda: stats.mean_ci95(bad),
        "holm: sample 'p_values'": lambda: stats.holm([0.01, math.nan]),
        "best_per_algorithm: column 'mean'": lambda: stats.best_per_algorithm(frame),
        "not_different_from_best: sample 'returns[1]'": lambda: stats.not_different_from_best([good, bad]),
        "tied_times: sample 'times'": lambda: stats.tied_times([1.0, math.inf]),
        "tied_times: sample 'halfwidths'": lambda: stats.tied_times([1.0, 2.0], [0.1, math.inf]),
        "best_under_bounds: sample 'returns[1]'": lambda: stats.best_under_bounds(
            ["A", "B"], [1.0, 2.0], [0.0, 0.0], [1e-3, 2e-3], [good, bad], 10
        ),
        "best_under_bounds: sample 'means'": lambda: stats.best_under_bounds(
            ["A", "B"], [1.0, math.nan], [0.0, 0.0], [1e-3, 2e-3], [good, good], 10
        ),
        "best_under_bounds: sample 'online_seconds'": lambda: stats.best_under_bounds(
            ["A", "B"], [1.0, 2.0], [0.0, 0.0], [1e-3, math.nan], [good, good], 10
        ),
        "normalized_scores: sample 'returns'": lambda: stats.normalized_scores(bad, 0.0, 1.0),
        "normalized_scores: random_mean must be finite": lambda: stats.normalized_scores(good, math.nan, 1.0),
        "iqm: sample 'values'": lambda: stats.iqm(bad),
        "stratified_bootstrap_cis: sample 'strata[1]'": lambda: stats.stratified_bootstrap_ci([good, bad]),
        "probability_of_improvement: sample 'y[0]'": lambda: stats.probability_of_improvement([good], [bad]),
        "per_mdp_cumulative_regret: sample 'rewards'": lambda: regret.regret_curve(bad[None, :], good[None, :], "A"),
    }
    for prefix, call in cases.items():
        message = _refusal(call)
        assert message.startswith(prefix), (prefix, message)
        assert "\n" not in message
    # A NaN half-width (a time measured once) counts as 0, as documented.
    assert stats.tied_times([1.0, 1.05], [math.nan, math.nan]).tolist() == [1.0, 1.05]
    with pytest.raises(ValueError, match="factor must be finite and > 1"):
        stats.bound_grid(1.0, factor=1.0)  # would never reach the maximum


def test_a_results_file_with_a_nan_return_is_refused_naming_the_file(tmp_path: Any) -> None:
    from bbrl.protocol.results import CellFileError, read_cell_file, schema_problem

    frame = pl.DataFrame({Col.CELL_ID: ["c"] * 3, Col.MDP: [0, 1, 2], Col.RETURN: [1.0, math.nan, 2.0]})
    frame = frame.with_columns(pl.lit(0.1).alias(Col.ONLINE_SECONDS))
    assert schema_problem(frame) == "column 'return' holds a non-finite value (NaN or inf) in row 1"
    path = tmp_path / "cell.parquet"
    frame.write_parquet(path)
    with pytest.raises(CellFileError, match=re.escape(f"cell file {str(path)!r}: column 'return' holds")):
        read_cell_file(path)


def _within(statistic: float, values: np.ndarray) -> bool:
    """Between the smallest and the largest value, up to the rounding of a sum."""
    slack = 1e-12 * float(np.abs(values).max())
    return float(values.min()) - slack <= statistic <= float(values.max()) + slack


def _with_one_bad(data: st.DataObject, values: np.ndarray) -> np.ndarray:
    spoiled = values.copy()
    spoiled[data.draw(st.integers(0, values.size - 1))] = data.draw(BAD)
    return spoiled


@PROPERTY
@given(a=samples(), data=st.data())
def test_paired_statistics_on_finite_samples_are_finite_and_refuse_any_nan_or_inf(
    a: np.ndarray, data: st.DataObject
) -> None:
    b = data.draw(hnp.arrays(np.float64, a.size, elements=FINITE))
    z = stats.paired_z(a, b)
    assert z >= 0.0  # finite, or inf for differences constant at float precision (documented)
    with (
        pytest.warns(UserWarning, match="normal approximation")
        if a.size < stats.MIN_PAIRS_FOR_Z
        else contextlib.nullcontext()
    ):
        test = stats.paired_z_test(a, b)
    assert test.z == z and 0.0 <= test.p_value <= 1.0 and test.significant == (z >= test.threshold)
    assert not math.isnan(test.mean_difference)
    assert test.better == ("a" if test.mean_difference > 0 else "b" if test.mean_difference < 0 else "neither")
    for spoiled_a, spoiled_b in ((_with_one_bad(data, a), b), (a, _with_one_bad(data, b))):
        with pytest.raises(ValueError, match=r"^paired_z_test: sample '[ab]' holds 1 non-finite value"):
            stats.paired_z_test(spoiled_a, spoiled_b)
        with pytest.raises(ValueError, match=r"^paired_z: sample '[ab]' holds 1 non-finite value"):
            stats.paired_z(spoiled_a, spoiled_b)
        with pytest.raises(ValueError, match=r"^not_different_from_best: sample 'returns\[[01]\]'"):
            stats.not_different_from_best([spoiled_a, spoiled_b])


@PROPERTY
@given(values=samples(min_size=1), data=st.data())
def test_means_intervals_and_iqm_of_finite_samples_are_finite_and_refuse_any_nan_or_inf(
    values: np.ndarray, data: st.DataObject
) -> None:
    mean, half = stats.mean_ci95(values)
    assert math.isfinite(mean) and _within(mean, values)
    # NaN for one value (documented), inf only beyond the float range (|values| near 1.8e308).
    assert (math.isnan(half) and values.size == 1) or half >= 0.0
    assert math.isfinite(half) or math.isnan(half) or np.abs(values).max() > 1e307
    assert intervals.ci95_halfwidth(values) == half or (math.isnan(half) and values.size == 1)
    middle = stats.iqm(values)
    assert math.isfinite(middle) and _within(middle, values)
    estimate, low, high = stats.stratified_bootstrap_ci([values, values[::-1]], "mean", n_boot=20)
    assert all(math.isfinite(x) for x in (estimate, low, high)) and low <= high
    assert 0.0 <= stats.probability_of_improvement([values], [values[::-1]]) <= 1.0
    assert stats.holm(np.abs(values) / (1.0 + np.abs(values))) is not None
    spoiled = _with_one_bad(data, values)
    for call in (
        lambda: stats.mean_ci95(spoiled),
        lambda: intervals.ci95_halfwidth(spoiled),
        lambda: stats.iqm(spoiled),
        lambda: stats.stratified_bootstrap_ci([values, spoiled]),
        lambda: stats.probability_of_improvement([spoiled], [values]),
        lambda: stats.holm(spoiled),
        lambda: stats.normalized_scores(spoiled, 0.0, 1.0),
    ):
        refused = r"^\w+: sample '[\w\[\]]+' holds 1 non-finite value \(NaN or inf\) at index"
        with pytest.raises(ValueError, match=refused):
            call()


@PROPERTY
@given(values=samples(min_size=1), low=FINITE, high=FINITE)
def test_normalized_scores_of_finite_samples_are_finite_or_beyond_the_float_range(
    values: np.ndarray, low: float, high: float
) -> None:
    if not high > low:
        with pytest.raises(ValueError, match="must score above Random"):
            stats.normalized_scores(values, low, high)
        return
    scores = stats.normalized_scores(values, low, high)
    assert not np.isnan(scores).any()
    # inf only where the score itself is beyond the float range.
    for value, score in zip(values, scores, strict=True):
        exact = (Fraction(value) - Fraction(low)) / (Fraction(high) - Fraction(low))
        if math.isinf(score):
            assert abs(exact) > Fraction(sys.float_info.max), (value, low, high)
        else:
            assert score == pytest.approx(float(exact), rel=1e-12, abs=1e-300) or abs(exact) < 1e-290


def test_values_near_the_float_range_give_the_exact_statistics() -> None:
    big = np.array([1.5e308, -1.5e308, 1.5e308, -1.5e308])
    assert stats.paired_z(big, -big) == 0.0  # mean 0 of the differences, which overflow
    a = np.array([1.5e308, -1.5e308, 1.4e308, -1.3e308])
    small = a / 1e300  # the same Z in other units
    expected = abs(small.mean()) / math.sqrt(small.var(ddof=1) / 4)
    assert stats.paired_z(a, -0.9 * a) == pytest.approx(expected, rel=1e-12)  # a - b overflows
    with pytest.warns(UserWarning, match="normal approximation"):
        difference = stats.paired_z_test(a, -0.9 * a).mean_difference  # the differences overflow, not their mean
    assert difference == pytest.approx(1.9 * small.mean() * 1e300, rel=1e-12)
    assert stats.mean_ci95(np.array([1.7e308, 1.7e308]))[0] == 1.7e308
    assert stats.iqm(np.array([1.7e308] * 4)) == 1.7e308
    # The plain path is unchanged: the same numbers as numpy's formula.
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=50), rng.normal(size=50)
    d = a - b
    assert stats.paired_z(a, b) == abs(float(d.mean())) / math.sqrt(float(d.var(ddof=1)) / 50)
    assert intervals.ci95_halfwidth(a) == 1.96 * float(np.std(a, ddof=1)) / math.sqrt(50)
