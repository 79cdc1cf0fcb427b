"""Rule (a), literals that meet (docs/shrinking.md): a literal below a size value keeps the
class above it only when the two can meet (shrink/meets.py): one carries into what the
other carries, or both are combined with data of a common source. Pairs:
testdata/shrink_rules/gen_meets.py (manifest_meets.json, XLA-checked at the original
sizes). Verdicts with the full-size check and the second witness off, so that the rule is
what is tested."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import clamps, constants
from tv_mlir.shrink.dims import analyse
from tv_mlir.shrink.facts import ProgramFacts, splat
from tv_mlir.shrink.meets import ANY, Meets
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
MEETS = json.loads((D / "manifest_meets.json").read_text())
SIZES = {e["variant"]: e["sizes"] for e in MEETS}


def _files(variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"meet_clamp.{variant}.ref.mlir"), str(D / f"meet_clamp.{variant}.{kind}.mlir")


def _plan(variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(variant, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _vocab(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.where == "emb dim 0")


def _loose(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule made too permissive on purpose: literals apart unless one program combines
    them (the sources, what each is combined with, ignored). The
    reference's gather also clamps the ids on its own, a size value since rule a's implicit
    clamps (clamps.py), which orders the bug's clamp too: that rule is switched off here, so
    that this rule's own hole shows."""
    monkeypatch.setattr(constants, "apart", lambda a, b, same: not (same and a.carried & b.carried))
    monkeypatch.setattr(clamps, "CLAMPS", False)


def test_meets_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in MEETS} == {("meet_clamp", "small"), ("meet_clamp", "big")}
    assert all(e["ran_on_xla"] for e in MEETS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_frequency_base_does_not_bound_the_vocabulary(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    base = SIZES[variant]["base"]
    assert _vocab(_plan(variant, "ok")) < base
    monkeypatch.setattr(constants, "MEETING", False)
    assert _vocab(_plan(variant, "ok")) > base


def test_a_cap_on_the_ids_still_bounds_the_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    # The bug clamps the ids at the literal cap, where the reference clamps them at the
    # vocabulary's last row: both combined with the ids, so the vocabulary stays above it.
    assert _vocab(_plan("big", "bug")) > SIZES["big"]["cap"]
    _loose(monkeypatch)
    assert _vocab(_plan("big", "bug")) < SIZES["big"]["cap"]


def test_meet_verdicts() -> None:
    ok = tv_mlir.verify(*_files("small", "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"


def test_without_the_sources_the_cap_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    _loose(monkeypatch)
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "equivalent", bug.reason


def test_reaches_of_the_base_and_the_clamp() -> None:
    ref, other = _files("big", "bug")
    r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
    a = analyse(r, o)
    fa = ProgramFacts.of("other", o)
    m = Meets(fa, a)
    by_value = {float(splat(op)): op.results[0] for op in fa.ops()
                if op.name == "stablehlo.constant" and splat(op) is not None}
    base, cap = m.reach(by_value[10000.0]), m.reach(by_value[1000.0])
    assert {s.split()[0] for s in base.sources} == {"iota", "at"}, base.sources
    assert "input 1" in cap.sources and ANY not in cap.sources, cap.sources
