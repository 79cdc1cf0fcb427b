"""Rule (a), a call's meets are its callee's (docs/shrinking.md): a constant passed to a
`func.call` meets what the callee combines it with (and, through the returns, what the call's
results meet), as in the program with the call inlined; the call's other operands are not
counted as met (switch meets.CALLEES). Pair: testdata/shrink_rules/gen_call_meets.py
(manifest_call_meets.json, XLA-checked at the original sizes). Verdicts with the full-size
check and the second witness off, so that the rule is what is tested. Also `gather_cap`,
the hole this pair's work found (a literal cap before a gather that clamps on its own),
closed by rule (a)'s implicit clamps (switch clamps.CLAMPS)."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA, assert_confirmed_at_original_sizes
from tv_mlir.api import prepare
from tv_mlir.ir import Op
from tv_mlir.options import Options
from tv_mlir.shrink import clamps, meets
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
PAIRS = json.loads((D / "manifest_call_meets.json").read_text())
SIZES = {e["variant"]: e["sizes"] for e in PAIRS if e["pair"] == "call_meet"}


def _files(variant: str, kind: str, pair: str = "call_meet") -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _plan(variant: str, kind: str, pair: str = "call_meet") -> ShrinkPlan:
    ref, other = _files(variant, kind, pair)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _vocab(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.where == "emb dim 0")


def _loose(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule made too permissive on purpose: a call read as an op that carries its
    operands to its results, the callee not entered (what the constant meets inside it
    unseen), and the call's other operands not counted either."""
    def results(args: tuple[str, ...], op: Op, k: list[int]) -> list[str]:
        return list(op.results)
    monkeypatch.setattr(meets, "_call_flow", results)


def test_call_meets_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in PAIRS} == {("call_meet", "small"), ("call_meet", "big"),
                                                          ("gather_cap", "small")}
    assert all(e["ran_on_xla"] for e in PAIRS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_call_operand_beside_the_bound_does_not_bound_the_vocabulary(
        variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The helper's operands hold the frequency table (which the base meets) next to V - 1;
    # inside the helper V - 1 meets only the ids.
    base = SIZES[variant]["base"]
    assert _vocab(_plan(variant, "ok")) < base
    monkeypatch.setattr(meets, "CALLEES", False)
    assert _vocab(_plan(variant, "ok")) > base


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_cap_passed_into_a_call_still_bounds_the_vocabulary(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Inside the helper the cap clamps the ids, as the reference's V - 1 does.
    cap = SIZES[variant]["cap"]
    assert _vocab(_plan(variant, "bug")) > cap
    _loose(monkeypatch)
    assert _vocab(_plan(variant, "bug")) < cap


def test_call_meet_verdicts() -> None:
    ok = tv_mlir.verify(*_files("small", "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    assert ok.shrink is not None and ok.shrink["applied"], ok.shrink
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert_confirmed_at_original_sizes(bug)


def test_without_entering_the_callee_the_cap_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    _loose(monkeypatch)
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "equivalent", bug.reason


def test_a_cap_before_a_clamping_gather_bounds_the_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reference's gather clamps the ids at V - 1 on its own (jnp.take's clip mode, no
    # constant): rule a's implicit clamps read it as a size value |V| - 1, met by the ids the
    # bug's literal cap meets, so the vocabulary stays above the cap. Without them (the
    # hole helper-34 found) it shrinks to 2, where the two clamps agree.
    cap = 40
    assert _vocab(_plan("small", "bug", "gather_cap")) > cap
    assert _vocab(_plan("small", "ok", "gather_cap")) < cap  # a clamp at V - 1 is rewritten with V
    monkeypatch.setattr(clamps, "CLAMPS", False)
    assert _vocab(_plan("small", "bug", "gather_cap")) < cap


def test_a_cap_before_a_clamping_gather_is_found_by_the_rules() -> None:
    bug = tv_mlir.verify(*_files("small", "bug", "gather_cap"), **RULES_OFF)
    assert_confirmed_at_original_sizes(bug)


def test_without_implicit_clamps_the_cap_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clamps, "CLAMPS", False)
    bug = tv_mlir.verify(*_files("small", "bug", "gather_cap"), **RULES_OFF)
    assert bug.verdict == "equivalent", bug.reason


def test_a_cap_before_a_clamping_gather_is_caught_at_the_original_sizes() -> None:
    # Default options: the rules keep the vocabulary above the cap, and the full-size
    # check (the pair fits it) agrees.
    assert_confirmed_at_original_sizes(tv_mlir.verify(*_files("small", "bug", "gather_cap")))
