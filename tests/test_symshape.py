"""Tests for tv_mlir.symshape: shape-polymorphic jax exports instantiated at concrete sizes
with jax's own shape refinement (fixtures: testdata/symbolic/, made by gen.py)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import TESTDATA
from tv_mlir.errors import Unsupported, UsageError
from tv_mlir.frontend.read import load_module
from tv_mlir.frontend.symshape import dynamic_dims, instantiate

SYMBOLIC = TESTDATA / "symbolic"


def read(name: str) -> bytes:
    return (SYMBOLIC / name).read_bytes()


def shapes(types) -> list[tuple[int, ...]]:
    return [tuple(t.shape) for t in types]


MANY_DIMS = b"""
module {
  func.func private @helper(%x: tensor<?xf32>) -> tensor<?xf32> {
    return %x : tensor<?xf32>
  }
  func.func public @main(%a: tensor<?x4x?xf32>, %b: tensor<3xf32>, %c: tensor<?xi32>) -> tensor<3xf32> {
    return %b : tensor<3xf32>
  }
}
"""

# The shape of the reshape comes from an argument's data: no size makes it static.
DATA_DEPENDENT = b"""
module {
  func.func @main(%x: tensor<?xf32>, %s: tensor<2xi32>) -> tensor<?x?xf32> {
    %0 = stablehlo.dynamic_reshape %x, %s : (tensor<?xf32>, tensor<2xi32>) -> tensor<?x?xf32>
    return %0 : tensor<?x?xf32>
  }
}
"""

# Hand-written shape computation without jax's wrapper: x + iota over the dynamic rows.
IOTA = b"""
module {
  func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    %0 = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %c = stablehlo.constant dense<4> : tensor<1xi32>
    %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
    %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %3 = stablehlo.dynamic_iota %2, dim = 0 : (tensor<2xi32>) -> tensor<?x4xf32>
    %4 = stablehlo.add %x, %3 : tensor<?x4xf32>
    return %4 : tensor<?x4xf32>
  }
}
"""


# ---------------------------------------------------------------------------
# dynamic_dims


@pytest.mark.parametrize("name", ["mlp.mlir", "mlp_twin.mlir", "mlp_bug.mlir", "mean.mlir", "pairs.mlir"])
def test_dynamic_dims_of_exports(name: str) -> None:
    assert dynamic_dims(read(name)) == [(0, 0)]


def test_dynamic_dims_every_position_of_main_only() -> None:
    assert dynamic_dims(MANY_DIMS) == [(0, 0), (0, 2), (2, 0)]


def test_dynamic_dims_static_module_has_none() -> None:
    text = instantiate(read("mean.mlir"), {(0, 0): 4}, "mean.mlir")
    assert dynamic_dims(text) == []


# ---------------------------------------------------------------------------
# instantiate: static shapes the frontend reads


@pytest.mark.parametrize("name,size,args,results", [
    ("mlp.mlir", 1, [(1, 8), (8, 4), (4, 2)], [(1, 2)]),
    ("mlp.mlir", 5, [(5, 8), (8, 4), (4, 2)], [(5, 2)]),
    ("mlp_twin.mlir", 3, [(3, 8), (8, 4), (4, 2)], [(3, 2)]),
    ("mlp_bug.mlir", 3, [(3, 8), (8, 4), (4, 2)], [(3, 2)]),
    ("mean.mlir", 2, [(2, 3)], [(3,)]),
    ("mean.mlir", 7, [(7, 3)], [(3,)]),
    ("pairs.mlir", 2, [(2,)], [(1,)]),
    ("pairs.mlir", 10, [(10,)], [(5,)]),
])
def test_instantiate_gives_static_module(name: str, size: int, args, results) -> None:
    text = instantiate(read(name), {(0, 0): size}, name)
    assert isinstance(text, bytes)
    assert b"tensor<?" not in text and b"x?x" not in text
    for dynamic_op in (b"get_dimension_size", b"dynamic_broadcast_in_dim", b"dynamic_reshape",
                       b"dynamic_iota", b"@shape_assertion"):
        assert dynamic_op not in text, dynamic_op
    assert b"loc(" in text  # debug locations kept
    assert b"stablehlo.convert %arg" not in text  # the entry conversions are folded away
    module = load_module(text, name)
    assert shapes(module.global_arg_types()) == args
    assert shapes(module.global_result_types()) == results


def test_instantiate_handwritten_dynamic_iota(xla) -> None:
    text = instantiate(IOTA, {(0, 0): 3}, "iota.mlir")
    module = load_module(text, "iota.mlir")
    assert shapes(module.global_arg_types()) == [(3, 4)]
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = xla.run(text, [x])
    np.testing.assert_allclose(got, x + np.arange(3, dtype=np.float32)[:, None])


# ---------------------------------------------------------------------------
# instantiate: the numbers follow the size


@pytest.mark.parametrize("size", [2, 7])
def test_mean_divisor_follows_size(xla, size: int) -> None:
    text = instantiate(read("mean.mlir"), {(0, 0): size}, "mean.mlir")
    x = np.random.default_rng(size).standard_normal((size, 3)).astype(np.float32)
    (got,) = xla.run(text, [x])
    np.testing.assert_allclose(got, x.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_pairs_on_xla(xla) -> None:
    text = instantiate(read("pairs.mlir"), {(0, 0): 6}, "pairs.mlir")
    x = np.arange(6, dtype=np.float32)
    (got,) = xla.run(text, [x])
    np.testing.assert_allclose(got, [1.0, 5.0, 9.0])


def test_mlp_twin_agrees_and_bug_differs_on_xla(xla) -> None:
    rng = np.random.default_rng(0)
    x, w1, w2 = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (8, 4), (4, 2)))
    want = np.maximum(x @ w1, 0) @ w2
    outs = {name: xla.run(instantiate(read(f"{name}.mlir"), {(0, 0): 4}, name), [x, w1, w2])[0]
            for name in ("mlp", "mlp_twin", "mlp_bug")}
    np.testing.assert_allclose(outs["mlp"], want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["mlp_twin"], want, rtol=1e-5, atol=1e-5)
    assert not np.allclose(outs["mlp_bug"], want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# instantiate: errors


@pytest.mark.parametrize("name,size,expected", [
    # jax asserts b >= 1 for every dimension variable
    ("mean.mlir", 0, "Expected value >= 1 for dimension variable 'b'"),
    # x: (2*k,) asserts an even size; refinement of the reshape would fail first
    ("pairs.mlir", 7, "Division had remainder 1 when computing the value of 'k'"),
    ("pairs.mlir", 0, "Expected value >= 1 for dimension variable 'k'"),
])
def test_failing_shape_assertion_is_usage_error(name: str, size: int, expected: str) -> None:
    with pytest.raises(UsageError) as info:
        instantiate(read(name), {(0, 0): size}, f"testdata/symbolic/{name}")
    line = info.value.one_line()
    assert line.startswith(f"testdata/symbolic/{name}: shape assertion failed")
    assert expected in line
    assert "\n" not in info.value.message
    assert "{0}" not in line  # the message's placeholders are filled in


def test_data_dependent_shape_is_unsupported() -> None:
    with pytest.raises(Unsupported) as info:
        instantiate(DATA_DEPENDENT, {(0, 0): 6}, "dd.mlir")
    assert info.value.op == "dynamic-shape"
    assert "dd.mlir" in info.value.message and "dynamic_reshape" in info.value.message
    assert info.value.loc == "dd.mlir:4:10"
    assert "\n" not in info.value.one_line()


@pytest.mark.parametrize("sizes,expected", [
    ({}, "no size given for argument 0 dim 0"),
    ({(0, 0): 3, (1, 0): 8}, "argument 1 dim 0 is not a dynamic dimension"),
    ({(0, 0): -1}, "size -1"),
])
def test_bad_sizes_are_usage_errors(sizes, expected: str) -> None:
    with pytest.raises(UsageError, match=expected):
        instantiate(read("mlp.mlir"), sizes, "mlp.mlir")
