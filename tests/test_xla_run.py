"""Tests for tv_mlir.execute.xla: StableHLO modules executed on XLA's CPU backend."""

from __future__ import annotations

import os
import sys

# The SPMD tests need 8 host devices, and XLA reads this flag only when jax
# initialises; if another test module imported jax first they are skipped.
if "jax" not in sys.modules:
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count=8".strip()

import ml_dtypes
import numpy as np
import pytest

from tv_mlir.errors import ParseError
from tv_mlir.execute.xla import XlaRunError, XlaRunner

ADD = """
module @add attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %a, %b : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
"""

DOT_GENERAL = """
module @bmm {
  func.func public @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
    %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1]
        : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    return %0 : tensor<2x3x5xf32>
  }
}
"""

REDUCE = """
module @rsum {
  func.func public @main(%a: tensor<4x6xf32>) -> tensor<6xf32> {
    %init = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %init) applies stablehlo.add across dimensions = [0]
        : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    return %0 : tensor<6xf32>
  }
}
"""

# Named @entry (not @main) on purpose: XLA wants @main, the runner renames.
INT32 = """
module @ints {
  func.func public @entry(%a: tensor<5xi32>, %b: tensor<5xi32>) -> (tensor<5xi32>, tensor<5xi32>) {
    %0 = stablehlo.multiply %a, %b : tensor<5xi32>
    %1 = stablehlo.remainder %a, %b : tensor<5xi32>
    return %0, %1 : tensor<5xi32>, tensor<5xi32>
  }
}
"""

COMPARE = """
module @cmp {
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xi1> {
    %0 = stablehlo.compare GT, %a, %b, FLOAT : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %1 = stablehlo.and %0, %m : tensor<4xi1>
    return %1 : tensor<4xi1>
  }
}
"""

CASTS = """
module @casts {
  func.func public @main(%a: tensor<3xf32>, %b: tensor<3xbf16>) -> (tensor<3xf32>, tensor<3xbf16>) {
    %0 = stablehlo.multiply %a, %a : tensor<3xf32>
    %1 = stablehlo.add %b, %b : tensor<3xbf16>
    return %0, %1 : tensor<3xf32>, tensor<3xbf16>
  }
}
"""

# A program that is already per-device: each partition reduces its own data.
PER_DEVICE = """
module @per_device attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<ui32>) {
    %id = stablehlo.partition_id : tensor<ui32>
    %0 = "stablehlo.all_reduce"(%a) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> ({
      ^bb0(%x: tensor<f32>, %y: tensor<f32>):
        %s = stablehlo.add %x, %y : tensor<f32>
        stablehlo.return %s : tensor<f32>
      }) : (tensor<4xf32>) -> tensor<4xf32>
    return %0, %id : tensor<4xf32>, tensor<ui32>
  }
}
"""


@pytest.fixture(scope="module")
def runner() -> XlaRunner:
    return XlaRunner()


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_add(runner: XlaRunner) -> None:
    a, b = _rng().standard_normal((2, 2, 3))
    (out,) = runner.run(ADD, [a, b])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, a + b, rtol=1e-6)


def test_dot_general(runner: XlaRunner) -> None:
    rng = _rng()
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    (out,) = runner.run(DOT_GENERAL, [a, b])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)


def test_reduce(runner: XlaRunner) -> None:
    a = _rng().standard_normal((4, 6))
    (out,) = runner.run(REDUCE, [a])
    np.testing.assert_allclose(out, a.sum(axis=0), rtol=1e-5, atol=1e-6)


def test_int32_wraps_and_renamed_entry(runner: XlaRunner) -> None:
    a = np.array([2**30, -7, 7, 100, -2**31], dtype=np.int64)
    b = np.array([4, 2, -2, 7, 3], dtype=np.int64)
    prod, rem = runner.run(INT32, [a, b])
    assert prod.dtype == rem.dtype == np.int32
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(prod, a32 * b32)
    np.testing.assert_array_equal(rem, np.fmod(a32, b32))  # C-style, sign of dividend


def test_i1_compare(runner: XlaRunner) -> None:
    a = np.array([1.0, -1.0, 3.0, 0.5])
    b = np.array([0.0, 0.0, 3.0, 0.0])
    mask = np.array([1, 1, 1, 0])  # int64 -> i1
    (out,) = runner.run(COMPARE, [a, b, mask])
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, (a > b) & mask.astype(bool))


def test_float64_inputs_cast_to_f32_and_bf16(runner: XlaRunner) -> None:
    x = np.array([1.1, 2.5, 3.0e5])
    sq, doubled = runner.run(CASTS, [x, x])
    assert sq.dtype == np.float32 and doubled.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(sq, np.square(x.astype(np.float32)), rtol=1e-6)
    expected = x.astype(ml_dtypes.bfloat16) * 2
    np.testing.assert_array_equal(doubled.astype(np.float64), expected.astype(np.float64))


def test_jax_export_with_debug_info_and_private_calls(runner: XlaRunner) -> None:
    import jax
    import jax.numpy as jnp

    def f(x, y):
        return jnp.where(x > 0, jax.nn.relu(x) * y, jnp.sin(y)).sum(axis=0)

    rng = _rng()
    x = rng.standard_normal((3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 4)).astype(np.float32)
    text = jax.jit(f).lower(x, y).as_text(debug_info=True)
    assert "loc(" in text and "func.func private" in text and "call @" in text
    (out,) = runner.run(text, [x, y])
    expected = np.where(x > 0, np.maximum(x, 0) * y, np.sin(y)).sum(axis=0)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_bytecode_module(runner: XlaRunner) -> None:
    import jax
    from jax._src.interpreters import mlir as jax_mlir

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bytecode = jax_mlir.module_to_bytecode(
        jax.jit(lambda v: v * 2 + 1).lower(x).compiler_ir("stablehlo"))
    assert bytecode[:4] == b"ML\xefR"
    (out,) = runner.run(bytecode, [x])
    np.testing.assert_array_equal(out, x * 2 + 1)


def test_cache_reuses_executable(runner: XlaRunner) -> None:
    runner.run(ADD, [np.zeros((2, 3)), np.ones((2, 3))])
    compiled = runner._cache[(ADD, "single")]
    runner.run(ADD, [np.ones((2, 3)), np.ones((2, 3))])
    assert runner._cache[(ADD, "single")] is compiled


@pytest.mark.parametrize("bad", [
    "module { func.func @main( }",
    "this is not mlir",
    # Parses, but XLA has no such custom call.
    """module { func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {
         %0 = stablehlo.custom_call @no_such_target(%a) : (tensor<3xf32>) -> tensor<3xf32>
         return %0 : tensor<3xf32> } }""",
])
def test_bad_module_raises(runner: XlaRunner, bad: str) -> None:
    with pytest.raises(XlaRunError) as info:
        runner.run(bad, [np.zeros(3)])
    message = str(info.value)
    assert message and "\n" not in message and "Traceback" not in message


# A private @main beside one public function: the public one is the entry, for the verifier
# as for XLA (which would otherwise drop the private @main and find no main at all).
PRIVATE_MAIN = """
module @m {
  func.func private @main(%a: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.add %a, %a : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
  func.func public @square_plus_double(%a: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.multiply %a, %a : tensor<3xf32>
    %1 = func.call @main(%a) : (tensor<3xf32>) -> tensor<3xf32>
    %2 = stablehlo.add %0, %1 : tensor<3xf32>
    return %2 : tensor<3xf32>
  }
}
"""


def test_one_entry_rule_private_main(runner: XlaRunner) -> None:
    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter
    from tv_mlir.frontend.read import load_module, np_dtype

    module = load_module(PRIVATE_MAIN)
    assert module.entry == "square_plus_double"
    x = np.array([1.0, -2.0, 3.0])
    (xla_out,) = runner.run(PRIVATE_MAIN, [x])
    (ours,) = Interpreter(module, NumericAlgebra()).run([x])
    np.testing.assert_allclose(xla_out, x * x + 2 * x)
    np.testing.assert_allclose(np.asarray(ours, dtype=np.float64), x * x + 2 * x)
    assert xla_out.dtype == np_dtype("f32")
    two_public = PRIVATE_MAIN.replace("func.func private @main", "func.func public @helper") \
        .replace("@main(%a)", "@helper(%a)")
    with pytest.raises(ParseError, match="2 public functions"):
        load_module(two_public)
    with pytest.raises(XlaRunError, match="2 public functions"):
        runner.run(two_public, [x])


def test_one_dtype_table(runner: XlaRunner) -> None:
    from tv_mlir.frontend.read import NP_DTYPES

    text = """module { func.func public @main(%a: tensor<2xbf16>, %b: tensor<2xui8>) -> (tensor<2xbf16>, tensor<2xui8>) {
      return %a, %b : tensor<2xbf16>, tensor<2xui8> } }"""
    a, b = runner.run(text, [np.array([1.5, -2.0]), np.array([3, 255])])
    assert a.dtype == NP_DTYPES["bf16"] == ml_dtypes.bfloat16 and b.dtype == NP_DTYPES["ui8"]
    with pytest.raises(XlaRunError, match="parameter 0: unsupported element type f8E4M3"):
        runner.run(text.replace("bf16", "f8E4M3"), [np.zeros(2), np.zeros(2)])


def test_wrong_inputs_raise(runner: XlaRunner) -> None:
    with pytest.raises(XlaRunError, match="takes 2"):
        runner.run(ADD, [np.zeros((2, 3))])
    with pytest.raises(XlaRunError, match="shape"):
        runner.run(ADD, [np.zeros((3, 2)), np.zeros((2, 3))])


def _need_devices(n: int) -> None:
    import jax

    # conftest sets XLA_FLAGS before jax is imported, so the devices must be there.
    assert jax.device_count("cpu") >= n, f"needs {n} CPU devices (XLA_FLAGS set after jax was imported)"


def test_spmd_per_device_program(runner: XlaRunner) -> None:
    _need_devices(8)
    inputs = [[np.arange(4.0) + 10 * d] for d in range(8)]
    outs = runner.run_spmd(PER_DEVICE, inputs, per_device_program=True)
    assert len(outs) == 8
    for d, (total, pid) in enumerate(outs):
        group = range(0, 4) if d < 4 else range(4, 8)
        np.testing.assert_allclose(total, sum(inputs[g][0] for g in group))
        assert int(pid) == d


def test_spmd_shard_map_export(runner: XlaRunner) -> None:
    _need_devices(8)
    import jax
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    def f(x, w):
        return jax.shard_map(lambda x, w: jax.lax.psum(x @ w, "tp"), mesh=mesh,
                             in_specs=(P("dp", "tp"), P("tp", None)),
                             out_specs=P("dp", None), check_vma=False)(x, w)

    rng = _rng()
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 3)).astype(np.float32)
    text = jax.jit(f).lower(x, w).as_text()
    # Device d = dp * 4 + tp holds x[dp rows, tp cols] and w[tp rows].
    shards = [[x[2 * (d // 4):2 * (d // 4) + 2, 2 * (d % 4):2 * (d % 4) + 2],
               w[2 * (d % 4):2 * (d % 4) + 2]] for d in range(8)]
    outs = runner.run_spmd(text, shards)
    got = np.concatenate([outs[0][0], outs[4][0]])
    np.testing.assert_allclose(got, x @ w, rtol=1e-5, atol=1e-5)
    with pytest.raises(XlaRunError, match="shard shape"):
        runner.run_spmd(text, [[x, w]] * 8)
