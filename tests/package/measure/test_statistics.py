"""The appendix "Experiments behind chapter 11", "How sure a difference is": the paired
difference and its t-interval (`scratchformer.measure.statistics`), against published values,
and the pages' wording.
"""

from __future__ import annotations

import math
import re

import pytest

from support import ROOT
from scratchformer.measure.statistics import interval_text, paired_difference, t_cdf, t_quantile

# The 97.5% and 99.5% points of Student's t, from the standard tables (to 6 decimals).
T_TABLE = {(0.975, 1): 12.706205, (0.975, 2): 4.302653, (0.975, 4): 2.776445, (0.975, 9): 2.262157,
           (0.975, 30): 2.042272, (0.975, 120): 1.979930, (0.995, 2): 9.924843, (0.995, 10): 3.169273}


@pytest.mark.parametrize(("probability", "df"), T_TABLE)
def test_t_quantiles_match_the_tables(probability: float, df: int) -> None:
    assert abs(t_quantile(probability, df) - T_TABLE[probability, df]) < 2e-6
    assert abs(t_cdf(T_TABLE[probability, df], df) - probability) < 1e-6


def test_the_cdf_is_symmetric_and_tends_to_the_normal() -> None:
    assert t_cdf(0.0, 3) == 0.5
    assert abs(t_cdf(-1.5, 3) + t_cdf(1.5, 3) - 1) < 1e-12
    normal_975 = 1.959964
    assert abs(t_quantile(0.975, 100_000) - normal_975) < 1e-4


def test_a_paired_difference_by_hand() -> None:
    # differences 1, 2, 6: mean 3, sd sqrt(7), se sqrt(7/3), t(0.975, 2) = 4.302653
    difference = paired_difference([11, 12, 16], [10, 10, 10])
    half = 4.302653 * math.sqrt(7 / 3)
    assert difference["mean"] == 3 and difference["df"] == 2 and difference["pairs"] == 3
    assert abs(difference["low"] - (3 - half)) < 1e-5 and abs(difference["high"] - (3 + half)) < 1e-5
    assert paired_difference([1, 2, 6]) == paired_difference([11, 12, 16], [10, 10, 10])
    assert interval_text(difference) == "+3.00 points (95% interval -3.57 to +9.57, 2 degrees of freedom)"


@pytest.mark.parametrize(("a", "b", "said"), [([1.0], [0.0], "at least two pairs"),
                                              ([1.0, 2.0], [0.0], "2 values against 1: pairs need as many of each"),
                                              ([1.0, 2.0, 3.0], None, None)])
def test_too_few_or_unmatched_pairs_are_refused(a: list, b: list | None, said: str | None) -> None:
    if said is None:
        assert paired_difference(a, b)["df"] == 2
    else:
        with pytest.raises(ValueError, match=said):
            paired_difference(a, b)


@pytest.mark.parametrize("bad", [(0.5, 2), (1.0, 2), (0.975, 0), (0.975, 2.5)])
def test_impossible_quantiles_are_refused(bad: tuple) -> None:
    with pytest.raises(ValueError, match="need 0.5 < probability < 1 and df >= 1"):
        t_quantile(*bad)


STANDARD_ERRORS = re.compile(r"(two|2)\s+standard\s+errors|2\s*\*\s*se\b|\bat 2 standard", re.IGNORECASE)


def test_no_page_calls_a_difference_real_at_two_standard_errors() -> None:
    """With three seeds, two standard errors is an 82% interval, not 95%: the pages use the
    t-interval of `paired_difference` instead."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted([*(ROOT / "book").glob("*.md"), *(ROOT / "tools" / "records").glob("*.py")])
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if STANDARD_ERRORS.search(line)]
    assert not found, "\n".join(found)
