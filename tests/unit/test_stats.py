"""Descriptive statistics (analysis/_stats.py): every figure a report prints with its n and spread."""

from __future__ import annotations

import math

import pytest

from rigbench.analysis import Stat
from rigbench.analysis._stats import describe


def test_every_figure_has_n_median_mean_spread_and_tails() -> None:
    s = describe([3.0, 1.0, 2.0, 10.0])
    assert s is not None
    assert (s.n, s.median, s.mean, s.min, s.max) == (4, 2.5, 4.0, 1.0, 10.0)
    assert s.std == pytest.approx(4.0825, abs=1e-4)  # the sample standard deviation (n - 1), not the population's
    assert s.p90 == pytest.approx(7.9) and s.p99 == pytest.approx(9.79)  # numpy's linear interpolation


def test_one_value_has_no_spread_and_none_is_no_figure() -> None:
    one = describe([5.0])
    assert one is not None and one.n == 1 and one.std == 0.0  # not NaN: a single repetition reads "5.00 ± 0.00"
    assert describe([]) is None
    assert describe([math.nan, math.inf, -math.inf]) is None  # nothing measured is no figure, never a zero


def test_values_that_are_not_measurements_are_left_out_not_averaged() -> None:
    s = describe([1.0, math.nan, 3.0, math.inf])
    assert s is not None and (s.n, s.mean, s.max) == (2, 2.0, 3.0)


def test_a_figure_reads_median_plus_minus_std_in_the_asked_unit() -> None:
    s = describe([0.120, 0.125, 0.130])
    assert s is not None
    assert s.fmt() == "0.12 ± 0.01"
    assert s.fmt(digits=1, scale=1000) == "125.0 ± 5.0"  # seconds shown as milliseconds
    assert Stat(n=0, median=0, mean=0, std=0, min=0, max=0).fmt() == "–"  # nothing measured
