"""Generate testdata/loops/: adversarial pairs for shrinking's rule l, loop degrees per
trip (tv_mlir/shrink/degree.py; docs/shrinking.md, rule l), with tests in
tests/test_scan_degrees.py.

Run from the repository root:

    .venv/bin/python testdata/gen_loops.py

Plain jax, global programs (no sharding): what is tested is the shrink plan and which proof
the verdict rests on. Every class of interest is a vector of N = 64 elements summed over.
Rule l takes a top-level loop's degree per trip (its carried values and results as free
inputs), which is sound only when the verdict's proof takes every such loop by induction.
Each pair is a reference, a correct twin and a bug twin; the generator checks on XLA that
the correct twin equals the reference and the bug twin does not, at N.

- `unrolled`: the reference cubes x by a 2-trip loop (y = x; y = y * x twice) and sums it:
  p3 = sum(x^3). The twins have no loop: `unrolled.good` sums x * x * x, `unrolled.bug`
  writes p3 by Newton's identity for two variables, 1.5 p1 p2 - 0.5 p1^3, which is p3 at
  N = 2 only. Per trip, the loop result is a free input (degree 1) and the bug twin's
  sums have degree 2, so rule l alone would shrink N to 2, where the bug hides. No proof
  by induction is possible (one program has no loop): the verdict must come from the
  composed degrees (3), which show the bug at N = 3.
- `body`: both programs scan over stacked weights ws [T, N] (T = 2), carrying (h, s):
  g = h * w_t, s += sum(g^5), h = g. Composed across the trips the summand's degree grows
  with T (5 (T + 1)); per trip it is 10 (h and w_t free). `body.good` writes the power as
  g * g * g * g * g, `body.bug` writes the trip's sum by Newton's identities with e5 = 0
  (sum(g^5) for at most 4 elements): a bug in the body over carried values, which
  per-trip degrees must still see (a rule that took carried values as constants, degree 0,
  shrinks N to 4, the least size above the literal T that rule a leaves, and hides it).
- `trips`: the same scan with the trip count the twins' only difference: `trips.good`
  runs T trips as a fori_loop reading ws[i], `trips.bug` runs T + 1 (the last trip reads
  the clamped last layer again). The bodies agree per trip; the loop conditions differ.
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

jax.config.update("jax_enable_x64", False)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "testdata" / "loops"
N = 64
T = 2


def cube_loop(x: jax.Array) -> jax.Array:
    y = jax.lax.fori_loop(0, 2, lambda _, y: y * x, x)
    return jnp.sum(y)


def cube_plain(x: jax.Array) -> jax.Array:
    return jnp.sum(x * x * x)


def cube_newton2(x: jax.Array) -> jax.Array:
    p1, p2 = jnp.sum(x), jnp.sum(x * x)
    return 1.5 * p1 * p2 - 0.5 * p1 * p1 * p1


def newton4_fifth_sum(g: jax.Array) -> jax.Array:
    """sum(g^5) by Newton's identities with e5 = 0: right for at most 4 elements."""
    p1, p2, p3, p4 = (jnp.sum(g ** k) for k in (1, 2, 3, 4))
    e1 = p1
    e2 = (e1 * p1 - p2) / 2
    e3 = (e2 * p1 - e1 * p2 + p3) / 3
    e4 = (e3 * p1 - e2 * p2 + e1 * p3 - p4) / 4
    return e1 * p4 - e2 * p3 + e3 * p2 - e4 * p1


def body_scan(trip_sum: Callable[[jax.Array], jax.Array]) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        def layer(carry: tuple[jax.Array, jax.Array], w: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
            h, s = carry
            g = h * w
            return (g, s + trip_sum(g)), None
        (_, s), _ = jax.lax.scan(layer, (x, jnp.sum(x)), ws)
        return s
    return fn


def trips_loop(trips: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        def layer(i: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            h, s = carry
            g = h * jax.lax.dynamic_index_in_dim(ws, i, keepdims=False)
            return g, s + jnp.sum(g * g * g)
        _, s = jax.lax.fori_loop(0, trips, layer, (x, jnp.sum(x)))
        return s
    return fn


PAIRS: dict[str, tuple[Callable, Callable, Callable, bool]] = {
    # name: reference, correct twin, bug twin, takes ws
    "unrolled": (cube_loop, cube_plain, cube_newton2, False),
    "body": (body_scan(lambda g: jnp.sum(g ** 5)), body_scan(lambda g: jnp.sum(g * g * g * g * g)),
             body_scan(newton4_fifth_sum), True),
    "trips": (trips_loop(T), trips_loop(T), trips_loop(T + 1), True),
}


def main() -> int:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N,)).astype(np.float32)
    ws = (rng.normal(size=(T, N)) * 0.5 + 1.0).astype(np.float32)
    for name, (ref, good, bug, with_ws) in PAIRS.items():
        args = (jax.ShapeDtypeStruct((N,), jnp.float32),) + ((jax.ShapeDtypeStruct((T, N), jnp.float32),)
                                                             if with_ws else ())
        vals = (x, ws) if with_ws else (x,)
        want = float(jax.jit(ref)(*vals))
        for twin, fn, same in (("good", good, True), ("bug", bug, False)):
            got = float(jax.jit(fn)(*vals))
            close = abs(got - want) <= 1e-3 * max(1.0, abs(want))
            assert close == same, f"{name}.{twin}: {got} against {want}"
            (OUT / f"{name}.{twin}.mlir").write_text(jax.jit(fn).lower(*args).as_text())
        (OUT / f"{name}.ref.mlir").write_text(jax.jit(ref).lower(*args).as_text())
    print(f"wrote {len(PAIRS)} pairs in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
