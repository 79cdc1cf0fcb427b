"""Shrinking's rule l, loop degrees per trip (tv_mlir/shrink/degree.py; docs/shrinking.md,
rule l; docs/stages.md): a top-level loop's carried values and results count as free
inputs, which is sound only for a verdict whose proof takes every such loop by induction
(stages/loops.py `rests_on_induction`; api.verify shrinks again with the composed degrees
otherwise). The pairs are testdata/loops (testdata/gen_loops.py, XLA-checked at N = 64).
As in tests/test_shrink_rules.py, verdicts are taken with the full-size check and the
second witness off: what keeps a bug visible here is the rule, not a run at full size."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tv_mlir.api as api
from tests.conftest import TESTDATA
from tv_mlir.api import prepare, verify
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink import degree, trips
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan
from tv_mlir.stages import loops
from tv_mlir.stages import run as stages_run
from tv_mlir.verdict import Verdict

D = TESTDATA / "loops"
QUICK: dict[str, Any] = {"full_size_check": "off", "second_witness": False, "cache": False}


def _verify(pair: str, twin: str) -> Verdict:
    return verify(D / f"{pair}.ref.mlir", D / f"{pair}.{twin}.mlir", **QUICK)


def _n(v: Verdict) -> int:
    """The verified size of the summed class (x's, N = 64 originally)."""
    assert v.shrink is not None
    entries = v.shrink.get("shrunk", []) + v.shrink.get("kept", [])
    return next(e["verified"] for e in entries if e["where"] == "arg0 dim 0")


def _plan(pair: str, twin: str, per_trip: bool | None = None) -> ShrinkPlan:
    ref, other = str(D / f"{pair}.ref.mlir"), str(D / f"{pair}.{twin}.mlir")
    r, o = prepare(ref, Options()), prepare(other, Options())
    return plan(_raw(ref, r).module, _raw(other, o).module, per_trip=per_trip)


def _degree(p: ShrinkPlan) -> str:
    return next(e.role for e in p.entries if e.where == "arg0 dim 0")


def _body_stage_proved(v: Verdict) -> bool:
    st = v.stages or {}
    return any(f": {loops.BODY}" in r["name"] and r["verdict"] == "equivalent" for r in st.get("list", []))


def test_per_trip_degrees_shrink_a_loop_proved_by_induction(monkeypatch: pytest.MonkeyPatch) -> None:
    """body.good: per trip the summand sum(g^5), g = h * w_t, has degree 10 (h and w_t
    free); composed over the two trips and the initial value, 20. The verdict is proved by
    induction at N = 16, and rests on it. With the rule off, N = 32."""
    v = _verify("body", "good")
    assert v.verdict == "equivalent", v.reason
    assert _body_stage_proved(v) and "whole" not in (v.stages or {})
    assert v.shrink is not None and v.shrink["loops"]["classes"], v.shrink.get("loops")
    assert _n(v) == 16
    monkeypatch.setattr(degree, "PER_TRIP", False)
    off = _verify("body", "good")
    assert off.verdict == "equivalent", off.reason
    assert off.shrink is not None and "loops" not in off.shrink
    assert _n(off) == 32


def test_the_plan_names_the_degrees_per_trip_and_composed() -> None:
    assert _degree(_plan("body", "good", per_trip=True)) == "summed (degree 10)"
    assert _degree(_plan("body", "good", per_trip=False)) == "summed (degree 20)"
    assert _plan("body", "good", per_trip=True).per_trip
    assert not _plan("body", "good", per_trip=False).per_trip


def test_a_loop_not_proved_by_induction_is_shrunk_again_with_composed_degrees() -> None:
    """unrolled.bug: the reference cubes x by a 2-trip loop, the twin writes sum(x^3) by
    Newton's identity for 2 variables. One program has no loop, so no proof by induction:
    the verdict is taken again at the composed degree 3 (N = 4), where the bug shows, and
    the shrink map says why."""
    v = _verify("unrolled", "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    assert v.shrink is not None and "proved whole" in v.shrink["loops"]["not_used"]
    assert _n(v) == 4
    good = _verify("unrolled", "good")
    assert good.verdict == "equivalent", good.reason


def test_without_the_induction_check_the_unrolled_bug_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hole the check closes: taking the per-trip sizes for a verdict that did not come
    from induction proves the bug twin equal at N = 2."""
    monkeypatch.setattr(api, "rests_on_induction", lambda *args: "")
    v = _verify("unrolled", "bug")
    assert v.verdict == "equivalent"
    assert _n(v) == 2


def test_a_bug_in_the_body_over_carried_values_is_seen_per_trip() -> None:
    """body.bug writes the trip's sum(g^5) by Newton's identities for 4 elements. Per trip the
    carried h counts 1, so N = 16 and the body stage fails; the counterexample is confirmed
    at the original sizes."""
    v = _verify("body", "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    assert f": {loops.BODY}" in (v.stages or {})["failed"]["name"]
    assert _n(v) == 16


def test_carried_values_count_as_free_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that took the carried values as constants along the class (degree 0) would
    give body.bug's sums degree 2, below the 5 its bug needs (only rule a's literals keep
    this pair's size up then: the class becomes a count)."""
    assert _degree(_plan("body", "bug", per_trip=True)) == "summed (degree 10)"
    monkeypatch.setattr(degree, "CARRIED_DEGREE", 0)
    assert _degree(_plan("body", "bug", per_trip=True)) == "summed (degree 2)"


def test_a_trip_count_bug_is_seen() -> None:
    """trips.bug runs one trip more: each trip agrees, the loop conditions do not."""
    v = _verify("trips", "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    assert (v.stages or {})["failed"]["name"].endswith(loops.CONDITION)
    good = _verify("trips", "good")
    assert good.verdict == "equivalent" and _body_stage_proved(good), good.reason


def test_rests_on_induction_counts_the_loops() -> None:
    options = Options(stage_min_elements=0)
    ref, other = prepare(str(D / "body.ref.mlir"), options), prepare(str(D / "body.good.mlir"), options)
    plain = prepare(str(D / "unrolled.good.mlir"), options)
    body = {"name": f"stage 2 of 2: {loops.BODY}", "verdict": "equivalent"}
    staged = Verdict("equivalent", "", stages={"used": True, "list": [body]})
    assert loops.rests_on_induction(staged, ref, other) == ""
    assert "whole" in loops.rests_on_induction(Verdict("equivalent", "", stages={"used": False}), ref, other)
    assert loops.rests_on_induction(Verdict("equivalent", "", stages={"used": True, "list": []}), ref, other)
    assert loops.rests_on_induction(Verdict("equivalent", "", stages={**staged.stages, "whole": "equivalent"}),
                                    ref, other)
    assert loops.rests_on_induction(staged, ref, plain)  # a loop in one program only


@pytest.mark.parametrize("shared", [True, False])
def test_the_body_stage_takes_the_layers_slice(monkeypatch: pytest.MonkeyPatch, shared: bool) -> None:
    """The scan's dynamic_slice of the stacked weights at the counter is one stage input
    of the layer's shape (stages/loops.py `_shared_slices`), not the stack and a free
    counter choosing among its layers."""
    monkeypatch.setattr(loops, "SHARED_SLICES", shared)
    options = Options(stage_min_elements=0)
    ref, other = prepare(str(D / "body.ref.mlir"), options), prepare(str(D / "body.good.mlir"), options)
    check_signatures(ref, other)
    body = next(s for s in stages_run._cut(ref, other, options, None).stages if s.name.endswith(loops.BODY))
    shapes = sorted(t.shape for t in body.ref.main.arg_types)
    assert ((2, 64) in shapes) != shared and ((1, 64) in shapes) == shared, shapes
    assert body.ref.main.arg_types == body.other.main.arg_types
    condition = next(s for s in stages_run._cut(ref, other, options, None).stages
                     if s.name.endswith(loops.CONDITION))
    assert [t.shape for t in condition.ref.main.arg_types] == [()]  # the counter only


@pytest.mark.parametrize("chain", [True, False])
def test_a_decoder_layer_body_is_cut_into_a_chain(monkeypatch: pytest.MonkeyPatch, chain: bool) -> None:
    """A scan over decoder layers (testdata/stages/scan_L4): the body pair is cut into
    stages of its own (stages/loops.py `_chained`), each a loop stage of the same link; a
    body of a few ops (testdata/loops) stays one stage."""
    monkeypatch.setattr(loops, "CHAIN_BODY", chain)
    options = Options()
    stages = TESTDATA / "stages"
    ref, other = prepare(str(stages / "scan_L4.ref.mlir"), options), prepare(str(stages / "scan_L4.shardy.mlir"),
                                                                                options)
    check_signatures(ref, other)
    stages = stages_run._cut(ref, other, options, None).stages
    bodies = [s for s in stages if f": {loops.BODY}" in s.name]
    assert (len(bodies) > 1) == chain and all(s.loop for s in bodies), [s.name for s in bodies]
    assert len({s.name.split(f": {loops.BODY}")[0] for s in bodies}) == 1
    # The condition takes the counter only (each program's reads by its own names: the two
    # programs use some names for different values).
    condition = next(s for s in stages if s.name.endswith(loops.CONDITION))
    assert [t.shape for t in condition.ref.main.arg_types] == [()], condition.ref.main.arg_types


# Rule l, trip counters (shrink/trips.py): testdata/depth/trips (testdata/gen_trips.py),
# H = 12 positions, L = 10 layers, so the trip bound 10 is also H - 2.
TRIPS = TESTDATA / "depth" / "trips"


def _trips_plan(pair: str, twin: str) -> ShrinkPlan:
    ref, other = str(TRIPS / f"{pair}.ref.mlir"), str(TRIPS / f"{pair}.{twin}.mlir")
    r, o = prepare(ref, Options()), prepare(other, Options())
    return plan(_raw(ref, r).module, _raw(other, o).module)


def _h(p: ShrinkPlan) -> tuple[int, str]:
    e = next(e for e in p.entries if e.where == "arg0 dim 0")
    return e.verified, e.reason or ""


@pytest.mark.parametrize("on", [True, False])
def test_a_trip_bound_names_only_the_dims_its_counter_slices(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """stack: the bound 10 only counts trips and (through the body's own counter, in
    lockstep) starts ws[i] along the layer dim, so it is no size of H, which shrinks. With
    the rule off, 10 reads as H - 2 as well as L and pins H."""
    monkeypatch.setattr(trips, "TRIP_COUNTERS", on)
    for twin in ("good", "bug"):
        size, why = _h(_trips_plan("stack", twin))
        assert (size < 12) == on, (twin, size, why)
        assert ("constant 10" in why) != on, why


def test_a_bug_in_the_scanned_body_is_found_at_the_sizes_the_rule_allows() -> None:
    """stack.bug reads the layers last to first (ws[L - 1 - i]: L - 1 joins the counter);
    H shrinks and the bug is still found, confirmed at the original sizes; the twin that
    only writes the square as a power is proved."""
    assert _h(_trips_plan("stack", "bug"))[0] < 12
    bug = verify(TRIPS / "stack.ref.mlir", TRIPS / "stack.bug.mlir", **QUICK)
    assert bug.verdict == "not-equivalent", bug.reason
    good = verify(TRIPS / "stack.ref.mlir", TRIPS / "stack.good.mlir", **QUICK)
    assert good.verdict == "equivalent", good.reason


def test_a_counter_that_meets_positions_leaves_the_bound_a_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """escape: the counter is also compared with H's positions (where(iota == i)), so its
    group is dropped and 10 keeps pinning H; the bug twin (positions >= L filled) is
    found. Mutation: with uses outside the slices ignored, the bound names the layers only
    and no longer pins H, the hazard the check is there for."""
    size, why = _h(_trips_plan("escape", "bug"))
    assert size == 12 and "constant 10" in why, why
    bug = verify(TRIPS / "escape.ref.mlir", TRIPS / "escape.bug.mlir", **QUICK)
    assert bug.verdict == "not-equivalent", bug.reason
    monkeypatch.setattr(trips._Groups, "escape", lambda self, v: None)
    assert "constant 10" not in _h(_trips_plan("escape", "bug"))[1]


def test_counters_in_lockstep_join_and_others_do_not() -> None:
    """A fori_loop carries its own counter (compared with the bound) and the index its
    body slices with: same start, same step, one value on every trip, so they join. The
    escape pair's counter also meets a broadcast, which drops its group."""
    from tv_mlir.frontend.read import load_module_mlir
    from tv_mlir.shrink.facts import ProgramFacts

    def bound_group(path: Path) -> frozenset[tuple[str, int]] | None:
        m = load_module_mlir(str(path)).module
        loop = next(op for op in m.main.body.walk() if op.name == "stablehlo.while")
        cond, body = loop.regions
        compare = next(op for op in cond.ops if op.name == "stablehlo.compare")
        groups = trips.index_groups(ProgramFacts.of("ref", m))
        # The body's index is in the bound's group only through the lockstep join.
        index = next(a for a, t in zip(body.args, body.arg_types) if t.shape == () and a != compare.operands[0]
                     and groups.get(a) is not None)
        assert groups.get(index) == groups.get(compare.operands[1])
        return groups.get(compare.operands[1])

    nodes = bound_group(TRIPS / "stack.good.mlir")
    assert nodes and {d for _, d in nodes} == {0}  # the layer dim of ws only
    with pytest.raises(StopIteration):  # the escape pair's counter has no kept group
        bound_group(TRIPS / "escape.ref.mlir")
