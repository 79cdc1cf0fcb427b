"""Halves written as pads (docs/shrinking.md, "Halves"; switch dim_rules.PAD_HALVES): jax's
transpose of a half slice is a pad by the half, `pad(g, lo=h)` / `pad(g, hi=h)` (RoPE's
backward), read as the concatenation of two pieces of one size, the dim a product (2, h).
Pair: testdata/shrink_rules/gen_pad_halves.py (manifest_pad_halves.json, XLA-checked at the
original sizes). Verdicts with the full-size check and the second witness off."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import dim_rules
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
PAIRS = json.loads((D / "manifest_pad_halves.json").read_text())


def _files(variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"pad_halves.{variant}.ref.mlir"), str(D / f"pad_halves.{variant}.{kind}.mlir")


def _plan(variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(variant, kind)
    r, o = prepare(ref, Options()), prepare(other, Options())
    return plan(_raw(ref, r).module, _raw(other, o).module)


def _head_dim(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.where == "x dim 1")


def test_pad_halves_manifest_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in PAIRS} == {("pad_halves", "small"), ("pad_halves", "big")}
    assert all(e["ran_on_xla"] for e in PAIRS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_pad_by_the_half_is_a_half(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _head_dim(_plan(variant, "ok")) < 128
    # Read as an offset (64 + 64) of a class that is also a product: kept.
    monkeypatch.setattr(dim_rules, "PAD_HALVES", False)
    assert _head_dim(_plan(variant, "ok")) == 128


def test_the_correct_twin_is_equivalent_at_the_shrunk_sizes() -> None:
    v = tv_mlir.verify(*_files("small", "ok"), **RULES_OFF)
    assert v.verdict == "equivalent", v.reason
    assert any(c["original"] == 128 and c["verified"] < 128 for c in (v.shrink or {}).get("shrunk", [])), v.shrink


def test_the_interleaved_adjoint_keeps_the_dim_and_is_found() -> None:
    # The bug reads the dim as (h, 2) where the pads read it as (2, h): two ways, kept.
    assert _head_dim(_plan("small", "bug")) == 128
    v = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", c
