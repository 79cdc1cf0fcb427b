"""A batch of Cholesky solves, single-device and sharded over the batch with shard_map, as
jax lowers them on CPU (custom_call @lapack_spotrf_ffi / @lapack_strsm_ffi), for
tests/test_ops_xla_more.py. The bug twin solves with the transpose the wrong way round in the
second triangular solve (L^T x = y written as L x = y). Run from the repository root:

    JAX_PLATFORMS=cpu .venv/bin/python testdata/ops_more/gen_linalg_sharded.py

Writes testdata/ops_more/linalg_sharded.{ref,sharded,bug}.mlir."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"

import jax
import jax.numpy as jnp
import jax.scipy.linalg as sl
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

OUT = Path(__file__).resolve().parent
MESH = jax.make_mesh((2,), ("b",), axis_types=(jax.sharding.AxisType.Auto,))


def solve(a, y, trans_second: int = 1):
    low = jnp.linalg.cholesky(a)
    z = sl.solve_triangular(low, y, lower=True)
    return sl.solve_triangular(low, z, lower=True, trans=trans_second)


def sharded(trans_second: int):
    body = jax.shard_map(lambda a, y: solve(a, y, trans_second), mesh=MESH, in_specs=(P("b"), P("b")),
                         out_specs=P("b"), check_vma=False)
    spec = NamedSharding(MESH, P("b"))
    return jax.jit(body, in_shardings=(spec, spec), out_shardings=spec)


def main() -> int:
    a, y = jax.ShapeDtypeStruct((4, 3, 3), jnp.float32), jax.ShapeDtypeStruct((4, 3, 2), jnp.float32)
    (OUT / "linalg_sharded.ref.mlir").write_text(jax.jit(solve).lower(a, y).as_text())
    (OUT / "linalg_sharded.sharded.mlir").write_text(sharded(1).lower(a, y).as_text())
    (OUT / "linalg_sharded.bug.mlir").write_text(sharded(0).lower(a, y).as_text())
    print(f"wrote 3 modules to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
