"""Writes the XLA-partitioned pairs of tests/test_xla_forms.py's chlo cases: programs whose
single-device lowering holds a chlo op that XLA's partitioned module has expanded into
plain StableHLO (exact gelu's chlo.erfc). Run from the repository root:

    .venv/bin/python testdata/ops_more/gen_partitioned.py

Writes testdata/ops_more/<name>.ref.mlir and <name>.partitioned.mlir
(`tv_mlir.jax.export_pair`, form "partitioned") and one hand mutation per pair,
<name>.<bug>.partitioned.mlir, a one-line edit of XLA's module."""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

from tv_mlir import jax as tj  # noqa: E402

MESH = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def S(*spec: object) -> NamedSharding:
    return NamedSharding(MESH, P(*spec))


def gelu_mlp(w1: jax.Array, w2: jax.Array, x: jax.Array) -> jax.Array:
    # A Megatron MLP block: w1 column-parallel, w2 row-parallel, exact gelu between them.
    return jax.nn.gelu(x @ w1, approximate=False) @ w2


# The erfc expansion ends in select(x < 0, 2 - e, e) (erfc(-x) = 2 - erfc(x)); the bug
# swaps its branches, so negative arguments get the positive side's value.
SIGN_SELECT = re.compile(r"(%\d+)( = stablehlo\.subtract %\d+, )(%\d+)"
                         r"( : [^\n]*\n\s*%\d+ = stablehlo\.select %\d+, )\1, \3 ")


def swap_sign_select(text: str) -> str:
    new, n = SIGN_SELECT.subn(r"\1\2\3\4\3, \1 ", text)
    if n != 1:
        raise SystemExit(f"select(x < 0, 2 - e, e) found {n} times in the partitioned module")
    return new


def main() -> None:
    f32 = jnp.float32
    args = (jax.ShapeDtypeStruct((4, 8), f32), jax.ShapeDtypeStruct((8, 4), f32), jax.ShapeDtypeStruct((4, 4), f32))
    _, part = tj.export_pair(gelu_mlp, *args, in_shardings=(S(None, "tp"), S("tp", None), S("dp", None)),
                             out_shardings=S("dp", None), directory=HERE, name="gelu_mlp")
    text = part.read_text()
    assert "chlo" not in text and "stablehlo.exponential" in text, "XLA should have expanded chlo.erfc"
    (HERE / "gelu_mlp.sign_swapped.partitioned.mlir").write_text(swap_sign_select(text))


if __name__ == "__main__":
    main()
