"""Generate testdata/depth/calls/: an adversarial pair for shrinking's rule (s), one copy
of a function per call site (tv_mlir/shrink/dims.py `split_call_sites`; docs/stages.md,
"Call sites"), with tests in tests/test_depth_calls.py.

Run from the repository root:

    .venv/bin/python testdata/gen_calls.py

Plain jax, global programs. H = 16 positions, L = 3 layers. A fori_loop over the layers
slices two stacked weights ws1, ws2 [L, H] at the counter; jax lowers both slices to
calls of one function (`dynamic_index_in_dim`), as the decoder stacks slice wq, wk, wv
and wo. The two call sites really share H: the body combines both slices,

    h = h * where(pos < 10, w1, 0) + w2

so the position bound 10 (rule b) holds for ws2's H as much as for ws1's. `shared.bug`
writes where(pos < 10, h * w1 + w2, 0): it drops w2 at positions 10 to 15 only, so it
agrees with the reference at every H' <= 10. A split that separated the call sites'
classes where the program joins them (the call's results not joined with the copy's
returns) lets ws2's H shrink below 11 and hides it. `shared.good` writes the same
reference with the mask taken after the add. Each twin is checked on XLA.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "testdata" / "depth" / "calls"
H, L = 16, 3


def shared(twin: str) -> Callable[[jax.Array, jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws1: jax.Array, ws2: jax.Array) -> jax.Array:
        pos = jnp.arange(H, dtype=jnp.int32)

        def layer(i: jax.Array, h: jax.Array) -> jax.Array:
            w1 = jax.lax.dynamic_index_in_dim(ws1, i, keepdims=False)
            w2 = jax.lax.dynamic_index_in_dim(ws2, i, keepdims=False)
            if twin == "bug":
                return jnp.where(pos < 10, h * w1 + w2, 0.0)
            if twin == "good":
                return h * jnp.where(pos < 10, w1, 0.0) + jnp.where(pos < 10, w2, w2)
            return h * jnp.where(pos < 10, w1, 0.0) + w2
        return jax.lax.fori_loop(0, L, layer, x)
    return fn


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(13)
    x = rng.normal(size=(H,)).astype(np.float32)
    ws1 = (rng.normal(size=(L, H)) * 0.5 + 1.0).astype(np.float32)
    ws2 = rng.normal(size=(L, H)).astype(np.float32)
    args = (jax.ShapeDtypeStruct((H,), jnp.float32), jax.ShapeDtypeStruct((L, H), jnp.float32),
            jax.ShapeDtypeStruct((L, H), jnp.float32))
    ref = shared("ref")
    want = np.asarray(jax.jit(ref)(x, ws1, ws2))
    text = jax.jit(ref).lower(*args).as_text()
    assert text.count("call @dynamic_index_in_dim(") == 2, "the two slices are not one function's call sites"
    (OUT / "shared.ref.mlir").write_text(text)
    for twin, same in (("good", True), ("bug", False)):
        got = np.asarray(jax.jit(shared(twin))(x, ws1, ws2))
        assert np.allclose(got, want, rtol=1e-4, atol=1e-5) == same, f"shared.{twin}: {got} against {want}"
        (OUT / f"shared.{twin}.mlir").write_text(jax.jit(shared(twin)).lower(*args).as_text())
    print(f"wrote shared.{{ref,good,bug}}.mlir in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
