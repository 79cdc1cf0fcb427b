"""Rule (i) across devices (docs/shrinking.md, rule i "across devices"): a partitioned mean
divides an all-reduced partial sum by the global count. Same form and XLA ground truth as
testdata/gen_shrink_rules.py: a reference, a correct twin and bug twins, run on XLA at
their original sizes (the correct twin agrees, each bug twin differs), written to
`<pair>.small.{ref,ok,bug,bug_axis}.mlir` and listed in `manifest_across.json`.

`mean_across`: tokens x hidden (64 x 64, so the constant 64 names both classes: rule (i)
decides) on a 2 x 4 mesh (dp x tp), the hidden dim over tp. The reference scales x by
the mean of x^2 over hidden; the sharded program sums its 16 local columns, adds the
sums over tp (`psum`) and divides by 64. Bugs: `bug` divides by 32, the size of another
group (16 local columns x 2 dp devices); `bug_axis` adds the sums over dp, the wrong axis,
before dividing by 64.

    .venv/bin/python testdata/shrink_rules/gen_across.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import OUT, Arg, Pair, _max_diff, _smap  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("dp", "tp"))


def mean_across(t: int, h: int) -> tuple[Pair, dict]:
    def ref(x):
        return jnp.mean(x * x, axis=1, keepdims=True) * x

    def sharded(axis: str, divisor: float):
        def body(x):
            ms = lax.psum(jnp.sum(x * x, axis=1, keepdims=True), axis) / divisor
            return ms * x
        return _smap(MESH, body, (P("dp", "tp"),), P("dp", "tp"))

    p = Pair("mean_across", "i", "small", {"tokens": t, "hidden": h}, [Arg((t, h))], ref,
             sharded("tp", float(h)), sharded("tp", float(h // 4 * 2)),
             "the psum over tp divided by 32 (16 local columns x 2 dp devices), not 64")
    bug_axis = {"fn": sharded("dp", float(h)),
                "what": "the local sums added over dp (the wrong axis) before the divide by 64"}
    return p, bug_axis


def main() -> int:
    p, extra = mean_across(64, 64)
    stem = f"{p.name}.{p.variant}"
    spec = [a.spec() for a in p.args]
    ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
    axis_diff = _max_diff(p, p.ref, extra["fn"])
    assert ok_diff < 1e-5, ok_diff
    assert bug_diff > 1e-3 and axis_diff > 1e-3, (bug_diff, axis_diff)
    print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}, bug_axis {axis_diff:.2e}")
    files = {}
    for kind, fn in (("ref", p.ref), ("ok", p.ok), ("bug", p.bug), ("bug_axis", extra["fn"])):
        text = jax.jit(fn, keep_unused=True).lower(*spec).as_text(debug_info=True)
        (OUT / f"{stem}.{kind}.mlir").write_text(text)
        files[kind] = f"{stem}.{kind}.mlir"
    entry = {"pair": p.name, "variant": p.variant, "rule": p.rule, "sizes": p.sizes, "bug": p.what,
             "bug_axis": extra["what"], "ran_on_xla": True, "files": files}
    (OUT / "manifest_across.json").write_text(json.dumps([entry], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
