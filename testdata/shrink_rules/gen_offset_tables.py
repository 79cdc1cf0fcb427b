"""Rule (h), offset tables (docs/shrinking.md, "Offset tables read at several blocks, and
clamped"): XLA's partitioned modules start a device's block at `table[coordinate[pid]]`,
a constant table of q * B. Two readings are new: one table read at blocks of two classes
of one size (XLA's [0, 2048] for a norm weight's and a projection's column shards in the
8B fwd+bwd) is rewritten once where both readings give the same table at the planned
sizes; and an entry past the last block, which a dynamic_slice clamps to it (XLA's [0, 0,
0, 0, 2048, ...] over 1024-row blocks of a 2048-row dim), is a block count like the others
when the dim is a fixed number of blocks (a scale relation).

The correct twins are XLA's own partitioned modules (mesh 2 x 4, dp x tp) of a reference
that multiplies columns sharded over tp by replicated weights, which XLA slices by one
table [0, 16, 32, 48]; the other twins are those modules with the table edited. Every twin
is run on XLA's 8 CPU devices at its original sizes against the reference (the correct
twins agree, the bugs differ). Written to `<pair>.small.{ref,ok,bug}.mlir`, listed in
`manifest_offset_tables.json`.

- `table_two_classes`: y1 = x * w1 (x: 32 x 64 over dp and tp) and y2 = z * w2 (z: 8 x 64
  over tp: another class of 64); both weights are sliced by the one table. The bug's table
  is [0, 32, 16, 48] (devices with tp 1 and 2 read each other's blocks of both weights).
- `table_clamped`: y = x * w; the correct twin's table is [0, 16, 32, 64]: the last block
  starts at the dim's end, and XLA clamps it to 48, the right block. The bug's table is
  [0, 16, 16, 64] (tp 2 reads block 1).

    XLA_FLAGS=--xla_force_host_platform_device_count=8 .venv/bin/python \
        testdata/shrink_rules/gen_offset_tables.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import OUT  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("dp", "tp"))
TABLE = "dense<[0, 16, 32, 48]>"
T, H, R = 32, 64, 8


def _two(x, w1, z, w2):
    return x * w1, z * w2


def _one(x, w):
    return x * w


SPECS: dict[str, tuple[Any, ...]] = {
    "table_two_classes": (_two, ((T, H), (H,), (R, H), (H,)), (P("dp", "tp"), P(), P(None, "tp"), P()),
                          (P("dp", "tp"), P(None, "tp"))),
    "table_clamped": (_one, ((T, H), (H,)), (P("dp", "tp"), P()), P("dp", "tp")),
}
EDITS = {
    "table_two_classes": {"ok": TABLE, "bug": "dense<[0, 32, 16, 48]>"},
    "table_clamped": {"ok": "dense<[0, 16, 32, 64]>", "bug": "dense<[0, 16, 16, 64]>"},
}


def _texts(name: str) -> tuple[str, str]:
    from tv_mlir import jax as tj
    fn, shapes, ins, outs = SPECS[name]
    args = tuple(jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes)
    shard = lambda spec: NamedSharding(MESH, spec)  # noqa: E731
    out_sh = tuple(shard(o) for o in outs) if isinstance(outs, tuple) else shard(outs)
    ref, other = tj._pair(fn, args, tuple(shard(i) for i in ins), out_sh, None, "partitioned")
    ref, other = (x if isinstance(x, str) else x.decode() for x in (ref, other))
    assert other.count(TABLE) == 1, f"{name}: XLA's module no longer slices by one table {TABLE}"
    return ref, other


def _local(x: np.ndarray, spec: Any, d: int) -> np.ndarray:
    """Device d's block (dp = d // 4, tp = d % 4) of x under the partition spec."""
    index = []
    for k, axis in enumerate(tuple(spec) + (None,) * (x.ndim - len(spec))):
        n = {"dp": 2, "tp": 4}.get(axis or "", 1)
        c = d // 4 if axis == "dp" else d % 4 if axis == "tp" else 0
        b = x.shape[k] // n
        index.append(slice(c * b, (c + 1) * b))
    return x[tuple(index)]


def _xla_diff(name: str, text: str) -> float:
    """max |reference - the per-device module run on XLA's 8 CPU devices|, relative."""
    from tv_mlir.execute.xla import XlaRunner
    fn, shapes, ins, outs = SPECS[name]
    rng = np.random.default_rng(20261208)
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = jax.jit(fn)(*xs)
    want = [np.asarray(w, np.float64) for w in (want if isinstance(want, tuple) else (want,))]
    got = XlaRunner().run_spmd(text, [[_local(x, s, d) for x, s in zip(xs, ins)] for d in range(8)],
                               per_device_program=True)
    outs = outs if isinstance(outs, tuple) else (outs,)
    worst = 0.0
    for j, (w, spec) in enumerate(zip(want, outs)):
        for d in range(8):
            worst = max(worst, float(np.max(np.abs(_local(w, spec, d) - got[d][j]))))
    return worst / max(1.0, max(float(np.max(np.abs(w))) for w in want))


def main() -> int:
    manifest = []
    for name in SPECS:
        ref, xla = _texts(name)
        texts = {"ref": ref, **{k: xla.replace(TABLE, v) for k, v in EDITS[name].items()}}
        ok_diff, bug_diff = _xla_diff(name, texts["ok"]), _xla_diff(name, texts["bug"])
        assert ok_diff < 1e-6, ok_diff
        assert bug_diff > 1e-3, bug_diff
        print(f"{name}.small: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        files = {}
        for kind, text in texts.items():
            (OUT / f"{name}.small.{kind}.mlir").write_text(text)
            files[kind] = f"{name}.small.{kind}.mlir"
        manifest.append({"pair": name, "variant": "small", "rule": "h", "sizes": {"tokens": T, "hidden": H},
                         "tables": EDITS[name], "ran_on_xla": True, "files": files})
    (OUT / "manifest_offset_tables.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
