"""Generate testdata/trip_predicates/: pairs for shrinking's trip predicates (rule l's
compare of a loop counter with an integer literal, tv_mlir/shrink/trips.py
`TRIP_PREDICATES`; docs/shrinking.md "Trip predicates"), with tests in
tests/test_shrink_trip_predicates.py.

Run from the repository root:

    .venv/bin/python testdata/shrink_rules/gen_trip_predicates.py

Plain jax, global programs. H = 12 positions, L = 10 layers: the trip count L is also
H - 2 (as the 405B stack's 126 layers are 128 heads - 2). Each pair is a reference, a
correct twin and a bug twin, checked on XLA.

- `pick`: a scan over stacked weights ws [L, H] carrying (h, s): h = h * ws[i],
  s += sum(h * h). The twins carry the layer index i in the scan (as the 405B scan's bug
  twin does) and test it against a literal: `pick.good` writes the layer as
  where(i == 7, w * h, h * w) (the same value either way), `pick.bug` skips layer 7's
  weight, where(i == 7, h, h * w) (issue 13's seeded bug in the scanned body).
- `count` (adversarial): the counter meets a value of H's size, not a literal:
  where(i == k, h * w, h) with k = (sum over H of ones) - 3, layer 9 at H = 12.
  `count.bug` also asks i < 4, which changes nothing while k < 4 (every H' < 7) but drops
  layer 9 at H = 12.
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

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "testdata" / "trip_predicates"
H, L = 12, 10
Carry = tuple[jax.Array, jax.Array]


def ref(x: jax.Array, ws: jax.Array) -> jax.Array:
    def layer(carry: Carry, w: jax.Array) -> tuple[Carry, None]:
        h, s = carry
        h = h * w
        return (h, s + jnp.sum(h * h)), None
    (_, s), _ = jax.lax.scan(layer, (x, jnp.float32(0)), ws)
    return s


def pick(bug: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        def layer(carry: tuple[jax.Array, jax.Array, jax.Array], w: jax.Array
                  ) -> tuple[tuple[jax.Array, jax.Array, jax.Array], None]:
            h, s, i = carry
            h = jnp.where(i == 7, h if bug else w * h, h * w)
            return (h, s + jnp.sum(h * h), i + 1), None
        (_, s, _), _ = jax.lax.scan(layer, (x, jnp.float32(0), jnp.int32(0)), ws)
        return s
    return fn


def count(bug: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        k = jnp.sum((x * 0 + 1).astype(jnp.int32)) - 3  # H - 3 = 9

        def layer(carry: tuple[jax.Array, jax.Array], w: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
            h, i = carry
            hit = (i == k) & (i < 4) if bug else i == k
            return (jnp.where(hit, h * w, h), i + 1), None
        (h, _), _ = jax.lax.scan(layer, (x, jnp.int32(0)), ws)
        return jnp.sum(h * h)
    return fn


PAIRS: dict[str, tuple[Callable, Callable, Callable]] = {
    "pick": (ref, pick(False), pick(True)),
    "count": (count(False), count(False), count(True)),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(13)
    x = rng.normal(size=(H,)).astype(np.float32)
    ws = (rng.normal(size=(L, H)) * 0.5 + 1.0).astype(np.float32)
    args = (jax.ShapeDtypeStruct((H,), jnp.float32), jax.ShapeDtypeStruct((L, H), jnp.float32))
    for name, (r, good, bug) in PAIRS.items():
        want = np.asarray(jax.jit(r)(x, ws))
        for twin, fn, same in (("good", good, True), ("bug", bug, False)):
            got = np.asarray(jax.jit(fn)(x, ws))
            assert np.allclose(got, want, rtol=1e-4, atol=1e-5) == same, f"{name}.{twin}: {got} against {want}"
            (OUT / f"{name}.{twin}.mlir").write_text(jax.jit(fn).lower(*args).as_text())
        (OUT / f"{name}.ref.mlir").write_text(jax.jit(r).lower(*args).as_text())
    print(f"wrote {len(PAIRS)} pairs in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
