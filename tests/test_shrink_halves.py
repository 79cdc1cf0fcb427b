"""Halves (docs/shrinking.md, "Halves"): a slice of exactly one half of a dim and a
concatenation of equal pieces read the dim as the product (pieces, piece), the piece index
major and pinned (dim_rules.HALVES); RoPE's frequency divisor `arange(0, d, 2) / d`, a float
that divides positions only and names q/k's and v's head_dim, ties them to one size
(constants.POSITION_FLOATS). Pairs: testdata/shrink_rules/gen_halves.py
(manifest_halves.json, XLA-checked at the original sizes). Verdicts with the full-size
check and the second witness off, so that the rules are what is tested."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants, dim_rules
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
HALVES = json.loads((D / "manifest_halves.json").read_text())


def _files(pair: str, variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _plan(pair: str, variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, variant, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _size(p: ShrinkPlan, where: str) -> int:
    return next(e.verified for e in p.entries if e.where == where)


def _reversed_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """The halves rule made wrong on purpose: the dim read as (piece, pieces), minor first."""
    pieces = dim_rules._pieces

    def minor_first(w, whole, d, k, piece, where):  # type: ignore[no-untyped-def]
        minor = pieces(w, whole, d, k, piece, where)
        node, parts = w.products[-1]
        w.products[-1] = (node, parts[::-1])
        return minor
    monkeypatch.setattr(dim_rules, "_pieces", minor_first)


def test_halves_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in HALVES} == \
        {(p, v) for p in ("halves_swap", "rope_halves") for v in ("small", "big")}
    assert all(e["ran_on_xla"] for e in HALVES)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_swapped_halves_shrink_only_with_the_rule(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The dim is (2, h), h free: 2 x 1. Without the rule the middle bound pins it.
    d = 8 if variant == "small" else 128
    assert _size(_plan("halves_swap", variant, "ok"), "x dim 1") == 2
    monkeypatch.setattr(dim_rules, "HALVES", False)
    assert _size(_plan("halves_swap", variant, "ok"), "x dim 1") == d


def test_interleaved_halves_keep_their_dim() -> None:
    # concat reads the output dim as (2, h), the bug's stack-then-reshape as (h, 2): one
    # dim split two ways keeps its size, where the interleave is a different vector.
    assert _size(_plan("halves_swap", "big", "bug"), "x dim 1") == 128


@pytest.mark.parametrize("variant", ["small", "big"])
def test_halves_verdicts(variant: str) -> None:
    ok = tv_mlir.verify(*_files("halves_swap", variant, "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    bug = tv_mlir.verify(*_files("halves_swap", variant, "bug"), **RULES_OFF)
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"


def test_halves_read_minor_first_hide_the_interleave(monkeypatch: pytest.MonkeyPatch) -> None:
    # With the product's factors in the wrong order the bug's reshape agrees with the
    # halves, h shrinks to 1, and at one element per half an interleave is a concatenation.
    _reversed_pieces(monkeypatch)
    bug = tv_mlir.verify(*_files("halves_swap", "big", "bug"), **RULES_OFF)
    assert bug.verdict == "equivalent", bug.reason


def test_rope_head_dim_shrinks_with_both_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    p = _plan("rope_halves", "big", "ok")
    assert _size(p, "q dim 1") == _size(p, "v dim 1") < 128, [(e.original, e.verified, e.where) for e in p.entries]
    assert p.constants, "the frequency divisor 128.0 is rewritten with the head_dim"
    monkeypatch.setattr(constants, "POSITION_FLOATS", False)
    off = _plan("rope_halves", "big", "ok")
    assert _size(off, "q dim 1") == _size(off, "v dim 1") == 128
    monkeypatch.setattr(constants, "POSITION_FLOATS", True)
    monkeypatch.setattr(dim_rules, "HALVES", False)
    assert _size(_plan("rope_halves", "big", "ok"), "q dim 1") == 128


def test_rope_verdicts() -> None:
    ok = tv_mlir.verify(*_files("rope_halves", "big", "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    assert any(e["original"] == 128 and e["verified"] < 128 for e in ok.shrink["shrunk"]), ok.shrink
    # The bug's d - 2 is a 'size - 2' divisor (rule a): tied with the head_dim, kept inside it.
    bug = tv_mlir.verify(*_files("rope_halves", "big", "bug"), **RULES_OFF)
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"
