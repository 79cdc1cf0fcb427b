"""Generate the mean-divisor pairs in testdata/shrink_mean/ (shrinking rule (i) of
docs/shrinking.md).

Run from the repository root:

    .venv/bin/python testdata/gen_shrink_mean.py

A Llama-shaped layer at a size where a mean's divisor names more than one class: hidden
64 = 8 heads x 8 head_dim (the realistic variant: 4096 = 32 x 128). RMSNorm divides the
sum of squares over hidden by 64.0, and 64 is also the size of the q projection's output
class (heads x head_dim): without rule (i) the constant is ambiguous and every class of
size 64 keeps its size.

Pairs (`<name>.ref.mlir` and `<name>.other.mlir`; `manifest.json` lists them with what
each tests and the expected verdict):

  - `mean_ok` (and `mean_ok_big`, hidden 4096 = 32 x 128): RMSNorm + q projection; the
    other writes the mean as `sum * (1/64)` (a reciprocal) -> equivalent, hidden shrunk;
  - `mean_ok_qnorm`: the reference of the next two; the other writes q's mean as a
    product with 1/64 -> equivalent, hidden and heads x head_dim shrunk to different sizes;
  - `mean_bug_headdim`: the reference also normalises q by its RMS over the projection's
    output dim (heads x head_dim, divisor 64); the bug divides each head's sum over
    head_dim by that 64 (a divisor that is not its sum's count: rule (i) does not apply,
    the constant stays ambiguous) -> not-equivalent;
  - `mean_bug_wrongsum`: the bug divides the sum of squares over hidden (of the normalised
    input) by 64 where the reference divides q's sum over heads x head_dim: two real
    means, each tied to its own sum's count -> not-equivalent;
  - `mean_bug_63`: RMSNorm divides by 63 (hidden - 1) -> not-equivalent;
  - `mean_shared` (hand-written StableHLO): one constant 64 is both RMSNorm's divisor and
    a plain scale of q -> equivalent, and hidden keeps its size ("more than one
    dimension").

Ground truth on XLA at the original sizes (asserted here, non-zero exit otherwise): on
random inputs the correct pairs agree and the bug twins differ.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_hlo_source_file_canonicalization_regex", r"^.*/(?=testdata/)")

OUT = Path(__file__).resolve().parent / "shrink_mean"
F32 = jnp.float32
EPS = 1e-6


def _rms(x: Any, g: Any, divide: Callable[[Any], Any]) -> Any:
    return x * jax.lax.rsqrt(divide(jnp.sum(x * x, axis=-1, keepdims=True)) + EPS) * g


def layer(heads: int, head_dim: int, mean: Callable[[Any], Any]) -> Callable[..., Any]:
    """RMSNorm over hidden, then the q projection to (tokens, heads, head_dim)."""
    def f(x, g, wq):
        y = _rms(x, g, mean)
        return (y @ wq).reshape(x.shape[0], heads, head_dim)
    return f


def layer_qnorm(heads: int, head_dim: int, q_norm: str) -> Callable[..., Any]:
    """RMSNorm, the q projection, then q normalised by its RMS over its output dim
    (heads x head_dim, before the reshape into heads)."""
    n = heads * head_dim

    def f(x, g, wq):
        y = _rms(x, g, lambda s: s / n)
        q = y @ wq
        if q_norm == "ref":  # the mean of q * q over heads x head_dim: divisor n
            ms = jnp.mean(q * q, axis=-1, keepdims=True)
        elif q_norm == "recip":  # the same mean as a product with 1/n (a reciprocal)
            ms = jnp.sum(q * q, axis=-1, keepdims=True) * (1.0 / n)
        elif q_norm == "headdim":  # per head, sum over head_dim, still divided by n
            q3 = q.reshape(x.shape[0], heads, head_dim)
            ms = (jnp.sum(q3 * q3, axis=-1, keepdims=True) / n) * jnp.ones((1, 1, head_dim), F32)
            ms = ms.reshape(x.shape[0], n)
        else:  # "wrongsum": the sum of squares of the normalised input over hidden, over n
            ms = jnp.sum(y * y, axis=-1, keepdims=True) / n
        return y, (q * jax.lax.rsqrt(ms + EPS)).reshape(x.shape[0], heads, head_dim)
    return f


def shared_constant_mlir(tokens: int, heads: int, head_dim: int, swap: bool) -> str:
    """One constant n = heads * head_dim (= hidden) is RMSNorm's divisor and a plain
    scale of the q projection. `swap` writes one product with its operands exchanged (the
    other program)."""
    h, t = heads * head_dim, tokens
    x, v, w, r, th = f"tensor<{t}x{h}xf32>", f"tensor<{t}xf32>", f"tensor<{h}x{h}xf32>", f"tensor<{t}x1xf32>", \
        f"tensor<{t}x{heads}x{head_dim}xf32>"
    scaled = "%8, %arg0" if swap else "%arg0, %8"
    return f"""module @jit_mean_shared attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
  func.func public @main(%arg0: {x}, %arg1: tensor<{h}xf32>, %arg2: {w}) -> ({th}) {{
    %0 = stablehlo.multiply %arg0, %arg0 : {x}
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : ({x}, tensor<f32>) -> {v}
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : ({v}) -> {r}
    %cst_0 = stablehlo.constant dense<{float(h):e}> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> {r}
    %4 = stablehlo.divide %2, %3 : {r}
    %cst_1 = stablehlo.constant dense<9.99999997E-7> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> {r}
    %6 = stablehlo.add %4, %5 : {r}
    %7 = stablehlo.rsqrt %6 : {r}
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : ({r}) -> {x}
    %9 = stablehlo.multiply {scaled} : {x}
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<{h}xf32>) -> {x}
    %11 = stablehlo.multiply %9, %10 : {x}
    %12 = stablehlo.dot_general %11, %arg2, contracting_dims = [1] x [0] : ({x}, {w}) -> {x}
    %13 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> {x}
    %14 = stablehlo.multiply %12, %13 : {x}
    %15 = stablehlo.reshape %14 : ({x}) -> {th}
    return %15 : {th}
  }}
}}
"""


def pairs() -> list[dict[str, Any]]:
    out = []
    for name, (t, heads, hd) in (("mean_ok", (16, 8, 8)), ("mean_ok_big", (16, 32, 128))):
        n = heads * hd
        out.append(dict(name=name, sizes={"tokens": t, "hidden": n, "heads": heads, "head_dim": hd},
                        ref=layer(heads, hd, lambda s, n=n: s / n),  # jnp.mean's form: sum / 64.0
                        other=layer(heads, hd, lambda s, r=1.0 / n: s * r),
                        expect="equivalent", what="the mean written as sum * (1/n): hidden shrinks (rule i)"))
    sizes = {"tokens": 16, "hidden": 64, "heads": 8, "head_dim": 8}
    out.append(dict(name="mean_ok_qnorm", sizes=sizes, ref=layer_qnorm(8, 8, "ref"),
                    other=layer_qnorm(8, 8, "recip"), expect="equivalent",
                    what="q's mean written as sum * (1/64): two means of 64 over different classes, each "
                         "tied to its own sum (rule i)"))
    out.append(dict(name="mean_bug_headdim", sizes=sizes, ref=layer_qnorm(8, 8, "ref"),
                    other=layer_qnorm(8, 8, "headdim"), expect="not-equivalent",
                    what="q's sum of squares per head (over head_dim) divided by 64, the divisor of the "
                         "reduce over heads x head_dim"))
    out.append(dict(name="mean_bug_wrongsum", sizes=sizes, ref=layer_qnorm(8, 8, "ref"),
                    other=layer_qnorm(8, 8, "wrongsum"), expect="not-equivalent",
                    what="q is normalised by the sum of squares of the normalised input over hidden / 64, "
                         "not by q's over heads x head_dim / 64"))
    out.append(dict(name="mean_bug_63", sizes=sizes, ref=layer(8, 8, lambda s: s / 64),
                    other=layer(8, 8, lambda s: s / 63), expect="not-equivalent",
                    what="RMSNorm divides by 63 (hidden - 1)"))
    out.append(dict(name="mean_shared", sizes=sizes, ref=shared_constant_mlir(16, 8, 8, False),
                    other=shared_constant_mlir(16, 8, 8, True), expect="equivalent",
                    what="one constant 64 is RMSNorm's divisor and a plain scale of q: hidden keeps its size"))
    return out


def _max_diff(f: Callable[..., Any], g: Callable[..., Any], args: list[np.ndarray]) -> float:
    a, b = jax.tree.leaves(jax.jit(f)(*args)), jax.tree.leaves(jax.jit(g)(*args))
    return max(float(jnp.max(jnp.abs(x - y)) / max(1e-3, float(jnp.max(jnp.abs(x))))) for x, y in zip(a, b))


def main() -> int:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    manifest = []
    for p in pairs():
        s = p["sizes"]
        t, h = s["tokens"], s["hidden"]
        shapes = [(t, h), (h,), (h, h)]
        files = {k: f"{p['name']}.{k}.mlir" for k in ("ref", "other")}
        for kind in ("ref", "other"):
            fn = p[kind]
            text = fn if isinstance(fn, str) else \
                jax.jit(fn).lower(*[jax.ShapeDtypeStruct(sh, F32) for sh in shapes]).as_text(debug_info=True)
            (OUT / files[kind]).write_text(text)
        if not isinstance(p["ref"], str):
            args = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
            d = _max_diff(p["ref"], p["other"], args)
            if p["expect"] == "equivalent":
                assert d < 1e-5, f"{p['name']}: the correct twin differs by {d}"
            else:
                assert d > 1e-3, f"{p['name']}: the bug twin does not differ ({d})"
            print(f"{p['name']}: relative difference {d:.2e} on XLA at the original sizes")
        manifest.append({"pair": p["name"], "sizes": s, "expect": p["expect"], "what": p["what"], "files": files})
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
