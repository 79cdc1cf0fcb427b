"""Red-team batch 11 (docs/stages.md, "Red team 11"): pairs aimed at the proof mechanisms of
the last two sessions (stage lanes along batching dims, the same-program rule, structural
sharing across the two programs, whole runs per case, solver restarts). `bits_types` is a
wrong `equivalent` found here (with the sweep off): SharedValues keyed an op without its
operands' types.

Each pair is a reference, a bug twin and, where sensible, a correct twin, written as
StableHLO text (the attacks are on attributes and device counts that jax does not let one
choose). Every single-device twin is run on XLA here at its own sizes, on random inputs
and on the inputs the bug hides behind: the generator asserts that the bug twin differs
from the reference there and the correct twin agrees. The per-device pair (`device_id`)
runs on two devices, which `mlir_run` does not do: its bug is confirmed by the tool's own
XLA replay of the counterexample (tests/test_redteam11.py asserts it).

    .venv/bin/python testdata/gen_redteam11.py

writes testdata/redteam11/<pair>.{ref,ok,bug}.mlir and manifest.json."""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mlir_run  # noqa: E402

OUT = Path(__file__).resolve().parent / "redteam11"
# A value random runs do not draw: the bugs below hide behind `x == HIDE`.
HIDE = 37.25


@dataclass
class Pair:
    name: str
    why: str
    ref: str
    bug: str
    ok: str | None = None
    # Inputs (besides random ones) on which the bug twin must differ on XLA; None: the
    # pair is not single-device and is confirmed by the tool's replay.
    witness: Callable[[], list[np.ndarray]] | None = None
    assume: dict[str, tuple[int, int]] = field(default_factory=dict)


def _module(args: str, result: str, body: str, partitions: int = 1) -> str:
    return (f"module @m attributes {{mhlo.num_partitions = {partitions} : i32, mhlo.num_replicas = 1 : i32}} {{\n"
            f"  func.func @main({args}) -> {result} {{\n{body}\n    return %out : {result.split(' {')[0].strip('()')}\n"
            "  }\n}\n")


def _device_id(per_device: bool, plus_id: bool) -> str:
    """select(x == HIDE, x + partition_id, x): on one device (the reference) partition_id is
    0 and this is x; a program on two devices whose blocks add their own id differs at
    device 1's elements equal to HIDE (the bug). The correct twin adds nothing."""
    n = 4 if per_device else 8
    t = f"tensor<{n}xf32>"
    shard = ' {mhlo.sharding = "{devices=[2]<=[2]}"}' if per_device else ""
    add = ("    %p = stablehlo.partition_id : tensor<ui32>\n"
           "    %f = stablehlo.convert %p : (tensor<ui32>) -> tensor<f32>\n")
    if not plus_id:
        add = ("    %p = stablehlo.constant dense<0> : tensor<ui32>\n"
               "    %f = stablehlo.convert %p : (tensor<ui32>) -> tensor<f32>\n")
    body = (add + f"    %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> {t}\n"
            f"    %c = stablehlo.constant dense<{HIDE}> : {t}\n"
            f"    %e = stablehlo.compare EQ, %x, %c, FLOAT : ({t}, {t}) -> tensor<{n}xi1>\n"
            f"    %s = stablehlo.add %x, %b : {t}\n"
            f"    %out = stablehlo.select %e, %s, %x : tensor<{n}xi1>, {t}")
    result = f"({t}{shard})" if per_device else t
    return _module(f"%x: {t}{shard}", result, body, partitions=2 if per_device else 1)


def _scatter(body: str, hide: bool = False) -> str:
    """t, then t[ids[b], :] = body(t[ids[b], :], u[b, :]): the update computation's argument
    order (current value first, update second) is the op's meaning."""
    v, b, h = 6, 5, 3
    table, ids, rows = f"tensor<{v}x{h}xf32>", f"tensor<{b}x1xi32>", f"tensor<{b}x{h}xf32>"
    text = ('    %out = "stablehlo.scatter"(%t, %ids, %u) ({\n'
            "    ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
            f"      %s = {body} : tensor<f32>\n"
            "      stablehlo.return %s : tensor<f32>\n"
            "    }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], "
            "inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, "
            "indices_are_sorted = false, "
            f"unique_indices = false}} : ({table}, {ids}, {rows}) -> {table}")
    return _module(f"%t: {table}, %ids: {ids}, %u: {rows}", table, text)


def _reduce(body: str) -> str:
    """A reduce whose body is not one of the simple reducers (its argument order matters):
    SharedValues does not key it at all; the pair checks the interpreter keeps it apart."""
    text = ("    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            "    %out = stablehlo.reduce(%x init: %z) across dimensions = [0] :"
            " (tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
            "      reducer(%a: tensor<f32>, %b: tensor<f32>) {\n"
            f"        %s = {body} : tensor<f32>\n"
            "        stablehlo.return %s : tensor<f32>\n"
            "      }")
    return _module("%x: tensor<4xf32>", "tensor<f32>", text)


def _gather_ivd0(shift: int) -> str:
    """A lookup whose index vector dim is the indices' first (ids are [1, B]): rows
    table[ids[0, b] + shift]. The lanes rule takes the batch dim b at the indices' dim 1,
    not 0 (`index_dims` skips index_vector_dim): a bug twin reading the next row."""
    v, b, h = 8, 64, 64
    table, ids, rows = f"tensor<{v}x{h}xf32>", f"tensor<1x{b}xi32>", f"tensor<{b}x{h}xf32>"
    pre = (f"    %one = stablehlo.constant dense<{shift}> : {ids}\n"
           f"    %j = stablehlo.add %ids, %one : {ids}\n") if shift else f"    %j = stablehlo.add %ids, %ids0 : {ids}\n"
    if not shift:
        pre = f"    %ids0 = stablehlo.constant dense<0> : {ids}\n" + pre
    text = (pre + '    %out = "stablehlo.gather"(%t, %j) {dimension_numbers = #stablehlo.gather<offset_dims = [1], '
            "collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 0>, "
            f"slice_sizes = array<i64: 1, {h}>, indices_are_sorted = false}} : ({table}, {ids}) -> {rows}")
    return _module(f"%t: {table}, %ids: {ids}", rows, text)


def _bits(through_bf16: bool) -> str:
    """select(x - w == HIDE, bits of x, 0) for an f16 x: its own bits (the reference) or
    the bits of its bf16 convert (the bug: 0x4221 against 0x5108 at x = 40.25). Over the
    reals the convert is the identity, and the tool's convert returns its operand's very
    array, so the two bitcasts met one array at two types."""
    t, b, i = "tensor<4xf16>", "tensor<4xbf16>", "tensor<4xi16>"
    bits = (f"    %y = stablehlo.bitcast_convert %x : ({t}) -> {i}\n" if not through_bf16 else
            f"    %v = stablehlo.convert %x : ({t}) -> {b}\n"
            f"    %y = stablehlo.bitcast_convert %v : ({b}) -> {i}\n")
    body = (f"    %c = stablehlo.constant dense<{HIDE}> : {t}\n"
            f"    %z = stablehlo.constant dense<0> : {i}\n"
            f"    %d = stablehlo.subtract %x, %w : {t}\n"
            f"    %e = stablehlo.compare EQ, %d, %c, FLOAT : ({t}, {t}) -> tensor<4xi1>\n"
            + bits + f"    %out = stablehlo.select %e, %y, %z : tensor<4xi1>, {i}")
    return _module(f"%x: {t}, %w: {t}", i, body)


def _rounded(format_: str | None) -> str:
    """x + x, or the same of x rounded by reduce_precision to `format_` (e5m2: 0.1 -> 0.09375,
    1e6 -> inf on XLA). Over the reals the rounding is the identity, as a convert to a
    narrower type is; a convert is reported as a precision finding, this was not."""
    t = "tensor<4xf32>"
    pre = f"    %r = stablehlo.reduce_precision %x, format = {format_} : {t}\n" if format_ else ""
    v = "%r" if format_ else "%x"
    return _module(f"%x: {t}", t, pre + f"    %out = stablehlo.add {v}, {v} : {t}")


PAIRS = [
    Pair("device_id", "SharedValues.key: a reference's partition_id (one device) shared with a program on two",
         _device_id(False, True), _device_id(True, True), _device_id(True, False)),
    Pair("bits_types", "SharedValues.key: one array read at two types (an f16 and its bf16 convert) by bitcasts",
         _bits(False), _bits(True),
         witness=lambda: [np.array([40.25, 1, 2, 3], np.float16), np.array([3, 0, 0, 0], np.float16)]),
    Pair("reduce_precision", "reduce_precision to e5m2 read as the identity, with no precision finding",
         _rounded(None), _rounded("e5m2"), witness=lambda: [np.array([0.1, 1e6, 3.3, -7.7], np.float32)]),
    Pair("scatter_order", "a scatter's update computation with its arguments swapped (current - update)",
         _scatter("stablehlo.subtract %a, %b"), _scatter("stablehlo.subtract %b, %a"),
         witness=lambda: [np.arange(18, dtype=np.float32).reshape(6, 3), np.array([[0], [2], [2], [5], [1]], np.int32),
                          np.ones((5, 3), np.float32)]),
    Pair("reduce_order", "a reduce body acc - x against x - acc (no simple reducer: never shared)",
         _reduce("stablehlo.subtract %a, %b"), _reduce("stablehlo.subtract %b, %a"),
         witness=lambda: [np.array([1, 2, 3, 4], np.float32)]),
    Pair("gather_ivd0", "a lookup with index_vector_dim = 0 (lanes at the indices' dim 1) against the next row",
         _gather_ivd0(0), _gather_ivd0(1),
         witness=lambda: [np.arange(8 * 64, dtype=np.float32).reshape(8, 64), np.zeros((1, 64), np.int32)]),
]


def _random_inputs(text: str, rng: np.random.Generator) -> list[np.ndarray]:
    names, types = mlir_run.main_signature(mlir_run.parse(text))
    out = []
    for t in types:
        shape, dtype = mlir_run.parse_tensor_type(t)
        if np.issubdtype(dtype, np.integer):
            out.append(rng.integers(0, 5, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def _confirm(p: Pair) -> None:
    """The bug twin differs from the reference on XLA where it is meant to; the correct twin
    agrees on random inputs."""
    if p.witness is None:
        return
    rng = np.random.default_rng(11)
    ref = mlir_run.run_xla(p.ref, p.witness())
    bug = mlir_run.run_xla(p.bug, p.witness())
    assert any(not np.array_equal(a, b) for a, b in zip(ref, bug)), f"{p.name}: the bug twin agrees on XLA"
    if p.ok is not None:
        for _ in range(3):
            xs = _random_inputs(p.ref, rng)
            assert all(np.allclose(a, b) for a, b in zip(mlir_run.run_xla(p.ref, xs), mlir_run.run_xla(p.ok, xs)))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    manifest = {}
    for p in PAIRS:
        for parse in (p.ref, p.bug) + ((p.ok,) if p.ok else ()):
            mlir_run.parse(parse)
        _confirm(p)
        for kind, text in (("ref", p.ref), ("bug", p.bug), ("ok", p.ok)):
            if text is not None:
                (OUT / f"{p.name}.{kind}.mlir").write_text(text)
        manifest[p.name] = {"why": p.why, "ok": p.ok is not None, "xla_confirmed": p.witness is not None,
                            "assume": p.assume}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(PAIRS)} pairs written to {OUT}")


if __name__ == "__main__":
    main()
