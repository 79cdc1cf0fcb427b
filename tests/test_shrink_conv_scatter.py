"""Rule (h) for scatter and convolution (docs/shrinking.md, "Scatter and convolution"),
and XLA's offset tables: the public bug patterns `shift` and `conv` at realistic sizes
(testdata/bug_patterns/{shift,conv}_big, issue 15) shrink instead of pinning every dim, and
each rule's bound keeps its adversarial pair's bug visible (testdata/gen_bug_patterns.py,
RULE_PAIRS): with the bound switched off the bug twin is `equivalent` at the shrunk sizes.
Verdicts with the full-size check and the second witness off, so that the rule is what
is tested."""
from __future__ import annotations

from pathlib import Path

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants, dim_rules, dims
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "bug_patterns"


def _plan(ref: Path | str, other: Path | str) -> ShrinkPlan:
    ref, other = str(ref), str(other)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _pair(name: str, kind: str) -> tuple[str, str]:
    return str(D / f"{name}.ref.mlir"), str(D / f"{name}.{kind}.mlir")


def _size(p: ShrinkPlan, where: str) -> int:
    return next(e.verified for e in p.entries if e.where == where)


# --- the realistic patterns: plans (fast); verdicts are in tests/test_bug_patterns.py

def test_shift_big_shrinks_through_its_scatter_and_offset_table() -> None:
    p = _plan(*_pair("shift_big", "partitioned"))
    # rows: 4 shards x (2R + 2) with the one-row halo; columns free
    assert _size(p, "a dim 0") == 16 and _size(p, "a dim 1") == 1
    assert p.elements < 1000
    # the shard start table [0, 1024, 2048, 3072] is rewritten with the shrunk block
    assert (0, 4, 8, 12) in p.constants.values()


def test_conv_big_shrinks_batch_features_and_spatial_dims() -> None:
    p = _plan(*_pair("conv_big", "partitioned"))
    assert _size(p, "x dim 0") == 1  # batch: free
    assert _size(p, "w dim 3") == 1  # output features: free
    assert 2 <= _size(p, "x dim 3") < 64  # input features: summed (Newton)
    # height: strided, sharded 4 ways, the output's shards keep 2R + 2 = 6 (8 with the
    # divisor), the input is twice the output; width: a stride-1 window, 6 -> 8
    assert _size(p, "x dim 1") == 2 * _size(p, "result 0 dim 1") == 64
    assert _size(p, "x dim 2") == 8
    assert _size(p, "w dim 0") == 3  # the window
    assert p.elements < 20000


@pytest.mark.parametrize("switch", [(dim_rules, "SCATTER"), (constants, "OFFSET_TABLES"), (dims, "SHARDED_BASE")])
def test_each_mechanism_is_needed_for_shift_big(monkeypatch: pytest.MonkeyPatch, switch: tuple) -> None:
    monkeypatch.setattr(*switch, False)
    p = _plan(*_pair("shift_big", "partitioned"))
    assert _size(p, "a dim 0") == 4096


def test_without_the_convolution_rule_conv_big_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dim_rules, "CONVOLUTION", False)
    p = _plan(*_pair("conv_big", "partitioned"))
    assert all(e.verified == e.original for e in p.entries)


# --- adversarial pairs

# (pair, the shrunk dim, the size its zone keeps, the zone's switch, the size without it):
# scatter_row is a.at[5].set(v) against a.at[6].set(v) (the row index is a halo width of 6,
# 2R + 2 = 14; below 6 rows both writes fall off the end and a scatter skips them);
# conv_interior adds a term x[t-1] x[t+1] at interior positions only (the padded window
# keeps 2R + 2 = 6; at 1 or 2 positions there is no interior).
ZONE_PAIRS = [("scatter_row", "a dim 0", 14, "SCATTER_ZONES", 5), ("conv_interior", "x dim 1", 6, "CONV_ZONES", 2)]


@pytest.mark.parametrize("name,dim,kept,switch,without", ZONE_PAIRS)
def test_the_bug_is_found_with_the_zone(name: str, dim: str, kept: int, switch: str, without: int) -> None:
    assert _size(_plan(*_pair(name, "bug")), dim) >= kept
    v = tv_mlir.verify(*_pair(name, "bug"), **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


@pytest.mark.parametrize("name,dim,kept,switch,without", ZONE_PAIRS)
def test_without_the_zone_the_bug_hides(monkeypatch: pytest.MonkeyPatch, name: str, dim: str, kept: int, switch: str,
                                        without: int) -> None:
    monkeypatch.setattr(dim_rules, switch, False)
    assert _size(_plan(*_pair(name, "bug")), dim) <= without
    assert tv_mlir.verify(*_pair(name, "bug"), **RULES_OFF).verdict == "equivalent"


def test_scatter_row_correct_twin_is_equivalent_shrunk() -> None:
    # the same write as an iota mask (rule b: 2 x 5 + 2)
    assert _size(_plan(*_pair("scatter_row", "ok")), "a dim 0") < 64
    assert tv_mlir.verify(*_pair("scatter_row", "ok"), **RULES_OFF).verdict == "equivalent"


def test_conv_interior_correct_twin_is_equivalent_shrunk() -> None:
    # the padding written as a pad (in a called function), then a conv without padding
    assert _size(_plan(*_pair("conv_interior", "ok")), "x dim 1") < 64
    assert tv_mlir.verify(*_pair("conv_interior", "ok"), **RULES_OFF).verdict == "equivalent"
