"""Lanes along a gather's and a scatter's batching dims, and through slices, concatenations
and pads that keep the lane whole (stages/lanes.py, docs/stages.md "Batching dims as
lanes"): take_along_axis (the cross-entropy's gather of the target's logit) and its
transpose are proved at one token, not as one select chain over the vocabulary per token.
Each rule has a bug twin that a fold at one position would hide (confirmed on XLA at its
own sizes) and a correct twin; the loosened rules prove the bug twins `equivalent`, so a
test fails if a check is dropped.

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
B, V = 4, 5  # tokens per batch dim (both dims of size B: a swapped pairing keeps every shape), vocabulary

LOGITS, IDS, OUT = f"tensor<{B}x{B}x{V}xf32>", f"tensor<{B}x{B}x1xi32>", f"tensor<{B}x{B}xf32>"


def _take(pairing: str) -> str:
    """out[i, j] = x[i, j, ids[i, j]] (pairing "0, 1"), or x[j, i, ids[i, j]] ("1, 0")."""
    return (f'"stablehlo.gather"(%x, %ids) {{dimension_numbers = #stablehlo.gather<offset_dims = [], '
            f'collapsed_slice_dims = [2], operand_batching_dims = [0, 1], start_indices_batching_dims = [{pairing}], '
            f'start_index_map = [2], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1, 1>, '
            f'indices_are_sorted = false}} : ({LOGITS}, {IDS}) -> {OUT}')


def _put(pairing: str) -> str:
    """take_along_axis's transpose: out = x, then out[i, j, ids[i, j]] += u[i, j] (pairing
    "0, 1"), or out[j, i, ids[i, j]] += u[i, j] ("1, 0")."""
    return ('"stablehlo.scatter"(%x, %ids, %u) ({\n'
            "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
            "      %s = stablehlo.add %a, %b : tensor<f32>\n"
            "      stablehlo.return %s : tensor<f32>\n"
            "  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [], "
            f"inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [{pairing}], "
            "scatter_dims_to_operand_dims = [2], index_vector_dim = 2>, indices_are_sorted = false, "
            f"unique_indices = false}} : ({LOGITS}, {IDS}, {OUT}) -> {LOGITS}")


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "MIN_ELEMENTS", 0)


def _func(args: str, result: str, body: str) -> str:
    return f"func.func @main({args}) -> {result} {{\n{body}\n    return %out : {result}\n}}"


def _stage(ref: str, other: str, slots: tuple[str, ...]) -> StagePair:
    r, o = prepare(ref, OPTIONS), prepare(other, OPTIONS)
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (), slots)


def _prove(stage: StagePair) -> stages_run.StageRecord:
    records, _ = stages_run._prove_stages([stage], OPTIONS, finite=set(stage.slots))
    return records[0]


def _confirmed_on_xla(tmp_path: Path, ref: str, other: str, ids_arg: str) -> None:
    (tmp_path / "r.mlir").write_text(ref)
    (tmp_path / "o.mlir").write_text(other)
    v = tv_mlir.verify(str(tmp_path / "r.mlir"), str(tmp_path / "o.mlir"), cache=False, shrink=False,
                       assume={ids_arg: (0, V)})
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


# take_along_axis: the gather's batching dims.
GATHER_ARGS = f"%x: {LOGITS}, %ids: {IDS}"
ONE = f"    %one = stablehlo.constant dense<1.0> : {OUT}\n"


def _gathers(other_pairing: str, tail: str = "") -> tuple[str, str]:
    ref = _func(GATHER_ARGS, OUT, f"    %out = {_take('0, 1')}")
    body = f"    %g = {_take(other_pairing)}\n{ONE}    %out = stablehlo.multiply %g, %one : {OUT}" if tail == "" \
        else f"    %out = {_take(other_pairing)}"
    return ref, _func(GATHER_ARGS, OUT, body)


def test_take_along_axis_is_proved_at_one_token(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _stage(*_gathers("0, 1"), ("%x", "%ids"))
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes == [B, B]
    gather = next(op for op in folded.ref.main.body.ops if op.name == "stablehlo.gather")
    assert gather.result_types[0].shape == (1, 1)
    assert folded.ref.main.body.arg_types[0].shape == (1, 1, V)  # the vocabulary is read whole
    record = _prove(stage)
    assert record.verdict == "equivalent" and record.lanes == [B, B]
    monkeypatch.setattr(lanes, "BATCHING_LANES", False)
    assert lanes.fold_lanes(stage)[1] == []
    assert _prove(stage).verdict == "equivalent"


def _as_the_result(roles: Callable[[Op, int, list[TensorType], int], list[lanes.Role]]
                   ) -> Callable[[Op, int, list[TensorType], int], list[lanes.Role]]:
    """The rules without their pairing: a batching gather's or scatter's operands take the
    lane at the result's own dim, whichever indices batching dim is paired with it."""
    def loose(op: Op, d: int, operand_types: list[TensorType], n: int) -> list[lanes.Role]:
        if op.name == "stablehlo.gather" and op.attrs["dimension_numbers"].operand_batching_dims:
            return [d, d]
        if op.name == "stablehlo.scatter" and op.attrs["scatter_dimension_numbers"].input_batching_dims:
            return [d, d, d]
        return roles(op, d, operand_types, n)
    return loose


def test_a_swapped_gather_pairing_is_not_folded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Token (i, j) reads row (i, j) of the logits in the reference, row (j, i) in the bug
    # twin: the same at one token, so a fold that ignored the pairing would prove it.
    ref, other = _gathers("1, 0", tail="bare")
    stage = _stage(ref, other, ("%x", "%ids"))
    assert lanes.fold_lanes(stage)[1] == []
    assert _prove(stage).verdict == "not-equivalent"
    _confirmed_on_xla(tmp_path, ref, other, "arg1")
    monkeypatch.setattr(lanes, "_operand_roles", _as_the_result(lanes._operand_roles))
    assert lanes.fold_lanes(stage)[1] == [B, B]
    assert _prove(stage).verdict == "equivalent"  # what the pairing stands between


# Its transpose: the scatter's batching dims.
SCATTER_ARGS = f"%x: {LOGITS}, %ids: {IDS}, %u: {OUT}"


def _scatters(other_pairing: str, same: bool) -> tuple[str, str]:
    ref = _func(SCATTER_ARGS, LOGITS, f"    %out = {_put('0, 1')}")
    if same:
        body = (f"    %g = {_put(other_pairing)}\n    %one = stablehlo.constant dense<1.0> : {LOGITS}\n"
                f"    %out = stablehlo.multiply %g, %one : {LOGITS}")
    else:
        body = f"    %out = {_put(other_pairing)}"
    return ref, _func(SCATTER_ARGS, LOGITS, body)


def test_take_along_axis_transpose_is_proved_at_one_token(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _stage(*_scatters("0, 1", same=True), ("%x", "%ids", "%u"))
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes == [B, B]
    scatter = next(op for op in folded.ref.main.body.ops if op.name == "stablehlo.scatter")
    assert scatter.result_types[0].shape == (1, 1, V)
    assert [t.shape for t in folded.ref.main.body.arg_types] == [(1, 1, V), (1, 1, 1), (1, 1)]
    assert _prove(stage).verdict == "equivalent"
    # The vocabulary (the dim the index starts) is never a lane.
    assert lanes._fold(stage, V, 0) is None and lanes._fold(stage, V, -1) is None
    monkeypatch.setattr(lanes, "BATCHING_LANES", False)
    assert lanes.fold_lanes(stage)[1] == []


def test_a_swapped_scatter_pairing_is_not_folded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ref, other = _scatters("1, 0", same=False)
    stage = _stage(ref, other, ("%x", "%ids", "%u"))
    assert lanes.fold_lanes(stage)[1] == []
    assert _prove(stage).verdict == "not-equivalent"
    _confirmed_on_xla(tmp_path, ref, other, "arg1")
    monkeypatch.setattr(lanes, "_operand_roles", _as_the_result(lanes._operand_roles))
    assert lanes.fold_lanes(stage)[1] == [B, B]
    assert _prove(stage).verdict == "equivalent"


# Slices, concatenations and pads along other dims than the lane.
N, W = 6, 4
ROWS, HALF = f"tensor<{N}x{W}xf32>", f"tensor<{N}x{W // 2}xf32>"
HALVES = (f"    %a = stablehlo.slice %x [0:{N}, 0:{W // 2}] : ({ROWS}) -> {HALF}\n"
          f"    %b = stablehlo.slice %x [0:{N}, {W // 2}:{W}] : ({ROWS}) -> {HALF}\n")


def test_rotated_halves_are_proved_at_one_row() -> None:
    # RoPE's rotate_half, written as slices and a concatenation along the columns: the rows
    # fold, the columns (sliced) do not.
    ref = _func(f"%x: {ROWS}", ROWS, HALVES + f"    %n = stablehlo.negate %b : {HALF}\n"
                f"    %out = stablehlo.concatenate %n, %a, dim = 1 : ({HALF}, {HALF}) -> {ROWS}")
    other = _func(f"%x: {ROWS}", ROWS, HALVES + f"    %c = stablehlo.concatenate %b, %a, dim = 1 : ({HALF}, {HALF}) -> {ROWS}\n"
                  f"    %z = stablehlo.constant dense<0.0> : {HALF}\n    %one = stablehlo.constant dense<1.0> : {HALF}\n"
                  f"    %s = stablehlo.concatenate %one, %z, dim = 1 : ({HALF}, {HALF}) -> {ROWS}\n"
                  f"    %t = stablehlo.multiply %c, %s : {ROWS}\n    %two = stablehlo.constant dense<2.0> : {ROWS}\n"
                  f"    %t2 = stablehlo.multiply %t, %two : {ROWS}\n    %out = stablehlo.subtract %c, %t2 : {ROWS}")
    stage = _stage(ref, other, ("%x",))
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes == [N]
    assert folded.ref.main.body.arg_types[0].shape == (1, W)
    assert _prove(stage).verdict == "equivalent"
    assert lanes._fold(stage, W, 0) is None and lanes._fold(stage, W, -1) is None


def _shift(by: int) -> str:
    """x shifted down the rows by `by` (a pad along the lane: low `by`, high `-by`)."""
    return (f"    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            f"    %out = stablehlo.pad %x, %z, low = [{by}, 0], high = [{-by}, 0], interior = [0, 0] "
            f": ({ROWS}, tensor<f32>) -> {ROWS}")


def _ignoring_pads(roles: Callable[[Op, int, list[TensorType], int], list[lanes.Role]]
                   ) -> Callable[[Op, int, list[TensorType], int], list[lanes.Role]]:
    """The pad rule without its check that nothing is padded along the lane."""
    def loose(op: Op, d: int, operand_types: list[TensorType], n: int) -> list[lanes.Role]:
        return [d, None] if op.name == "stablehlo.pad" else roles(op, d, operand_types, n)
    return loose


def test_a_pad_along_the_lane_is_not_folded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A shift by one row against a shift by two: at one row both are the padding value.
    ref, other = _func(f"%x: {ROWS}", ROWS, _shift(1)), _func(f"%x: {ROWS}", ROWS, _shift(2))
    stage = _stage(ref, other, ("%x",))
    assert lanes.fold_lanes(stage)[1] == [W]  # the columns, which nothing pads, fold
    assert lanes._fold(stage, N, 0) is None
    assert _prove(stage).verdict == "not-equivalent"
    (tmp_path / "r.mlir").write_text(ref)
    (tmp_path / "o.mlir").write_text(other)
    v = tv_mlir.verify(str(tmp_path / "r.mlir"), str(tmp_path / "o.mlir"), cache=False, shrink=False)
    assert v.verdict == "not-equivalent" and v.counterexample is not None and v.counterexample.confirmed
    monkeypatch.setattr(lanes, "_operand_roles", _ignoring_pads(lanes._operand_roles))
    assert lanes.fold_lanes(stage)[1] == [N, W]
    assert _prove(stage).verdict == "equivalent"


def test_shape_lanes_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = _func(f"%x: {ROWS}", ROWS, HALVES + f"    %out = stablehlo.concatenate %b, %a, dim = 1 : ({HALF}, {HALF}) -> {ROWS}")
    stage = _stage(ref, ref, ("%x",))
    assert lanes.fold_lanes(stage)[1] == [N]
    monkeypatch.setattr(lanes, "SHAPE_LANES", False)
    assert lanes.fold_lanes(stage)[1] == []
