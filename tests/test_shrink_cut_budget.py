"""The second witness's budget in the staged cut's measure (docs/shrinking.md, "The second
witness's budget"): the planner tries the halved budgets against an estimate of the cut's
measure (shrink/cutsize.py) instead of materialising a pair to measure it, and a plan with
a budget is the plan a fresh call with that budget makes."""
from __future__ import annotations

import math

import pytest

from tests.conftest import TESTDATA
from tv_mlir import api
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink import plan as plan_mod
from tv_mlir.shrink.cutsize import CutWeights
from tv_mlir.shrink.pair import _raw
from tv_mlir.stages.flat import flatten
from tv_mlir.stages.run import _elements

PAIRS = [("sharded_big", "attn_tp", "shardy"), ("sharded", "mlp_tp", "shardy"), ("depth", "stack8b_L2", "shardy")]


def _pair(folder: str, name: str, kind: str):
    o = Options()
    rr, _ = api._read(str(TESTDATA / folder / f"{name}.ref.mlir"), o)
    orr, _ = api._read(str(TESTDATA / folder / f"{name}.{kind}.mlir"), o)
    rm, om = api.prepare(rr, o), api.prepare(orr, o)
    check_signatures(rm, om)
    return o, rm, om, _raw(rm, rm).module, _raw(om, om).module


def _naive(a, family_of, first, full, budget):
    # The estimate summed over every value for every candidate (the rule as first written).
    growing = sorted({family_of[c] for c in range(len(first)) if full[c] != first[c]})

    def estimate(fams):
        return plan_mod.elements(a, [full[c] if family_of[c] in fams else first[c] for c in range(len(first))])
    chosen: set[int] = set()
    for f in sorted(growing, key=lambda f: estimate({f})):
        if estimate(chosen | {f}) <= budget:
            chosen.add(f)
    return set(growing) - chosen


@pytest.mark.parametrize("folder,name,kind", PAIRS)
def test_incremental_family_choice_is_the_naive_one(folder, name, kind) -> None:
    _, _, _, r, q = _pair(folder, name, kind)
    calls = []
    real = plan_mod._families_over_budget

    def both(a, family_of, first, full, budget):
        got = real(a, family_of, first, full, budget)
        calls.append(got == _naive(a, family_of, first, full, budget))
        return got
    p0 = plan_mod.plan(r, q)
    first = p0.elements
    mp = pytest.MonkeyPatch()
    mp.setattr(plan_mod, "_families_over_budget", both)
    try:
        for k in (1, 2, 4, 8, 16):
            plan_mod.plan(r, q, grow=1, budget=first + first // k)
    finally:
        mp.undo()
    assert calls and all(calls), calls


@pytest.mark.parametrize("folder,name,kind", PAIRS[:2])
def test_a_fallback_budget_plans_as_a_fresh_call_with_it(folder, name, kind) -> None:
    _, _, _, r, q = _pair(folder, name, kind)
    first = plan_mod.plan(r, q).elements
    budgets = [2 * first, first + first // 2, first + first // 4]
    fresh = [plan_mod.plan(r, q, grow=1, budget=b) for b in budgets]
    est = [CutWeights.of(p.analysis, r, q).measure(p.sizes) for p in fresh]
    assert len({tuple(p.sizes) for p in fresh}) > 1, "the budgets must make different plans for this to test"
    for k in range(len(budgets)):
        # A limit that the plans of the budgets before k are over, and k's is within.
        limit = est[k] if all(e > est[k] for e in est[:k]) else None
        if limit is None:
            continue
        p = plan_mod.plan(r, q, grow=1, budget=budgets[0], fallbacks=budgets[1:], cut_limit=limit)
        assert p.sizes == fresh[k].sizes and p.constants == fresh[k].constants
        assert p.held == fresh[k].held and [e.argument for e in p.entries] == [e.argument for e in fresh[k].entries]
        assert p.budget == {"budget": budgets[k], "fallbacks_taken": k}
    # Nothing fits: the last budget's plan is kept.
    p = plan_mod.plan(r, q, grow=1, budget=budgets[0], fallbacks=budgets[1:], cut_limit=0)
    assert p.sizes == fresh[-1].sizes and p.budget["fallbacks_taken"] == len(budgets) - 1


@pytest.mark.parametrize("folder,name,kind", PAIRS)
def test_the_estimate_follows_the_cut_measure(folder, name, kind) -> None:
    # Devices multiply a manual region's values and call sites their callee's: the
    # estimate at the first plan's sizes is within 20% of the cut's own measure
    # of the pair the shrink makes (the pipeline rewrites some ops, so not exactly).
    o, rm, om, r, q = _pair(folder, name, kind)
    p = plan_mod.plan(r, q, ranges=api._assumed_bounds(rm, o))
    small_ref, small_other, _, _ = api._shrink(rm, om, rm, om, o)
    real = max(_elements(small_ref), _elements(flatten(small_other).module))
    est = CutWeights.of(p.analysis, r, q).measure(p.sizes)
    assert math.isclose(est, real, rel_tol=0.2), (est, real)
