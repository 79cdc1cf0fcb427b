"""Lanes (stages/lanes.py, docs/stages.md "Lanes"): a stage whose ops keep the positions of
a dim apart is proved at one position of it, and a stage whose ops move, mix or tell
positions apart is not folded, so that its bug is not folded away.

The stages are written by hand as extract.build makes them: the reference a global
program, the other a per-device program of a 2-device mesh with input and output
layouts. MIN_ELEMENTS is set to 0 here (these stages are small)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tv_mlir.api import prepare
from tv_mlir.ir import Mesh, Op, Sharding, TensorType
from tv_mlir.options import Options
from tv_mlir.stages import lanes
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.extract import StagePair

OPTIONS = Options(cache=False)
MESH = Mesh((("tp", 2),))
L = 6  # the stacked dim: layers
WHOLE = Sharding(MESH, ((), ()))  # a [L, 4] value whole on both devices
COLS = Sharding(MESH, ((), ("tp",)))  # split by columns: each device holds every layer
ROWS = Sharding(MESH, (("tp",), ()))  # split by layers
PARTS = Sharding(MESH, (("tp",), (), ()))  # a partial slot's input [2, L, 4]: one group's part per device
PARTIAL = Sharding(MESH, ((), ()), ("tp",))  # a [L, 4] value held as partial sums over tp


@pytest.fixture(autouse=True)
def _small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lanes, "MIN_ELEMENTS", 0)


def _stage(ref: str, other: str, args: tuple[Sharding, ...], out: Sharding) -> StagePair:
    r = prepare(ref, OPTIONS)
    o = prepare(f"module attributes {{mhlo.num_partitions = 2 : i32}} {{\n{other}\n}}", OPTIONS)
    o = replace(o, per_device=True, attrs={**o.attrs, "mhlo.num_partitions": 2}, arg_shardings=args,
                result_shardings=(out,))
    return StagePair("stage", r, o, len(r.main.body.ops), len(o.main.body.ops), (),
                     tuple(f"%in{k}" for k in range(len(args))))


def _func(args: str, body: str, ret: str) -> str:
    return f"func.func @main({args}) -> {ret} {{\n{body}\n    return %out : {ret}\n}}"


def _verdict(stage: StagePair) -> str:
    return str(stages_run.prove_stage(stage.ref, stage.other, stages_run.stage_options(OPTIONS))["verdict"])


def _prove(stage: StagePair) -> stages_run.StageRecord:
    records, _ = stages_run._prove_stages([stage], OPTIONS, finite={f"%in{k}" for k in range(3)})
    return records[0]


SUM_PARTS = ("    %zero = stablehlo.constant dense<0.0> : tensor<f32>\n"
             "    %{v} = stablehlo.reduce(%{v}_parts init: %zero) applies stablehlo.add across dimensions = [0] : "
             f"(tensor<2x{L}x4xf32>, tensor<f32>) -> tensor<{L}x4xf32>\n")
ALL_REDUCE = """    %out = "stablehlo.all_reduce"(%s) ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %t = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %t : tensor<f32>
  }) {channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> :
      tensor<1x2xi64>, use_global_device_ids} : (tensor<%T>) -> tensor<%T>"""


def _accumulators(layers: int = L) -> StagePair:
    """The 126-layer stack's add_any: two [L, 4] accumulators held as partial sums over tp
    (partial slots), added; the output partial sums."""
    t = f"tensor<{layers}x4xf32>"
    ref = _func(f"%a_parts: tensor<2x{layers}x4xf32>, %b_parts: tensor<2x{layers}x4xf32>",
                (SUM_PARTS.format(v="a") + SUM_PARTS.format(v="b").replace("%zero = ", "%zero2 = ")
                 .replace("init: %zero)", "init: %zero2)")).replace(f"{L}x4", f"{layers}x4")
                + f"    %out = stablehlo.add %a, %b : {t}", t)
    other = _func(f"%a_part: tensor<1x{layers}x4xf32>, %b_part: tensor<1x{layers}x4xf32>",
                  f"    %a = stablehlo.reshape %a_part : (tensor<1x{layers}x4xf32>) -> {t}\n"
                  f"    %b = stablehlo.reshape %b_part : (tensor<1x{layers}x4xf32>) -> {t}\n"
                  f"    %out = stablehlo.add %a, %b : {t}", t)
    return _stage(ref, other, (PARTS, PARTS), PARTIAL)


def _final_psum(groups: str = "[[0, 1]]") -> StagePair:
    """The stack's last stage: a partial slot [L, 4] all-reduced (the dp psum of a stacked
    gradient), scaled by a constant, output whole on every device."""
    t = f"tensor<{L}x4xf32>"
    scale = f"    %c = stablehlo.constant dense<0.5> : {t}\n"
    ref = _func(f"%a_parts: tensor<2x{L}x4xf32>", SUM_PARTS.format(v="a") + scale
                + f"    %out = stablehlo.multiply %a, %c : {t}", t)
    other = _func(f"%a_part: tensor<1x{L}x4xf32>",
                  f"    %a = stablehlo.reshape %a_part : (tensor<1x{L}x4xf32>) -> {t}\n" + scale
                  + f"    %m = stablehlo.multiply %a, %c : {t}\n"
                  + ALL_REDUCE.replace("%s", "%m").replace("%T", f"{L}x4xf32").replace("[[0, 1]]", groups)
                  .replace("tensor<1x2xi64>", f"tensor<{groups.count('[') - 1}x{2 // (groups.count('[') - 1)}xi64>"),
                  t)
    return _stage(ref, other, (PARTS,), WHOLE)


def _unary(ref_body: str, other_body: str, layout: Sharding = COLS, ref_const: str = "") -> StagePair:
    """out = f(x) for x [L, 4], laid out by `layout` on the other side."""
    t = f"tensor<{L}x4xf32>"
    local = layout.local_type(TensorType((L, 4), "f32"))
    lt = f"tensor<{'x'.join(str(d) for d in local.shape)}xf32>"
    return _stage(_func(f"%x: {t}", ref_body.replace("%T", t), t),
                  _func(f"%x: {lt}", other_body.replace("%T", lt), lt), (layout,), layout)


def test_accumulators_added_are_proved_at_one_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _accumulators()
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes and sizes[0] == L
    assert all(t.shape[0] == 2 and t.shape[1] == 1 for t in folded.ref.main.arg_types)
    assert [t.shape[0] for t in folded.ref.main.result_types] == [1]
    record = _prove(stage)
    assert (record.verdict, record.lanes) == ("equivalent", sizes)
    monkeypatch.setattr(lanes, "FOLD_LANES", False)  # the switch: same verdict, the stage as it is
    record = _prove(stage)
    assert (record.verdict, record.lanes) == ("equivalent", [])


def test_stages_that_differ_only_in_a_lane_size_share_one_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same accumulation over 6 and over 3 layers (the second witness grows a class
    only the lanes hold): one problem at one position, proved once."""
    stages = [_accumulators(L), _accumulators(3)]
    records, _ = stages_run._prove_stages(stages, OPTIONS, finite=set())
    assert [(r.verdict, r.how) for r in records] == [("equivalent", "proved"), ("equivalent", "reused")]
    monkeypatch.setattr(lanes, "FOLD_LANES", False)
    records, _ = stages_run._prove_stages(stages, OPTIONS, finite=set())
    assert [(r.verdict, r.how) for r in records] == [("equivalent", "proved")] * 2


def test_the_final_psum_is_proved_at_one_layer() -> None:
    stage = _final_psum()
    folded, sizes = lanes.fold_lanes(stage)
    assert L in sizes and folded.other.main.result_types[0].shape[0] == 1
    assert _verdict(folded) == "equivalent" and _verdict(stage) == "equivalent"


def test_a_psum_over_no_group_stays_not_equivalent() -> None:
    """Each device keeps its own part (groups of one): folded or not, not-equivalent."""
    stage = _final_psum("[[0], [1]]")
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes
    assert _verdict(stage) == "not-equivalent" and _verdict(folded) == "not-equivalent"


def test_a_lane_split_over_the_devices_is_not_folded() -> None:
    """Each device holds some of the layers: its block does not hold every position."""
    stage = _unary("    %out = stablehlo.negate %x : %T", "    %out = stablehlo.negate %x : %T", ROWS)
    _, sizes = lanes.fold_lanes(stage)
    assert L not in sizes


def _reversed() -> StagePair:
    """The other program reverses the layers (a bug that moves positions along the lane)."""
    return _unary("    %out = stablehlo.negate %x : %T",
                  "    %r = stablehlo.reverse %x, dims = [0] : %T\n    %out = stablehlo.negate %r : %T")


def _layer_constant() -> StagePair:
    """The reference adds 1 to the last layer only (a constant that differs along the
    lane); the other adds 0 everywhere."""
    last = np.zeros((L, 4), np.float32)
    last[-1] = 1.0
    dense = "[" + ", ".join("[" + ", ".join(f"{v:.1f}" for v in row) + "]" for row in last) + "]"
    return _unary(f"    %c = stablehlo.constant dense<{dense}> : %T\n    %out = stablehlo.add %x, %c : %T",
                  "    %c = stablehlo.constant dense<0.0> : %T\n    %out = stablehlo.add %x, %c : %T")


def test_an_op_that_moves_positions_along_the_lane_is_not_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not-equivalent, and not folded at L (reverse mixes the lane's positions). A rule that
    took reverse as position-keeping folds it to one layer, where reverse is the identity:
    the wrong `equivalent` the op list prevents."""
    stage = _reversed()
    folded, sizes = lanes.fold_lanes(stage)
    assert L not in sizes
    assert _prove(stage).verdict == "not-equivalent"
    real = lanes._operand_roles

    def loose(op: Op, d: int, types: list, n: int) -> list:  # type: ignore[type-arg]
        return [d] if op.name == "stablehlo.reverse" else real(op, d, types, n)

    monkeypatch.setattr(lanes, "_operand_roles", loose)
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes and sizes[0] == L
    assert _verdict(folded) == "equivalent"


def test_a_constant_that_differs_along_the_lane_is_not_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not-equivalent at the last layer only. A rule that took any constant's first
    position folds the difference away."""
    stage = _layer_constant()
    _, sizes = lanes.fold_lanes(stage)
    assert L not in sizes
    assert _prove(stage).verdict == "not-equivalent"
    monkeypatch.setattr(lanes, "_one_lane", lambda value, t, d: np.take(value, [0], axis=d).copy()
                        if value.shape == t.shape else value)
    folded, sizes = lanes.fold_lanes(stage)
    assert sizes and sizes[0] == L
    assert _verdict(folded) == "equivalent"


def _offset(k_ref: int, k_other: int) -> StagePair:
    """acc + pad(g, row k): one layer's gradient into the [L, 4] accumulator; the other
    program pads at k_other."""
    t, g = f"tensor<{L}x4xf32>", "tensor<1x4xf32>"

    def body(k: int) -> str:
        return ("    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
                f"    %q = stablehlo.pad %g, %z, low = [{k}, 0], high = [{L - 1 - k}, 0], interior = [0, 0] : "
                f"({g}, tensor<f32>) -> {t}\n"
                f"    %out = stablehlo.add %acc, %q : {t}")

    return _stage(_func(f"%acc: {t}, %g: {g}", body(k_ref), t), _func(f"%acc: {t}, %g: {g}", body(k_other), t),
                  (WHOLE, Sharding(MESH, ((), ()))), WHOLE)


def test_an_off_by_one_layer_offset_is_found() -> None:
    """The accumulation at layer 3 against layer 4: the pad moves positions along the lane,
    so the stage is not folded at L, and it is not-equivalent; the same offset proves."""
    stage = _offset(3, 4)
    _, sizes = lanes.fold_lanes(stage)
    assert L not in sizes
    assert _prove(stage).verdict == "not-equivalent"
    assert _prove(_offset(3, 3)).verdict == "equivalent"
