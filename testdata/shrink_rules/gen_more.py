"""More shrinking-rule pairs for testdata/shrink_rules/ (issue 12, the mechanisms left open
after rules a-j): a transpose written as a dot_general (rule d, spanning classes) and a
polynomial in a data-dependent count (rule k). Same form and ground truth as
testdata/gen_shrink_rules.py, whose helpers this imports: per pair and variant a
reference, a correct twin and a bug twin, run on XLA at their original sizes (the correct
twin agrees with the reference, the bug twin differs), written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_more.json`.

    .venv/bin/python testdata/shrink_rules/gen_more.py
"""
from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import OUT, RUN_LIMIT, Arg, Pair, _max_diff, _smap, write_twins  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32
# Pairs whose bug is a replica divergence: name -> (diverge -> every device's copy).
COPIES: dict[str, Callable[[bool], Callable[..., Any]]] = {}
MESH_DP = Mesh(np.array(jax.devices()[:4]), ("dp",))


# (d) A square weight's gradient transposed by swapping the dot's operands: x^T dy is
# right, dy^T x (the same dot_general with its operands exchanged) is its transpose. No
# stablehlo.transpose anywhere; the update joins the weight's two dims into one class.
def dot_transpose(b: int, h: int, variant: str) -> Pair:
    def ref(w, x, dy):
        return w - 0.5 * jnp.einsum("bi,bo->io", x, dy)

    def body(swapped: bool):
        def f(w, x, dy):
            g = jnp.einsum("bo,bi->oi", dy, x) if swapped else jnp.einsum("bi,bo->io", x, dy)
            return w - 0.5 * lax.psum(g, "dp")
        return f

    def sharded(swapped: bool):
        return _smap(MESH_DP, body(swapped), (P(), P("dp"), P("dp")), P())

    return Pair("dot_transpose", "d", variant, {"batch": b, "hidden": h},
                [Arg((h, h)), Arg((b, h)), Arg((b, h))], ref, sharded(False), sharded(True),
                "the gradient is dy^T x (dot_general operands swapped) where x^T dy is right")


# (k) A cubic in a data-dependent count: C(k, 3) for k the number of positive tokens. The
# bug divides by 3 instead of 3! = 6: both are 0 for k = 0, 1, 2, so at 2 tokens (the
# count's sum has summand degree 1) they agree on every input.
def count_triples(n: int, variant: str) -> Pair:
    def count(x):
        return jnp.sum(jnp.where(x > 0, 1.0, 0.0))

    def ref(x):
        k = count(x)
        return k * (k - 1.0) * (k - 2.0) / 6.0

    def twin(divisor: float):
        # The same count, the cubic expanded: single-device, so that the class can shrink
        # to 2 (sharded over s devices it keeps 2 per shard, and 2s points see the cubic).
        def f(x):
            k = count(x)
            return (k * k * k - 3.0 * k * k + 2.0 * k) / divisor
        return f

    return Pair("count_triples", "k", variant, {"tokens": n}, [Arg((n,))], ref, twin(6.0), twin(3.0),
                "C(k, 3) of the count of positive tokens divides by 3 instead of 6")


# Issue 12 item 4: a replica divergence at sizes that shrink. The output is declared
# replicated over dp, and one device's copy is off by one ulp-free 1.0 on its last row:
# the reference's value is device 0's, so only the replica obligation sees the bug.
def replica_rows(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return x * 2.0

    def body(diverge: bool):
        def f(x):
            y = lax.all_gather(x, "dp", axis=0, tiled=True) * 2.0
            if diverge:
                last = (jnp.arange(y.shape[0]) == y.shape[0] - 1)[:, None]
                y = y + jnp.where(last & (lax.axis_index("dp") == 3), 1.0, 0.0)
            return y
        return f

    def sharded(diverge: bool):
        return _smap(MESH_DP, body(diverge), (P("dp"),), P())

    def copies(diverge: bool):
        # Every device's copy side by side: XLA's ground truth for a replica obligation.
        return _smap(MESH_DP, lambda x: body(diverge)(x)[None], (P("dp"),), P("dp"))

    COPIES["replica_rows"] = copies
    return Pair("replica_rows", "item4", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref,
                sharded(False), sharded(True), "device 3's copy of a replicated output differs on its last row")


def pairs() -> list[Pair]:
    return [
        dot_transpose(16, 16, "small"), dot_transpose(64, 4096, "big"),
        count_triples(64, "small"), count_triples(32768, "big"),
        replica_rows(32, 64, "small"), replica_rows(64, 4096, "big"),
    ]


def main() -> int:
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ran = sum(int(np.prod(a.shape)) for a in p.args) <= RUN_LIMIT
        if ran and p.name in COPIES:
            xs = [np.random.default_rng(1).standard_normal(a.shape).astype(np.float32) for a in p.args]
            spread = [float(np.ptp(np.asarray(jax.jit(COPIES[p.name](d))(*xs)), axis=0).max()) for d in (False, True)]
            assert spread[0] == 0.0 and spread[1] > 0.5, f"{stem}: copies spread {spread}"
            assert _max_diff(p, p.ref, p.ok) < 1e-5
            print(f"{stem}: replicas ok {spread[0]}, bug {spread[1]}")
        elif ran:
            ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
            assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
            assert bug_diff > 1e-3, f"{stem}: the bug twin does not differ from the reference ({bug_diff})"
            print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        manifest.append(write_twins(p, stem, specs, ran))
    (OUT / "manifest_more.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
