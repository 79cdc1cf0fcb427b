"""Rule (b)'s assumed ranges through a device's offset (helper-47; docs/shrinking.md, "Red-team
batch 5", "device offsets"): a vocabulary-parallel lookup subtracts each shard's block start
from the ids (`local = ids - axis_index * vl`) and masks `0 <= local < vl`; a compare of
`local` with literals splits every shard's block at its own place, which id_splits.py did not
follow (it dropped forms through the subtract of a computed number).

- `range_device`: the bug masks `local + 1000 < 1100` as well (rows at local positions 100 to
  127 of every 128-row shard dropped). At a vocabulary of 8 (2 rows a shard) local < 100
  always, and the bug is the correct lookup there.

Same form as testdata/gen_shrink_rules.py (its helpers): `testdata/device_offsets/<pair>.
small.{ref,ok,bug}.mlir`, `manifest.json` with each pair's assumed ranges. Every twin is run
on XLA at its original sizes (random inputs and both ends of the ids' range): the generator
asserts that the correct twin agrees with the reference and the bug twin differs.

    .venv/bin/python testdata/gen_device_offsets.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_shrink_rules  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

OUT = Path(__file__).resolve().parent / "device_offsets"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {}


def range_device(t: int, v: int, hd: int, u: int, off: int) -> Pair:
    vl = v // TP

    def ref(emb, ids):
        return jnp.sum(jnp.take(emb, ids, axis=0), axis=0)

    def body(bug: bool):
        def f(emb, ids):
            local = ids - lax.axis_index("tp") * vl
            ok = (local >= 0) & (local < vl)
            if bug:
                ok = ok & (local + off < off + u)
            rows = jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0)
            return lax.psum(jnp.sum(jnp.where(ok[:, None], rows, 0.0), axis=0), "tp")
        return f

    def sharded(bug: bool):
        return _smap(MESH_TP, body(bug), (P("tp", None), P(None)), P(None))

    ASSUME["range_device"] = {"arg1": "vocab"}
    return Pair("range_device", "b", "small", {"tokens": t, "vocab": v, "hidden": hd, "special": u},
                [Arg((v, hd)), Arg((t,), I32, v)], ref, sharded(False), sharded(True),
                f"rows at local positions {u} to {vl - 1} of every shard masked (local + {off} < {off + u})")


def main() -> int:
    jax.config.update("jax_enable_x64", False)
    OUT.mkdir(exist_ok=True)
    gen_shrink_rules.OUT = OUT  # write_twins and write_manifest write there
    write_manifest([range_device(16, 512, 4, 100, 1000)], "manifest.json", ok_tol=1e-4, assume=ASSUME)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
