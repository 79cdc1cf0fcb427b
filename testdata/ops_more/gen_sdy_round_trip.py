"""Shardy's HLO round-trip form, as XLA really writes it, for tests/test_sdy_round_trip.py.

jax hands XLA a Shardy module; XLA carries it through HLO by writing each
`sdy.manual_computation` as `custom_call @xla.sdy.GlobalToLocalShape`, a call of
`@xla.sdy.manual_computation_body`, and `custom_call @xla.sdy.LocalToGlobalShape` (shardings
as strings in `mhlo.frontend_attributes`, meshes in the module's `xla.sdy.meshes`), with
`@xla.sdy.FuncResultSharding` on the results and `@xla.sdy.ShardingGroup` for shard_alike.
This script compiles shard_map programs with an HLO dump, takes the module XLA starts from
(`*.before_optimizations.txt`), converts it to StableHLO (jax's hlo_to_stablehlo) and adds
what the HLO header says and the conversion drops: `mhlo.num_partitions`,
`mhlo.num_replicas`. Each program is written with its single-device reference, the form jax
hands XLA, and a bug
twin made by editing the round-trip form (the mesh's device order, the order of the
manual computation's results). Run from the repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/ops_more/gen_sdy_round_trip.py

Writes testdata/ops_more/sdy_rt_<name>.{ref,sdy,round_trip,bug}.mlir (sdy: jax's own Shardy
form of the program)."""
from __future__ import annotations

import glob
import os
import re
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
from jax.experimental.shard_alike import shard_alike
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

OUT = Path(__file__).resolve().parent
MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def _matmul_psum(x, w):
    # Full manual: x's rows over dp, the contraction over tp, summed with psum.
    body = jax.shard_map(lambda x, w: jax.lax.psum(x @ w, "tp"), mesh=MESH,
                         in_specs=(P("dp", "tp"), P("tp", None)), out_specs=P("dp", None), check_vma=False)
    return jnp.tanh(body(x, w)) * 2


def _partial_manual(x, w):
    # Manual over tp only (dp stays automatic), two results (tuple-valued round-trip calls),
    # and shard_alike (a ShardingGroup pair).
    body = jax.shard_map(lambda x, w: (jax.lax.psum(x @ w, "tp"), x * 2), mesh=MESH,
                         in_specs=(P(None, "tp"), P("tp", None)), out_specs=(P(None, None), P(None, "tp")),
                         axis_names={"tp"}, check_vma=False)
    a, b = body(x, w)
    c, d = shard_alike(a, x @ w)
    return jnp.tanh(c) + d, b


def _ref_matmul_psum(x, w):
    return jnp.tanh(x @ w) * 2


def _ref_partial_manual(x, w):
    return jnp.tanh(x @ w) + x @ w, x * 2


X, W = jax.ShapeDtypeStruct((8, 16), jnp.float32), jax.ShapeDtypeStruct((16, 4), jnp.float32)
XS, WS = NamedSharding(MESH, P("dp", "tp")), NamedSharding(MESH, P("tp", None))

# name: (program, reference, out_shardings, (text of the round-trip form, its bug))
CASES = {
    # The mesh's device order with devices 0 and 4 exchanged: the body's psum groups
    # ({0, 1, 2, 3}, device ids) then sum shards of both dp rows.
    "matmul_psum": (_matmul_psum, _ref_matmul_psum, NamedSharding(MESH, P("dp", None)),
                    ('#sdy.mesh<[\\22dp\\22=2, \\22tp\\22=4]>',
                     '#sdy.mesh<[\\22dp\\22=2, \\22tp\\22=4], device_ids=[4, 1, 2, 3, 0, 5, 6, 7]>')),
    # The body's two results (both 8x4 locally) handed to LocalToGlobalShape the other way
    # round: the psum becomes the tp-sharded 8x16 result, x * 2 the replicated one.
    "partial_manual": (_partial_manual, _ref_partial_manual,
                       (NamedSharding(MESH, P("dp", None)), NamedSharding(MESH, P("dp", "tp"))),
                       ("@xla.sdy.LocalToGlobalShape(%3#0, %3#1)", "@xla.sdy.LocalToGlobalShape(%3#1, %3#0)")),
}


def round_trip_text(fn, out_shardings) -> str:
    """The StableHLO of the HLO module XLA starts from, with the partition count restored."""
    from jax._src.interpreters import mlir
    from jax._src.lib import _jax
    from jaxlib import _hlo  # type: ignore[attr-defined]

    jitted = jax.jit(fn, in_shardings=(XS, WS), out_shardings=out_shardings)
    with tempfile.TemporaryDirectory() as d:
        jitted.lower(X, W).compile(compiler_options={"xla_dump_to": d, "xla_dump_hlo_as_text": True})
        dumps = sorted(glob.glob(os.path.join(d, "*before_optimizations.txt")))
        hlo_text = Path(dumps[-1]).read_text()
    partitions = int(re.search(r"num_partitions=(\d+)", hlo_text).group(1))
    hlo = _hlo.hlo_module_from_text(hlo_text)
    bytecode = _jax.mlir.hlo_to_stablehlo(hlo.as_serialized_hlo_module_proto())
    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(bytecode)
        i32 = mlir.ir.IntegerType.get_signless(32)
        module.operation.attributes["mhlo.num_partitions"] = mlir.ir.IntegerAttr.get(i32, partitions)
        module.operation.attributes["mhlo.num_replicas"] = mlir.ir.IntegerAttr.get(i32, 1)
        text = module.operation.get_asm(enable_debug_info=False)
    assert isinstance(text, str)
    return text


def main() -> int:
    for name, (fn, ref, outs, (good, bad)) in CASES.items():
        text = round_trip_text(fn, outs)
        assert text.count(good) == 1, (name, good)
        (OUT / f"sdy_rt_{name}.round_trip.mlir").write_text(text)
        (OUT / f"sdy_rt_{name}.bug.mlir").write_text(text.replace(good, bad))
        (OUT / f"sdy_rt_{name}.ref.mlir").write_text(jax.jit(ref).lower(X, W).as_text())
        # The form jax hands XLA (sdy.manual_computation): the round trip must read the same.
        jitted = jax.jit(fn, in_shardings=(XS, WS), out_shardings=outs)
        (OUT / f"sdy_rt_{name}.sdy.mlir").write_text(jitted.lower(X, W).as_text())
    print(f"wrote {4 * len(CASES)} modules to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
