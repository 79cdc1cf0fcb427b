"""Devices whose arguments hold the same terms compute an op once (`spmd.step`), and their
equal results are observed once (`Interpreter._observe`): an all-reduced sum is the same
value on every device of its group, and everything computed from it alone is too. The
sharing must never join devices whose terms differ (a partition id, another group's sum,
another IEEE class): the results are held to XLA in the own-term algebra."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
from test_collectives import CHANNEL, GROUPS_4, N, _local_inputs, _module, _reducer

from conftest import assert_close, fast_symbolic_values, prepared
from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FF, FIN, NAN, FastAlgebra
from tv_mlir.execute.interp import Interpreter

# Device d's result: (sum over d's group of 4) squared, plus d itself. The square is the same
# on the four devices of a group; the partition id makes every device's sum its own.
TEXT = _module(["2x3xf32"], ["2x3xf32", "2x3xf32"], f"""
    %0 = "stablehlo.all_reduce"(%a0) <{{{CHANNEL}, replica_groups = {GROUPS_4}, use_global_device_ids}}> {_reducer("stablehlo.add")} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<2x3xf32>
    %2 = stablehlo.partition_id : tensor<ui32>
    %3 = stablehlo.convert %2 : (tensor<ui32>) -> tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %5 = stablehlo.add %1, %4 : tensor<2x3xf32>
    return %1, %5 : tensor<2x3xf32>, tensor<2x3xf32>""")


def test_shared_devices_match_xla(xla) -> None:
    module = prepared(TEXT)
    for seed in range(2):
        inputs = _local_inputs(["2x3xf32"], seed)
        per_device = [[np.split(inputs[0], N, axis=0)[d]] for d in range(N)]
        want_parts = xla.run_spmd(TEXT, per_device, per_device_program=True)
        want = [np.concatenate([want_parts[d][j] for d in range(N)], axis=0) for j in range(2)]
        for j, (g, w) in enumerate(zip(fast_symbolic_values(module, inputs), want)):
            assert_close(g, w, f"output {j} (own terms)")


def test_equal_devices_observed_once() -> None:
    """The observer sees the square once per group (two groups), and the sum with the
    partition id once per device."""
    module = prepared(TEXT)
    seen: dict[str, int] = {}

    def observer(op, results):
        base = op.results[0].split("@")[0]
        seen[(op.name, base)] = seen.get((op.name, base), 0) + 1
        return None

    alg = FastAlgebra()
    t = module.global_arg_types()[0]
    x, _ = alg.inputs("x", t.shape, Kind.FLOAT)
    outs = Interpreter(module, alg, observer=observer).run([x])
    counts = {name: n for (name, _), n in seen.items()}
    assert counts["stablehlo.all_reduce"] == 2
    assert counts["stablehlo.multiply"] == 2
    assert counts["stablehlo.add"] == N
    # Device 0 and 1 (one group) hold the same terms for the square, device 4 another's.
    sq = outs[0]
    assert all(sq[0, i] is sq[2, i] for i in range(3))
    assert not any(sq[0, i] is sq[8, i] for i in range(3))


def test_content_key_tells_elements_apart() -> None:
    alg = FastAlgebra()
    x, _ = alg.inputs("x", (2,), Kind.FLOAT)
    same = np.array([x[0], x[1]], dtype=object)
    assert alg.content_key(x) == alg.content_key(same)
    assert alg.content_key(x) != alg.content_key(x[::-1].copy())
    assert alg.content_key(x) != alg.content_key(x.reshape(1, 2))
    # The same value term of another IEEE class is another element.
    nan = np.array([FF(x[0].v, NAN), x[1]], dtype=object)
    assert x[0].k == FIN and alg.content_key(nan) != alg.content_key(x)
    # Folded Python values: True is not 1.
    assert alg.content_key(np.array([True], dtype=object)) != alg.content_key(np.array([1], dtype=object))
    # Elements the key cannot read (no own terms) give no key at all.
    assert alg.content_key(np.array([Fraction(1)], dtype=object)) is None
    assert alg.content_key(np.zeros(3)) is None
