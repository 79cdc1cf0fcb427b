"""One verification's shrinks of a pair share a ShrinkContext (tv_mlir/shrink/context.py):
the originals are read and split once, and the planner's base (the classes, the rules'
bounds, the first fixpoint: plan.PlanBase) is made once per key (ranges, per-trip switch,
lookups). The sharing must not change a plan: every shrink made under one context (the
first plan, the second witness's budgets, a loop re-plan, a regrowth) is the shrink a
fresh call makes, to the byte of the shrunk MLIR. The loosened versions (a base shared
across the per-trip switch, a rewrite that edits the shared MLIR) are shown to change
plans or hide a bug, so these tests fail if the sharing goes too far."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_shrink_hazards import newton_pair

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir import api
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink import pair, plan, same_witness
from tv_mlir.shrink.context import ShrinkContext

QUICK: dict[str, Any] = {"full_size_check": "off", "cache": False}
# Small pairs that shrink and grow: a budget that holds families back (attn_tp at
# Llama-3-8B sizes), a loop whose per-trip degrees lower a bound (loops/body), a plain
# tensor-parallel MLP, a vocabulary-parallel cross entropy (its slices and gathers follow
# the sizes the MLIR had: what a rewrite of an already shrunk module gets wrong).
PAIRS = [("sharded", "mlp_tp", "shardy"), ("sharded_big", "attn_tp", "shardy"), ("loops", "body", "good"),
         ("sharded_big", "vocab_ce", "shardy")]


def _shrinks(ref: Path, other: Path, context: ShrinkContext | None) -> list[Any]:
    """The shrinks a verification may make of the pair, in its order: the first plan from
    the modules as read, then from the prepared modules: the second witness's grown plans at
    three budgets (one with the halvings as fallbacks), rule l's re-plan with composed
    degrees, a regrowth at grow 2. Each as its map (the time left out) and shrunk MLIR."""
    o = Options()
    ref_read, _ = api._read(ref, o)
    other_read, _ = api._read(other, o)
    r, q = api.prepare(ref_read, o), api.prepare(other_read, o)
    check_signatures(r, q)
    ranges = api._assumed_bounds(r, o)

    def one(a: Any, b: Any, **kw: Any) -> Any:
        res = pair.shrink_pair(a, b, r, q, ranges=ranges, context=context, **kw)
        if res is None:
            return None
        s = res.summary()
        s.pop("time_s")
        return json.dumps(s, sort_keys=True), res.ref_text, res.other_text, (res.embedding.args, res.embedding.results, res.embedding.values)

    out = [one(ref_read, other_read)]
    first = json.loads(out[0][0])["elements"]
    budgets = [2 * first, first + first // 2, first + first // 4]
    out.append(one(r, q, grow=1, budget=budgets[0], fallbacks=budgets[1:], cut_limit=first))
    out += [one(r, q, grow=1, budget=b) for b in budgets[1:]]
    out.append(one(r, q, per_trip=False))
    out.append(one(r, q, grow=2))
    return out


def _paths(folder: str, name: str, twin: str) -> tuple[Path, Path]:
    return TESTDATA / folder / f"{name}.ref.mlir", TESTDATA / folder / f"{name}.{twin}.mlir"


@pytest.mark.parametrize("folder,name,twin", PAIRS)
def test_shared_shrinks_are_the_fresh_ones(folder: str, name: str, twin: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The plan-base cache is what this counts; the atoms' witness (shrink/same_witness.py) may
    # plan once more where an atom cannot vary on a device (attn_tp's Shardy form, one head
    # per device), which builds a base of its own and is not this cache's miss.
    monkeypatch.setattr(same_witness, "WITNESS", False)
    ref, other = _paths(folder, name, twin)
    fresh = _shrinks(ref, other, None)
    context = ShrinkContext()
    shared = _shrinks(ref, other, context)
    assert fresh[0] is not None and shared == fresh
    # Grown plans differ from the first (else the comparison above says little).
    assert len({s[0] for s in fresh if s is not None}) > 2
    assert context.reads == 2  # each original read once for the six shrinks
    assert context.memo.made <= 2  # one base per per-trip switch


def test_a_rewrite_that_edited_the_shared_mlir_would_change_the_later_plans(monkeypatch) -> None:
    """Each rewrite edits a copy (context.editable): with the copy left out, the second
    shrink starts from the first one's shrunk MLIR and is not the fresh shrink (on the
    cross entropy it fails: a slice bound of the shrunk module is read as the original's)."""
    ref, other = _paths("sharded_big", "vocab_ce", "shardy")
    fresh = _shrinks(ref, other, None)
    monkeypatch.setattr(pair, "editable", lambda loaded: loaded)
    try:
        edited = _shrinks(ref, other, ShrinkContext())
    except tv_mlir.errors.TvError:
        return  # a shrunk module shrunk again may not even verify: changed all the same
    assert edited != fresh


def _verify_counting(monkeypatch, ref: Any, other: Any, **options: Any) -> tuple[Any, dict[str, int]]:
    counts = {"raw": 0, "base": 0, "shrinks": 0}

    def spy(name: str, module: Any, attr: str) -> None:
        real = getattr(module, attr)

        def counted(*a: Any, **kw: Any) -> Any:
            counts[name] += 1
            return real(*a, **kw)
        monkeypatch.setattr(module, attr, counted)
    spy("raw", pair, "_raw")
    spy("base", plan, "_base")
    spy("shrinks", pair, "shrink_pair")
    monkeypatch.setattr(api, "shrink_pair", pair.shrink_pair)
    return tv_mlir.verify(ref, other, **options, **QUICK), counts


def test_the_originals_are_read_once_and_the_second_witness_still_catches(monkeypatch) -> None:
    """tests/test_second_witness.py's wrong first proof (the summand degree capped at 2):
    the second witness's shrink, made from the first's reading and base, still finds the
    difference, and the originals were read once for both shrinks."""
    real = plan.summand_degrees
    monkeypatch.setattr(plan, "summand_degrees", lambda *a: {c: min(d, 2) for c, d in real(*a).items()})
    p, q = newton_pair(64)
    v, counts = _verify_counting(monkeypatch, p, q)
    assert v.verdict == "not-equivalent", v.reason
    assert v.shrink["second"]["verdict"] == "not-equivalent"
    assert counts["shrinks"] >= 2 and counts["raw"] == 2 and counts["base"] == 1, counts


def test_the_loop_re_plan_has_its_own_base(monkeypatch) -> None:
    """testdata/loops unrolled.bug: the first plan takes rule l's per-trip degrees (N = 2,
    where the twin's Newton identity holds); no proof by induction, so verify plans again
    with composed degrees (N = 4) and the bug shows. Under one context the re-plan reads
    nothing again, but its base is its own: the per-trip switch is in the memo's key."""
    ref, other = _paths("loops", "unrolled", "bug")
    v, counts = _verify_counting(monkeypatch, ref, other, second_witness=False)
    assert v.verdict == "not-equivalent", v.reason
    assert counts["shrinks"] == 2 and counts["raw"] == 2 and counts["base"] == 2, counts


def test_a_base_shared_across_the_per_trip_switch_would_hide_the_loop_bug(monkeypatch) -> None:
    """The loosened memo (the per-trip switch left out of its key) hands the re-plan the
    per-trip base: the composed degrees are never applied and the bug twin is proved equal."""
    real = plan.PlanMemo.base

    def loose(self: plan.PlanMemo, ref: Any, other: Any, analysis: Any, ranges: Any, per_trip: Any,
              lookups: bool, *rest: Any) -> plan.PlanBase:
        if self.bases:
            return next(iter(self.bases.values()))
        return real(self, ref, other, analysis, ranges, per_trip, lookups, *rest)
    monkeypatch.setattr(plan.PlanMemo, "base", loose)
    ref, other = _paths("loops", "unrolled", "bug")
    v = tv_mlir.verify(ref, other, second_witness=False, **QUICK)
    assert v.verdict == "equivalent"
