"""Rule (a)'s order and trip constants (tv_mlir/shrink/trips.py `trips_apart`, switch
TRIP_ORDER; docs/stages.md, "Trip constants in rule (a)'s order"): a literal whose every
occurrence is a trip constant is read only as trip counts and slice starts of its group's
dims, so it meets no size value of another class, and that class need not stay above it.
The pairs are testdata/depth/order (testdata/gen_trip_order.py, XLA-checked). Verdicts
are taken with the full-size check and the second witness off: what keeps the bug visible
here is the rule, not a run at full size."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import TESTDATA
from tests.test_depth_calls import _plan
from tv_mlir.api import verify
from tv_mlir.shrink import constants, dims, trips
from tv_mlir.stages import run as stages_run

ORDER = TESTDATA / "depth" / "order"
DEPTH = TESTDATA / "depth"
QUICK: dict[str, Any] = {"full_size_check": "off", "second_witness": False, "cache": False}


def _pair(pair: str, twin: str) -> tuple[str, str]:
    return str(ORDER / f"{pair}.ref.mlir"), str(ORDER / f"{pair}.{twin}.mlir")


def _h(pair: str, twin: str) -> int:
    """The planned size of H (x's dim, 16 originally)."""
    return _plan(*_pair(pair, twin)).size(0, 0)


@pytest.mark.parametrize("on", [True, False])
def test_a_trip_bound_is_no_literal_for_the_other_classes(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """apart: the only 10 is the loop's bound. With the rule H shrinks below it (the
    mean's divisor 16 need not stay above 10) and the twin is proved there; off, H keeps
    11 or more (16: its divisors)."""
    monkeypatch.setattr(trips, "TRIP_ORDER", on)
    assert (_h("apart", "good") < 10) == on
    if on:
        v = verify(*_pair("apart", "good"), **QUICK)
        assert v.verdict == "equivalent", v.reason


def test_a_literal_that_also_meets_a_size_value_keeps_its_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """meets: the bug twin also writes 10 as a clamp of H's count (sum(h) / min(count,
    10)); the literal is then not only a trip constant, H stays above 10 and the bug is
    found. Mutation: exempting a literal when any one of its occurrences is a trip
    constant lets H shrink to 2, where the twins agree: a wrong `equivalent`."""
    assert _h("meets", "bug") > 10
    v = verify(*_pair("meets", "bug"), **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert _h("meets", "good") < 10
    good = verify(*_pair("meets", "good"), **QUICK)
    assert good.verdict == "equivalent", good.reason

    def any_occurrence(occurrences: list[tuple[str, str]], classes: tuple[int, ...],
                       trip_only: dict[tuple[str, str], frozenset[int]]) -> bool:
        return any(k in trip_only and not trip_only[k] & set(classes) for k in occurrences)

    monkeypatch.setattr(constants, "trips_apart", any_occurrence)
    assert _h("meets", "bug") < 10
    wrong = verify(*_pair("meets", "bug"), **QUICK)
    assert wrong.verdict == "equivalent", wrong.reason


@pytest.mark.parametrize("split, order", [(True, True), (False, True), (True, False)])
def test_the_405b_scan_plan_fits_the_lineage_with_both_rules(monkeypatch: pytest.MonkeyPatch, split: bool,
                                                             order: bool) -> None:
    """stack405b_L126_scan (forward and backward, scanned over 126 layers): with one copy
    of dynamic_index_in_dim per call site (rule s) hidden is summed at degree 3, not 12,
    and with the trip bound 126 no literal for hidden, hidden shrinks to 4; the pair's
    plan is then under the lineage's element cap (run.MAX_CUT_ELEMENTS). Without either
    rule it is over (hidden 128: above 126)."""
    monkeypatch.setattr(dims, "SPLIT_CALL_SITES", split)
    monkeypatch.setattr(trips, "TRIP_ORDER", order)
    p = _plan(str(DEPTH / "stack405b_L126_scan.ref.mlir"), str(DEPTH / "stack405b_L126_scan.shardy.mlir"))
    assert (p.elements <= stages_run.MAX_CUT_ELEMENTS) == (split and order), p.elements
