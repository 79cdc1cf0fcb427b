"""Generate testdata/xla_forms/: small programs jitted with NamedSharding in/out shardings
on a 2x4 ("dp", "tp") mesh, and XLA's per-device module after SPMD partitioning, in the
attribute forms XLA writes today (replica groups as `#stablehlo.replica_group_mesh_axes`).

Run from the repository root:

    .venv/bin/python testdata/gen_xla_forms.py

For every program it writes ``<name>.ref.mlir`` (the function jitted for one device, its
sharding constraints dropped) and ``<name>.partitioned.mlir`` (the module after XLA's
`spmd-partitioning` pass, HLO -> StableHLO; ``mhlo.num_partitions``/``mhlo.num_replicas``
and the results' ``mhlo.sharding`` are added, the HLO dump lacks them), and checks that the
sharded jit agrees with the reference numerically.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tv_mlir, run from anywhere
from tv_mlir.jax import partitioned_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "testdata" / "xla_forms"
MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def constrain(x, *spec, on: bool = True):
    return jax.lax.with_sharding_constraint(x, NamedSharding(MESH, P(*spec))) if on else x


@dataclass
class Program:
    name: str
    fn: Callable[..., object]  # takes `on`: False drops the sharding constraints
    shapes: list[tuple[int, ...]]
    in_specs: list[P]
    out_specs: list[P] | P


def mlp(x, w1, w2, on=True):
    """Megatron MLP: column- then row-parallel matmul, an all-reduce over tp; the output
    gathered over dp (replicated result)."""
    return jnp.maximum(x @ w1, 0) @ w2


def mlp_seq(x, w1, w2, on=True):
    """The MLP's output constrained to rows over dp and columns over tp, then returned
    with columns over tp only: an all-gather over dp."""
    y = constrain(jnp.maximum(x @ w1, 0) @ w2, "dp", "tp", on=on)
    return y


def reshard(x, w, on=True):
    """Columns over tp resharded to rows over tp: an all-to-all."""
    h = constrain(x * 2.0, None, "tp", on=on)
    h = constrain(h, "tp", None, on=on)
    return h @ w


def scatter_sum(x, w, on=True):
    """A contraction over the tp-sharded dimension whose result is sharded along tp:
    a reduce-scatter (or all-reduce and slice)."""
    y = x @ w
    return constrain(y, None, "tp", on=on)


PROGRAMS = [
    Program("mlp", mlp, [(8, 16), (16, 32), (32, 16)],
            [P("dp", None), P(None, "tp"), P("tp", None)], P()),
    Program("mlp_seq", mlp_seq, [(8, 16), (16, 32), (32, 16)],
            [P("dp", None), P(None, "tp"), P("tp", None)], P(None, "tp")),
    Program("reshard", reshard, [(8, 16), (16, 8)],
            [P(None, "tp"), P()], P("tp", None)),
    Program("scatter_sum", scatter_sum, [(8, 16), (16, 16)],
            [P(None, "tp"), P("tp", None)], P(None, "tp")),
]


def shardings(specs):
    if isinstance(specs, P):
        return NamedSharding(MESH, specs)
    return tuple(NamedSharding(MESH, s) for s in specs)


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    for p in PROGRAMS:
        args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in p.shapes]
        sharded = jax.jit(p.fn, in_shardings=shardings(p.in_specs), out_shardings=shardings(p.out_specs))
        ref = jax.jit(lambda *a, fn=p.fn: fn(*a, on=False))
        values = [rng.normal(size=s).astype(np.float32) for s in p.shapes]
        got, want = np.asarray(sharded(*values)), np.asarray(ref(*values))
        assert np.allclose(got, want, rtol=1e-4, atol=1e-4), f"{p.name}: sharded jit differs from the reference"
        sharded = jax.jit(p.fn, in_shardings=shardings(p.in_specs), out_shardings=shardings(p.out_specs))
        text = partitioned_text(sharded, args)
        check_partitioned(p, text, values)
        (OUT / f"{p.name}.ref.mlir").write_text(ref.lower(*args).as_text())
        # Source locations relative to the repository, as in testdata/sharded/.
        (OUT / f"{p.name}.partitioned.mlir").write_text(text.replace(f"{ROOT}/", ""))
        print(p.name)


def check_partitioned(p: Program, text: str, values: list[np.ndarray]) -> None:
    """XLA runs the partitioned module on every device's shards; each device's outputs must
    be the sharded jit's (the ground truth: the converted module is XLA's own output, but
    the conversion lost device ids before, see restore_mesh_device_ids)."""
    from tv_mlir.execute.xla import XlaRunner

    devices = list(MESH.devices.flat)
    ids = sorted(d.id for d in devices)
    placed = [jax.device_put(v, s) for v, s in zip(values, shardings(p.in_specs))]
    per_device = [[np.asarray({sh.device.id: sh.data for sh in x.addressable_shards}[d]) for x in placed]
                  for d in ids]
    got = XlaRunner().run_spmd(text, per_device, per_device_program=True)
    sharded = jax.jit(p.fn, in_shardings=shardings(p.in_specs), out_shardings=shardings(p.out_specs))
    want = jax.tree.leaves(sharded(*values))
    for k, w in enumerate(want):
        by_dev = {sh.device.id: np.asarray(sh.data) for sh in w.addressable_shards}
        for d in ids:
            assert np.allclose(got[d][k], by_dev[d], rtol=1e-4, atol=1e-4), (
                f"{p.name}: the partitioned module's output {k} differs from the sharded jit on device {d}")


if __name__ == "__main__":
    main()
