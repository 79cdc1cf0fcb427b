"""Generate testdata/depth/order/: pairs for rule (a)'s order with trip constants
(tv_mlir/shrink/trips.py `trips_apart`, switch TRIP_ORDER; docs/stages.md, "Trip
constants in rule (a)'s order"), with tests in tests/test_depth_calls.py.

Run from the repository root:

    .venv/bin/python testdata/gen_trip_order.py

Plain jax, global programs. H = 16 positions, L = 10 layers: a fori_loop over ws [L, H]
makes h = h * ws[i], so the bound 10 is a trip constant (it only counts the trips and
starts the slices ws[i]). Rule (a) keeps every size value in order with every literal:
the mean's divisor 16 (hidden's size) must stay above 10, so H kept 11 or more.

- `apart`: the output is mean(h). The only 10 is the trip bound, which meets no size
  value of H: with the rule, H shrinks below 10. `apart.good` writes the mean as
  sum(h) / 16.
- `meets` (adversarial): the same loop, and the output divides sum(h) by the count of
  H's positions, clamped at 10 in the bug twin: sum(h) / min(count, 10). At the original
  sizes that divides by 10, not 16; at any H' <= 10 it divides by H', as the reference's
  mean does. This 10 meets the count, so the literal is not only a trip constant: a rule
  that exempted a literal when any one of its occurrences is a trip constant would let H
  shrink to where the twins agree. `meets.good` divides by the unclamped count.
Each twin is checked on XLA.
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
OUT = ROOT / "testdata" / "depth" / "order"
H, L = 16, 10


def _stack(x: jax.Array, ws: jax.Array) -> jax.Array:
    def layer(i: jax.Array, h: jax.Array) -> jax.Array:
        return h * jax.lax.dynamic_index_in_dim(ws, i, keepdims=False)
    return jax.lax.fori_loop(0, L, layer, x)


def apart(twin: str) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        h = _stack(x, ws)
        return jnp.sum(h) / 16.0 if twin == "good" else jnp.mean(h)
    return fn


def meets(twin: str) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        h = _stack(x, ws)
        if twin == "ref":
            return jnp.mean(h)
        # The ones are stacked with h only to tie their dim to H (a fresh ones_like is a
        # class of its own); the count is the sum of the ones' row.
        count = jnp.sum(jnp.stack([h, jnp.ones_like(h)])[1])
        return jnp.sum(h) / (jnp.minimum(count, 10.0) if twin == "bug" else count)
    return fn


PAIRS: dict[str, Callable[[str], Callable[[jax.Array, jax.Array], jax.Array]]] = {"apart": apart, "meets": meets}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(17)
    x = rng.normal(size=(H,)).astype(np.float32)
    ws = (rng.normal(size=(L, H)) * 0.2 + 1.0).astype(np.float32)
    args = (jax.ShapeDtypeStruct((H,), jnp.float32), jax.ShapeDtypeStruct((L, H), jnp.float32))
    for name, make in PAIRS.items():
        want = np.asarray(jax.jit(make("ref"))(x, ws))
        (OUT / f"{name}.ref.mlir").write_text(jax.jit(make("ref")).lower(*args).as_text())
        twins = (("good", True), ("bug", False)) if name == "meets" else (("good", True),)
        for twin, same in twins:
            got = np.asarray(jax.jit(make(twin))(x, ws))
            assert np.allclose(got, want, rtol=1e-4, atol=1e-5) == same, f"{name}.{twin}: {got} against {want}"
            (OUT / f"{name}.{twin}.mlir").write_text(jax.jit(make(twin)).lower(*args).as_text())
    print(f"wrote {len(PAIRS)} pairs in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
