"""jax.random.uniform under jax's "rbg" PRNG (the one that lowers to
stablehlo.rng_bit_generator), for tests/test_ops_xla_more.py. Run from the repository root:

    .venv/bin/python testdata/ops_more/gen_rbg.py

Writes testdata/ops_more/rbg_uniform.{ref,partitioned,local_draw}.mlir:

- ref: `jax.random.uniform(key, (8, 4))` jitted on one device (the key is the 4 ui32 words
  jax keeps for an rbg key; the program bitcasts them to the 2xui64 state);
- partitioned: the same with out_shardings P("x") over 8 CPU devices, XLA's module after
  SPMD partitioning (every device draws the whole (8, 4) and keeps its row);
- local_draw: a shard_map whose devices each draw their local (1, 4) from the shared key,
  a real bug: every device gets the first row of the global draw, not its own."""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(OUT.parents[1]))
jax.config.update("jax_default_prng_impl", "rbg")
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

from tv_mlir import jax as tj  # noqa: E402

MESH = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))


def uniform(k):
    return jax.random.uniform(jax.random.wrap_key_data(k), (8, 4))


def local_draw(k):
    body = jax.shard_map(lambda kk: jax.random.uniform(jax.random.wrap_key_data(kk), (1, 4)), mesh=MESH,
                         in_specs=P(), out_specs=P("x"), check_vma=False)
    return body(k)


def main() -> int:
    key = jax.ShapeDtypeStruct((4,), jnp.uint32)
    tj.export_pair(uniform, key, in_shardings=NamedSharding(MESH, P()), out_shardings=NamedSharding(MESH, P("x")),
                   directory=OUT, name="rbg_uniform")
    spec = NamedSharding(MESH, P())
    text = jax.jit(local_draw, in_shardings=spec, out_shardings=NamedSharding(MESH, P("x"))).lower(key).as_text()
    (OUT / "rbg_uniform.local_draw.mlir").write_text(text)
    print(f"wrote 3 modules to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
