"""Lanes along a gather's batch dims (stages/lanes.py, docs/stages.md "Gathers along their
batch dims"): the embedding lookup's stage (a table of V rows read at B x T token ids) is
proved at one token, not as B x T select chains over the V rows; a gather whose lane is
an operand batching dim (the batch position itself picks the operand's slab) or a window
dim is not folded, so that a bug there is not folded away.

The stages are written by hand as extract.build makes them (both programs global here);
MIN_ELEMENTS is set to 0 (these stages are small)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tv_mlir
from tv_mlir.api import prepare
from tv_mlir.ir import Op, TensorType
from tv_mlir.options import Options
from tv_mlir.stages import lanes
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.extract import StagePair

OPTIONS = Options(cache=False)
B, V, H = 6, 8, 4  # tokens, table rows, row width

LOOKUP = (f'"stablehlo.gather"(%t, %ids) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
          f'collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, '
          f'slice_sizes = array<i64: 1, {H}>, indices_are_sorted = false}} : '
          f'(tensor<{V}x{H}xf32>, tensor<{B}x1xi32>) -> tensor<{B}x{H}xf32>')
# out[b, :] = t[b, ids[b], :]: the batch position b also picks the table's slab.
BATCHED = (f'"stablehlo.gather"(%t, %ids) {{dimension_numbers = #stablehlo.gather<offset_dims = [1], '
           f'collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], '
           f'start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1, {H}>, '
           f'indices_are_sorted = false}} : (tensor<{B}x{V}x{H}xf32>, tensor<{B}x1xi32>) -> tensor<{B}x{H}xf32>')
# The bug twin's: every token reads slab 0.
SLAB0 = (f"    %s = stablehlo.slice %t [0:1, 0:{V}, 0:{H}] : (tensor<{B}x{V}x{H}xf32>) -> tensor<1x{V}x{H}xf32>\n"
         f"    %t0 = stablehlo.reshape %s : (tensor<1x{V}x{H}xf32>) -> tensor<{V}x{H}xf32>\n"
         f"    %out = {LOOKUP.replace('%t,', '%t0,')}")
OUT = f"tensor<{B}x{H}xf32>"


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "MIN_ELEMENTS", 0)


def _func(table: str, body: str) -> str:
    return (f"func.func @main(%t: {table}, %ids: tensor<{B}x1xi32>) -> {OUT} {{\n{body}\n"
            f"    return %out : {OUT}\n}}")


def _stage(ref: str, other: str) -> StagePair:
    r, o = prepare(ref, OPTIONS), prepare(other, OPTIONS)
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (), ("%t", "%ids"))


def _lookup(other_tail: str) -> StagePair:
    """The reference looks the ids up; the other program looks them up and then applies
    `other_tail` (an op from %g to %out)."""
    table = f"tensor<{V}x{H}xf32>"
    return _stage(_func(table, f"    %out = {LOOKUP}"), _func(table, f"    %g = {LOOKUP}\n{other_tail}"))


def _batched() -> StagePair:
    return _stage(_func(f"tensor<{B}x{V}x{H}xf32>", f"    %out = {BATCHED}"),
                  _func(f"tensor<{B}x{V}x{H}xf32>", SLAB0))


def _prove(stage: StagePair) -> stages_run.StageRecord:
    records, _ = stages_run._prove_stages([stage], OPTIONS, finite={"%t", "%ids"})
    return records[0]


SAME = f"    %one = stablehlo.constant dense<1.0> : {OUT}\n    %out = stablehlo.multiply %g, %one : {OUT}"
PLUS_ONE = f"    %one = stablehlo.constant dense<1.0> : {OUT}\n    %out = stablehlo.add %g, %one : {OUT}"


def test_a_lookup_is_proved_at_one_token(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _lookup(SAME)
    folded, sizes = lanes.fold_lanes(stage)
    # The tokens fold; the row's width is the gather's window and does not.
    assert sizes == [B]
    gather = next(op for op in folded.ref.main.body.ops if op.name == "stablehlo.gather")
    assert gather.result_types[0].shape == (1, H)
    record = _prove(stage)
    assert record.verdict == "equivalent" and record.lanes == [B]
    monkeypatch.setattr(lanes, "GATHER_LANES", False)
    assert lanes.fold_lanes(stage)[1] == []
    assert _prove(stage).verdict == "equivalent"


def test_a_wrong_value_after_the_lookup_is_found_folded() -> None:
    stage = _lookup(PLUS_ONE)
    assert lanes.fold_lanes(stage)[1] == [B]
    record = _prove(stage)
    assert record.verdict == "not-equivalent"


def _loosened(roles: Callable[[Op, int, list[TensorType], int], list[lanes.Role]]
              ) -> Callable[[Op, int, list[TensorType], int], list[lanes.Role]]:
    """The rule without its batching check: a batching gather's operand taken as lane-free."""
    def loose(op: Op, d: int, operand_types: list[TensorType], n: int) -> list[lanes.Role]:
        if op.name == "stablehlo.gather" and op.attrs["dimension_numbers"].operand_batching_dims:
            return [None, d]
        return roles(op, d, operand_types, n)
    return loose


def test_a_batching_gather_is_not_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    # Token b reads slab b of the table in the reference, slab 0 in the bug twin: equal at
    # one token, so a fold of the tokens would prove it.
    stage = _batched()
    assert lanes.fold_lanes(stage)[1] == []
    assert _prove(stage).verdict == "not-equivalent"
    monkeypatch.setattr(lanes, "_operand_roles", _loosened(lanes._operand_roles))
    assert lanes.fold_lanes(stage)[1] == [B]
    assert _prove(stage).verdict == "equivalent"  # what the check stands between


def test_the_batching_bug_twin_is_confirmed_on_xla(tmp_path: Path) -> None:
    stage = _batched()
    ref, other = tmp_path / "ref.mlir", tmp_path / "other.mlir"
    ref.write_text(_func(f"tensor<{B}x{V}x{H}xf32>", f"    %out = {BATCHED}"))
    other.write_text(_func(f"tensor<{B}x{V}x{H}xf32>", SLAB0))
    v = tv_mlir.verify(str(ref), str(other), cache=False, shrink=False, assume={"arg1": (0, V)})
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed
    assert stage.ref.main.body.ops[0].name == "stablehlo.gather"


def test_a_window_dim_is_not_a_lane() -> None:
    # The row's width H is an output dim of the lookup: as the lane it would be the window,
    # whose position i reads column i. Only the tokens fold, whatever is tried first.
    stage = _lookup(SAME)
    assert lanes._fold(stage, H, 0) is None and lanes._fold(stage, H, -1) is None
    assert lanes._fold(stage, B, 0) is not None


# The lookup's transpose, the embedding gradient: out[v, :] = t[v, :] + sum of the rows u[b, :]
# whose id is v. The row's width is a window dim no index starts and the update spans whole.
def _scatter(table: str, ids: str, updates: str, dims: str, out: str) -> str:
    return ('"stablehlo.scatter"(%t, %ids, %u) ({\n'
            "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
            "      %s = stablehlo.add %a, %b : tensor<f32>\n"
            "      stablehlo.return %s : tensor<f32>\n"
            f"  }}) {{scatter_dimension_numbers = #stablehlo.scatter<{dims}>, indices_are_sorted = false, "
            f"unique_indices = false}} : ({table}, {ids}, {updates}) -> {out}")


GRAD_DIMS = "update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1"
TABLE, IDS, ROWS = f"tensor<{V}x{H}xf32>", f"tensor<{B}x1xi32>", f"tensor<{B}x{H}xf32>"
GRAD = _scatter(TABLE, IDS, ROWS, GRAD_DIMS, TABLE)


def _grad_func(body: str) -> str:
    return (f"func.func @main(%t: {TABLE}, %ids: {IDS}, %u: {ROWS}) -> {TABLE} {{\n{body}\n"
            f"    return %out : {TABLE}\n}}")


def _grad(other_body: str) -> tuple[str, str]:
    return _grad_func(f"    %out = {GRAD}"), _grad_func(other_body)


def _grad_stage(other_body: str) -> StagePair:
    ref, other = _grad(other_body)
    r, o = prepare(ref, OPTIONS), prepare(other, OPTIONS)
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (), ("%t", "%ids", "%u"))


GRAD_SAME = f"    %g = {GRAD}\n    %one = stablehlo.constant dense<1.0> : {TABLE}\n    %out = stablehlo.multiply %g, %one : {TABLE}"
# The bug twin: every row's update counted twice.
GRAD_TWICE = (f"    %two = stablehlo.constant dense<2.0> : {ROWS}\n    %u2 = stablehlo.multiply %u, %two : {ROWS}\n"
              f"    %out = {GRAD.replace('%ids, %u)', '%ids, %u2)')}")


def _prove3(stage: StagePair) -> stages_run.StageRecord:
    records, _ = stages_run._prove_stages([stage], OPTIONS, finite={"%t", "%ids", "%u"})
    return records[0]


def test_an_embedding_gradient_is_proved_at_one_column(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _grad_stage(GRAD_SAME)
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes == [H]  # the rows (the scattered dim) do not fold
    scatter = next(op for op in folded.ref.main.body.ops if op.name == "stablehlo.scatter")
    assert scatter.result_types[0].shape == (V, 1)
    assert _prove3(stage).verdict == "equivalent"
    assert lanes._fold(stage, V, 0) is None and lanes._fold(stage, V, -1) is None
    monkeypatch.setattr(lanes, "GATHER_LANES", False)
    assert lanes.fold_lanes(stage)[1] == []


def test_a_gradient_counted_twice_is_found_folded_and_on_xla(tmp_path: Path) -> None:
    stage = _grad_stage(GRAD_TWICE)
    assert lanes.fold_lanes(stage)[1] == [H]
    assert _prove3(stage).verdict == "not-equivalent"
    ref, other = _grad(GRAD_TWICE)
    (tmp_path / "r.mlir").write_text(ref)
    (tmp_path / "o.mlir").write_text(other)
    v = tv_mlir.verify(str(tmp_path / "r.mlir"), str(tmp_path / "o.mlir"), cache=False, shrink=False,
                       assume={"arg1": (0, V)})
    assert v.verdict == "not-equivalent" and v.counterexample is not None and v.counterexample.confirmed


def test_a_window_an_index_starts_is_not_a_lane() -> None:
    # Ids of two entries (row, column) with the column started by the data: a window the
    # index moves along is not a lane, even when it spans the dim whole.
    dims = ("update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0, 1], "
            "index_vector_dim = 1")
    ids2 = f"tensor<{B}x2xi32>"
    body = f"    %out = {_scatter(TABLE, ids2, ROWS, dims, TABLE)}"
    func = (f"func.func @main(%t: {TABLE}, %ids: {ids2}, %u: {ROWS}) -> {TABLE} {{\n{body}\n"
            f"    return %out : {TABLE}\n}}")
    r = prepare(func, OPTIONS)
    stage = StagePair("stage", r, r, 1, 1, (), ("%t", "%ids", "%u"))
    assert lanes.fold_lanes(stage)[1] == []
