"""Rule (i), transposed means (docs/shrinking.md, rule i "transposed means"): a mean's
backward divides the cotangent by the count and spreads it over the summed positions; a
partitioned backward spreads it over each device's columns and divides by the global
count, and XLA folds a loss's seed into it (+-1/n per token). Same form and XLA ground
truth as testdata/gen_shrink_rules.py: a reference, a correct twin and a bug twin, run on
XLA at their original sizes (the correct twin agrees, the bug twin differs), written to
`<pair>.small.{ref,ok,bug}.mlir` and listed in `manifest_mean_backward.json`. Mesh 2 x 4
(dp x tp).

- `mean_grad_across`: tokens x hidden (64 x 64, so the constant 64 names both classes:
  the rule decides), hidden over tp. The reference is the vjp of `mean(x * x, axis=1)[:,
  None]` at x with the cotangent c (JAX's backward: a sum over the dim of one element, the
  divide by 64, a broadcast along hidden). The sharded twin spreads c / 64 over its 16 local
  columns; the bug divides by 16, the local count.
- `mean_grad_tokens`: 64 tokens x 128 hidden and an extra input z of 64 (so 64 names two
  classes); the bug divides the cotangent spread over the 32 local columns by 64, the
  token count, where 128 belongs. A reading that took the spread's global count whatever
  the constant's value would read 64 as hidden's count and hide it.
- `xent_grad`: a mean cross-entropy and its gradient over 4 x 16 tokens and 64 classes
  (the logits over dp and tp); the correct twin is XLA's own partitioned module (the seed
  folded into -1/64 at each label and 1/64 over the softmax sums); the bug is that module
  with -1/64 replaced by -1/32 (the local token count), checked by running both per-device
  modules on XLA.

    XLA_FLAGS=--xla_force_host_platform_device_count=8 .venv/bin/python \
        testdata/shrink_rules/gen_mean_backward.py
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
from gen_shrink_rules import OUT, Arg, Pair, _inputs, _smap  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

MESH = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("dp", "tp"))


def _max_diff(p: Pair, f: Any, g: Any) -> float:
    """gen_shrink_rules._max_diff over every output (a tuple's too), relative to the largest."""
    rng = np.random.default_rng(20261208)
    worst = 0.0
    for edge in range(3):
        xs = _inputs(p, rng, edge)
        a, b = (np.concatenate([np.ravel(np.asarray(y, np.float64)) for y in jax.tree.leaves(jax.jit(h)(*xs))])
                for h in (f, g))
        worst = max(worst, float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(a)))))
    return worst


def _spread_grad(divisor: float, extra: bool = False) -> Any:
    """The sharded vjp of mean(x * x, 1) over tp's columns: c / divisor spread over them."""
    def body(x, c, *z):
        spread = lax.broadcast_in_dim(c[:, 0] / divisor, (c.shape[0], x.shape[1]), (0,))
        g = spread * (2.0 * x)
        return (g, z[0] * 3.0) if extra else g
    ins = (P("dp", "tp"), P("dp", None)) + ((P(),) if extra else ())
    outs = (P("dp", "tp"), P()) if extra else P("dp", "tp")
    return _smap(MESH, body, ins, outs)


def mean_grad_across(t: int, h: int) -> Pair:
    def ref(x, c):
        return jax.vjp(lambda y: jnp.mean(y * y, axis=1)[:, None], x)[1](c)[0]

    return Pair("mean_grad_across", "i", "small", {"tokens": t, "hidden": h}, [Arg((t, h)), Arg((t, 1))], ref,
                _spread_grad(float(h)), _spread_grad(float(h // 4)),
                "the cotangent divided by 16, the local columns' count, not 64")


def mean_grad_tokens(t: int, h: int) -> Pair:
    def ref(x, c, z):
        return jax.vjp(lambda y: jnp.mean(y * y, axis=1)[:, None], x)[1](c)[0], z * 3.0

    return Pair("mean_grad_tokens", "i", "small", {"tokens": t, "hidden": h, "z": t},
                [Arg((t, h)), Arg((t, 1)), Arg((t,))], ref, _spread_grad(float(h), True),
                _spread_grad(float(t), True), f"the cotangent divided by {t}, the token count, not {h}")


XENT = {"batch": 4, "seq": 16, "classes": 48}
SEED = "-1.562500e-02"  # -1/64 in XLA's module text
BUG_SEED = "-3.125000e-02"  # -1/32


def _xent(logits, labels):
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
    return jnp.mean(lse - picked)


def xent_texts() -> tuple[str, str, str]:
    from tv_mlir import jax as tj
    b, s, v = XENT["batch"], XENT["seq"], XENT["classes"]
    args = (jax.ShapeDtypeStruct((b, s, v), jnp.float32), jax.ShapeDtypeStruct((b, s), jnp.int32))
    ins = (NamedSharding(MESH, P("dp", None, "tp")), NamedSharding(MESH, P("dp", None)))
    outs = (NamedSharding(MESH, P()), NamedSharding(MESH, P("dp", None, "tp")))
    ref, ok = tj._pair(jax.value_and_grad(_xent), args, ins, outs, None, "partitioned")
    ref, ok = (x if isinstance(x, str) else x.decode() for x in (ref, ok))
    assert ok.count(SEED) == 1, "XLA's module no longer folds the seed as -1/64"
    return ref, ok, ok.replace(SEED, BUG_SEED)


def _xent_diff(text: str) -> float:
    """max |grad - per-device module| over random logits and labels, the module run on XLA's
    8 CPU devices (device d = dp d // 4, tp d % 4)."""
    from tv_mlir.execute.xla import XlaRunner
    b, s, v = XENT["batch"], XENT["seq"], XENT["classes"]
    rng = np.random.default_rng(20261208)
    logits = rng.standard_normal((b, s, v)).astype(np.float32)
    labels = rng.integers(0, v, (b, s)).astype(np.int32)
    loss, grad = jax.jit(jax.value_and_grad(_xent))(logits, labels)
    want = np.asarray(grad, np.float64)
    lb, lv = b // 2, v // 4
    rows = [slice(d // 4 * lb, (d // 4 + 1) * lb) for d in range(8)]
    inputs = [[logits[rows[d], :, d % 4 * lv:(d % 4 + 1) * lv], labels[rows[d]]] for d in range(8)]
    outs = XlaRunner().run_spmd(text, inputs, per_device_program=True)
    got = np.zeros_like(want)
    for d in range(8):
        got[d // 4 * lb:(d // 4 + 1) * lb, :, d % 4 * lv:(d % 4 + 1) * lv] = outs[d][1]
    losses = max(abs(float(outs[d][0]) - float(loss)) for d in range(8))
    return max(losses, float(np.max(np.abs(want - got)))) / max(1.0, float(np.max(np.abs(want))))


def main() -> int:
    manifest = []
    for p in (mean_grad_across(64, 64), mean_grad_tokens(64, 128)):
        stem = f"{p.name}.{p.variant}"
        spec = [a.spec() for a in p.args]
        ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
        assert ok_diff < 1e-5, ok_diff
        assert bug_diff > 1e-3, bug_diff
        print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        files = {}
        for kind, fn in (("ref", p.ref), ("ok", p.ok), ("bug", p.bug)):
            text = jax.jit(fn, keep_unused=True).lower(*spec).as_text(debug_info=True)
            (OUT / f"{stem}.{kind}.mlir").write_text(text)
            files[kind] = f"{stem}.{kind}.mlir"
        manifest.append({"pair": p.name, "variant": p.variant, "rule": p.rule, "sizes": p.sizes, "bug": p.what,
                         "ran_on_xla": True, "files": files})
    texts = dict(zip(("ref", "ok", "bug"), xent_texts()))
    ok_diff, bug_diff = _xent_diff(texts["ok"]), _xent_diff(texts["bug"])
    assert ok_diff < 1e-5, ok_diff
    assert bug_diff > 1e-3, bug_diff
    print(f"xent_grad.small: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
    files = {}
    for kind, text in texts.items():
        (OUT / f"xent_grad.small.{kind}.mlir").write_text(text)
        files[kind] = f"xent_grad.small.{kind}.mlir"
    manifest.append({"pair": "xent_grad", "variant": "small", "rule": "i", "sizes": XENT,
                     "bug": "XLA's partitioned backward with the folded seed -1/64 at the labels made -1/32",
                     "ran_on_xla": True, "files": files})
    (OUT / "manifest_mean_backward.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
