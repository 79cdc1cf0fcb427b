"""Issue 15's ops inside sharded programs, end to end through tv_mlir.jax.check on XLA's
partitioned module: a strided convolution + max pool with the image height split over 4
devices (XLA exchanges halos with collective_permute; the shape of jax issue 16894's
strided sharded conv), and a tensor-parallel MLP with exact gelu (chlo.erfc, unknown before)
in jax's Shardy lowering.
A reference whose conv window is offset by one row is not-equivalent, with the difference
reproduced on XLA."""
from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax import lax  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from tv_mlir import jax as tj  # noqa: E402

MESH = jax.make_mesh((2, 4), ("dp", "sp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def S(*spec):
    return NamedSharding(MESH, P(*spec))


def _conv_pool(padding):
    def fn(x, w):
        y = lax.conv_general_dilated(x, w, (2, 1), padding, dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return lax.reduce_window(jnp.maximum(y, 0), -jnp.inf, lax.max, (1, 2, 1, 1), (1, 2, 1, 1), "VALID")
    return fn


X = jax.ShapeDtypeStruct((4, 16, 8, 3), jnp.float32)
W = jax.ShapeDtypeStruct((3, 3, 3, 4), jnp.float32)
# Batch over dp, image height over sp: the strided 3-row windows straddle the shards.
IN = (S("dp", "sp"), S())
SAME = ((0, 1), (1, 1))  # what "SAME" is for height 16, window 3, stride 2


def test_spatially_sharded_strided_conv_is_equivalent() -> None:
    text = tj.partitioned_text(_conv_pool(SAME), [X, W], in_shardings=IN, out_shardings=S("dp"))
    assert "stablehlo.convolution" in text and "stablehlo.reduce_window" in text
    assert "stablehlo.collective_permute" in text  # the halo exchange XLA adds
    v = tj.check(_conv_pool(SAME), X, W, in_shardings=IN, out_shardings=S("dp"))
    assert v.verdict == "equivalent", v.reason
    assert not v.unsupported


def test_conv_window_offset_by_a_row_is_not_equivalent() -> None:
    # The partitioned program pads (0, 1) rows; the reference (1, 0): same shapes, windows one
    # row apart.
    v = tj.check(_conv_pool(SAME), X, W, in_shardings=IN, out_shardings=S("dp"), reference=_conv_pool(((1, 0), (1, 1))))
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


def _mlp(params, x):
    h = jax.nn.gelu(x @ params["w1"], approximate=False)
    h = jax.lax.with_sharding_constraint(h, S("dp", "sp"))
    return h @ params["w2"]


def test_tensor_parallel_mlp_with_exact_gelu_is_equivalent() -> None:
    # jax's Shardy lowering keeps chlo.erfc in both programs. (XLA's partitioned module has
    # it expanded into XLA's rational approximation; the reference is then expanded the same
    # way, passes/legalize_chlo.py, tested on testdata/ops_more/gelu_mlp.)
    params = {"w1": jax.ShapeDtypeStruct((16, 32), jnp.float32), "w2": jax.ShapeDtypeStruct((32, 16), jnp.float32)}
    x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
    v = tj.check(_mlp, params, x, in_shardings=({"w1": S(None, "sp"), "w2": S("sp", None)}, S("dp", None)),
                 out_shardings=S("dp", None), form="shardy")
    assert v.verdict == "equivalent", v.reason
    assert "erfc" in v.approximations
