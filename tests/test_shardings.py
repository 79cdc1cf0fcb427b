"""The one sharding model against XLA's own reading: for GSPMD sharding strings, the block
of the global array each device holds must be the block jax/XLA assigns it
(`GSPMDSharding.devices_indices_map`); Shardy meshes and shardings read from a module;
and the replica/unreduced assembly rules."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import prepared
from tv_mlir.algebra import NumericAlgebra
from tv_mlir.errors import Unsupported
from tv_mlir.execute import spmd
from tv_mlir.frontend import gspmd
from tv_mlir.ir import Mesh, Sharding, TensorType

STRINGS = [
    ("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", (4, 8)),
    ("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}", (8, 2)),
    ("{devices=[2,4]<=[8]}", (4, 8)),
    ("{devices=[2,4]<=[4,2]T(1,0)}", (4, 8)),
    ("{devices=[8,1]<=[8]}", (8, 3)),
    ("{devices=[1,2,4]<=[2,2,2]T(2,1,0)}", (2, 4, 8)),
    ("{devices=[2,2,2]0,2,4,6,1,3,5,7 last_tile_dim_replicate}", (4, 6)),
    ("{devices=[2,1,2,2]<=[8] last_tile_dims={replicated}}", (4, 2, 6)),
    ("{replicated}", (3, 5)),
]


@pytest.mark.parametrize("text,shape", STRINGS)
def test_gspmd_blocks_match_xla(text: str, shape: tuple[int, ...]) -> None:
    import jax
    from jax._src.lib import xla_client as xc

    devices = jax.devices()[:8]
    assert len(devices) == 8
    want = xc.GSPMDSharding(devices, xc.HloSharding.from_string(text)).devices_indices_map(shape)
    s = gspmd.parse(text, len(shape), 8)
    assert isinstance(s, Sharding)
    local = s.local_type(TensorType(shape, "f32")).shape
    for d, dev in enumerate(devices):
        got = spmd.device_block(s, d, 8, local, "test")
        expect = tuple(slice(sl.start or 0, sl.stop if sl.stop is not None else n) for sl, n in zip(want[dev], shape))
        assert got == expect, f"{text}: device {d} holds {got}, XLA says {expect}"


def test_gspmd_special_forms() -> None:
    assert gspmd.parse("{manual}", 2, 8) == gspmd.MANUAL
    assert gspmd.parse("{maximal device=3}", 2, 8) == gspmd.Maximal(3)
    assert gspmd.parse_tuple("{{replicated}, {devices=[2,4]<=[8]}}") == ["{replicated}", "{devices=[2,4]<=[8]}"]
    with pytest.raises(gspmd.ShardingSyntaxError, match="tile dims"):
        gspmd.parse("{devices=[2,4]<=[8]}", 3, 8)
    with pytest.raises(gspmd.ShardingSyntaxError, match="manual"):
        gspmd.parse("{devices=[2,1,4]<=[8] last_tile_dims={manual}}", 2, 8)


SHARDY = """
module @m attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["dp"=2, "tp"=4]>
  func.func public @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = sdy.manual_computation(%x) in_shardings=[<@mesh, [{"dp"}, {"tp"}]>] out_shardings=[<@mesh, [{"tp", "dp"}, {}]>] manual_axes={"dp", "tp"} (%a: tensor<2x2xf32>) {
      %1 = "stablehlo.all_gather"(%a) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<2x2xf32>) -> tensor<2x8xf32>
      %2 = stablehlo.slice %1 [0:1, 0:8] : (tensor<2x8xf32>) -> tensor<1x8xf32>
      sdy.return %2 : tensor<1x8xf32>
    } : (tensor<4x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
"""


def test_shardy_mesh_and_axis_order() -> None:
    module = prepared(SHARDY.replace("-> tensor<4x8xf32> {", "-> tensor<8x8xf32> {"))
    assert module.meshes["mesh"] == Mesh((("dp", 2), ("tp", 4)))
    op = module.main.body.ops[0]
    out = op.attrs["out_shardings"][0]
    assert out.dims == (("tp", "dp"), ()) and out.replicated == ()
    from tv_mlir.execute.interp import Interpreter

    x = np.arange(32.0).reshape(4, 8)
    got = Interpreter(module, NumericAlgebra()).run([x])[0]
    # Device (dp, tp) holds row 0 of its dp half after the gather; ("tp", "dp") puts
    # tp major: block tp*2 + dp.
    want = np.stack([x[2 * dp] for tp in range(4) for dp in range(2)])
    np.testing.assert_array_equal(got, want)


def test_unreduced_axes_are_summed_and_replicas_checked() -> None:
    mesh = Mesh((("a", 2), ("b", 2)))
    s = Sharding(mesh, ((), ), unreduced=("a",))
    assert s.replicated == ("b",)

    class Shim:
        num_devices = 4
        alg = NumericAlgebra()
        replica_checks: list = []

    shim = Shim()
    parts = spmd.Local(tuple(np.array([float(d)]) for d in range(4)))
    got = spmd.gather(shim, parts, s, TensorType((1,), "f32"), "v", "loc")
    # Devices 0,1,2,3 sit at (a, b) = (0,0), (0,1), (1,0), (1,1): the copy over b = 0 is
    # the sum over a of devices 0 and 2.
    assert got.tolist() == [2.0]
    (check,) = shim.replica_checks
    assert (check.device_a, check.device_b) == (0, 1) and check.a.tolist() == [2.0] and check.b.tolist() == [4.0]


def test_mesh_size_must_match_devices() -> None:
    s = Sharding(Mesh((("a", 4),)), (("a",),))
    with pytest.raises(Unsupported, match="covers 4 devices"):
        spmd.scatter(np.zeros(8), s, 8, "loc")
