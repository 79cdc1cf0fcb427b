"""Rule (a), size values that meet (docs/shrinking.md): two size values of different
classes keep their order only when they can meet (shrink/meets.py with `data_only`: what
only picks program data, a lookup's ids or a mask's predicate, is not data its result is
combined with). Pair: testdata/shrink_rules/gen_pair_meets.py (manifest_pair_meets.json,
XLA-checked at the original sizes). Verdicts with the full-size check and the second
witness off, so that the rule is what is tested."""
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
PAIRS = json.loads((D / "manifest_pair_meets.json").read_text())


def _files(variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"pair_clamp.{variant}.ref.mlir"), str(D / f"pair_clamp.{variant}.{kind}.mlir")


def _plan(variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(variant, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _sizes(p: ShrinkPlan) -> tuple[int, int]:
    """(vocabulary, tokens) as verified."""
    by = {e.where: e.verified for e in p.entries}
    return by["emb dim 0"], by["ids dim 0"]


def _loose(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule made too permissive on purpose: size values apart unless one program
    combines them (the sources, what each is combined with, ignored). The
    reference's gather also clamps the ids on its own, a size value since rule a's implicit
    clamps (clamps.py), which orders the bug's clamp too: that rule is switched off here, so
    that this rule's own hole shows."""
    monkeypatch.setattr(constants, "apart", lambda a, b, same: not (same and a.carried & b.carried))
    monkeypatch.setattr(clamps, "CLAMPS", False)


def test_pair_meets_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in PAIRS} == {("pair_clamp", "small"), ("pair_clamp", "big")}
    assert all(e["ran_on_xla"] for e in PAIRS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_token_count_does_not_bound_the_vocabulary(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The mean's divisor n (the tokens) meets the looked-up rows, the clamp V - 1 the ids:
    # apart, so the vocabulary may shrink below the tokens (it kept above them before).
    vocab, tokens = _sizes(_plan(variant, "ok"))
    assert vocab < tokens
    monkeypatch.setattr(constants, "PAIR_MEETING", False)
    vocab, tokens = _sizes(_plan(variant, "ok"))
    assert vocab > tokens


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_clamp_at_the_token_count_still_orders_the_vocabulary(variant: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # The bug clamps the ids at n - 1 where the reference clamps them at V - 1: both meet
    # the ids, so the vocabulary stays above the tokens.
    vocab, tokens = _sizes(_plan(variant, "bug"))
    assert vocab > tokens
    _loose(monkeypatch)
    vocab, tokens = _sizes(_plan(variant, "bug"))
    assert vocab <= tokens


def test_pair_meet_verdicts() -> None:
    ok = tv_mlir.verify(*_files("small", "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"


def test_without_the_sources_the_clamp_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    _loose(monkeypatch)
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "equivalent", bug.reason


def test_data_only_reaches_leave_out_what_picks_the_rows() -> None:
    # The tokens' divisor is combined with the squared rows: the embedding's data (input 0)
    # only, with data_only; with the ids too (input 1, through the gather's index and the
    # mask's predicate) as the literals' reach reads it. The clamp meets the ids.
    ref, other = _files("small", "ok")
    r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
    a = analyse(r, o)
    fa = ProgramFacts.of("ref", r)
    by_value = {float(splat(op)): op.results[0] for op in fa.ops()
                if op.name == "stablehlo.constant" and splat(op) is not None}
    data, full = Meets(fa, a, data_only=True), Meets(fa, a)
    n, last = by_value[16.0], by_value[63.0]
    assert {s for s in data.reach(n).sources if not s.startswith("at ")} == {"input 0"}
    assert "input 1" in full.reach(n).sources
    clamp = data.reach(last).sources
    assert "input 1" in clamp and "input 0" not in clamp and ANY not in clamp, clamp


_TABLE = """
func.func public @main(%arg0: tensor<8xi32>, %arg1: tensor<16xi32>) -> tensor<16xi1> {
  %0 = stablehlo.iota dim = 0 : tensor<8xi32>
  %1 = stablehlo.add %0, %arg0 : tensor<8xi32>
  %2 = stablehlo.reshape %arg1 : (tensor<16xi32>) -> tensor<16x1xi32>
  %3 = "stablehlo.gather"(TABLE, %2) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0],
      start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1>}>
      : (tensor<8xi32>, tensor<16x1xi32>) -> tensor<16xi32>
  %c = stablehlo.constant dense<5> : tensor<16xi32>
  %4 = stablehlo.compare LT, %3, %c : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
  return %4 : tensor<16xi1>
}
"""


@pytest.mark.parametrize("table, picked_by_ids", [("%arg0", False), ("%1", True)])
def test_picking_from_a_position_table_keeps_the_index(table: str, picked_by_ids: bool, tmp_path) -> None:
    # A row of an input table is that input's data, whatever the ids; a row of `iota +
    # offset` along the dim the ids index is the ids themselves (plus the offset): the
    # ids stay among its sources.
    path = tmp_path / "table.mlir"
    path.write_text(_TABLE.replace("TABLE", table))
    m = _raw(str(path), prepare(str(path), Options())).module
    a = analyse(m, m)
    fa = ProgramFacts.of("ref", m)
    gathered = next(op.results[0] for op in fa.ops() if op.name == "stablehlo.gather")
    assert ("input 1" in Meets(fa, a, data_only=True).sources(gathered)) == picked_by_ids
    assert "input 1" in Meets(fa, a).sources(gathered)


_SLICE = """
func.func public @main(%arg0: tensor<8x4xi32>, %arg1: tensor<i32>) -> tensor<8x2xi32> {
  %0 = stablehlo.iota dim = 0 : tensor<8x4xi32>
  %1 = stablehlo.add %0, %arg0 : tensor<8x4xi32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %2 = stablehlo.dynamic_slice %1, START0, START1, sizes = [8, 2] : (tensor<8x4xi32>, tensor<i32>, tensor<i32>) -> tensor<8x2xi32>
  return %2 : tensor<8x2xi32>
}
"""


@pytest.mark.parametrize("starts, picked_by_index", [(("%c", "%arg1"), False), (("%arg1", "%c"), True)])
def test_a_slice_keeps_its_index_along_positions_only(starts: tuple[str, str], picked_by_index: bool,
                                                       tmp_path) -> None:
    # Sliced at a data start across the positions (dim 0, the iota's) the slice is a
    # function of the start; sliced at a constant start there and at data along dim 1, its
    # elements are the table's own, whatever the start.
    path = tmp_path / "slice.mlir"
    path.write_text(_SLICE.replace("START0", starts[0]).replace("START1", starts[1]))
    m = _raw(str(path), prepare(str(path), Options())).module
    a = analyse(m, m)
    fa = ProgramFacts.of("ref", m)
    sliced = next(op.results[0] for op in fa.ops() if op.name == "stablehlo.dynamic_slice")
    assert ("input 1" in Meets(fa, a, data_only=True).sources(sliced)) == picked_by_index
