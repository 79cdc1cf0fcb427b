"""Generate testdata/depth/trips/: pairs for shrinking's trip counters (rule l,
tv_mlir/shrink/trips.py; docs/shrinking.md "Trip counters"), with tests in
tests/test_scan_degrees.py.

Run from the repository root:

    .venv/bin/python testdata/gen_trips.py

Plain jax, global programs. H = 12 positions, L = 10 layers: the trip count L is also
H - 2, which rule (a) reads as a possible "size - 2" of H (as the 405B stack's 126 layers
are 128 heads - 2). Each pair is a reference, a correct twin and a bug twin, checked on
XLA (the correct twin equals the reference, the bug twin does not).

- `stack`: a scan over stacked weights ws [L, H] carrying (h, s): h = h * ws[i],
  s += sum(h * h). The counter only starts the slice ws[i] and counts the trips, so the
  bound names the layer dim only and H shrinks. `stack.good` is the same as a fori_loop
  writing the square as a power, `stack.bug` reads the layers last to first, ws[L - 1 - i]
  (a bug in the scanned body, in the counter's own arithmetic: L - 1 joins the counter).
- `escape` (adversarial): the counter also meets H's positions: acc = where(iota_H == i,
  x * ws[i], acc) over the L trips, so positions L..H-1 stay 0; ws[3] is added (a literal
  slice that keeps L at 10). `escape.bug` writes where(iota_H >= i, ...): positions h >= L
  get x * ws[L - 1, h]. At any H' <= L the two agree; only a rule that reads the bound as
  the layer count alone (ignoring the compare with positions) lets H shrink there.
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
OUT = ROOT / "testdata" / "depth" / "trips"
H, L = 12, 10


def stack_scan(x: jax.Array, ws: jax.Array) -> jax.Array:
    def layer(carry: tuple[jax.Array, jax.Array], w: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
        h, s = carry
        h = h * w
        return (h, s + jnp.sum(h * h)), None
    (_, s), _ = jax.lax.scan(layer, (x, jnp.float32(0)), ws)
    return s


def stack_fori(power: bool, bug: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        def layer(i: jax.Array, carry: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
            h, s = carry
            h = h * jax.lax.dynamic_index_in_dim(ws, L - 1 - i if bug else i, keepdims=False)
            return h, s + jnp.sum(h ** 2 if power else h * h)
        _, s = jax.lax.fori_loop(0, L, layer, (x, jnp.float32(0)))
        return s
    return fn


def escape(bug: bool) -> Callable[[jax.Array, jax.Array], jax.Array]:
    def fn(x: jax.Array, ws: jax.Array) -> jax.Array:
        pos = jnp.arange(H, dtype=jnp.int32)

        def layer(i: jax.Array, acc: jax.Array) -> jax.Array:
            w = jax.lax.dynamic_index_in_dim(ws, i, keepdims=False)
            hit = pos >= i if bug else pos == i
            return jnp.where(hit, x * w, acc)
        acc = jax.lax.fori_loop(0, L, layer, jnp.zeros((H,), jnp.float32))
        return acc + ws[3]
    return fn


PAIRS: dict[str, tuple[Callable, Callable, Callable]] = {
    "stack": (stack_scan, stack_fori(True, False), stack_fori(False, True)),
    "escape": (escape(False), escape(False), escape(True)),
}


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(11)
    x = rng.normal(size=(H,)).astype(np.float32)
    ws = (rng.normal(size=(L, H)) * 0.5 + 1.0).astype(np.float32)
    args = (jax.ShapeDtypeStruct((H,), jnp.float32), jax.ShapeDtypeStruct((L, H), jnp.float32))
    for name, (ref, good, bug) in PAIRS.items():
        want = np.asarray(jax.jit(ref)(x, ws))
        for twin, fn, same in (("good", good, True), ("bug", bug, False)):
            got = np.asarray(jax.jit(fn)(x, ws))
            assert np.allclose(got, want, rtol=1e-4, atol=1e-5) == same, f"{name}.{twin}: {got} against {want}"
            (OUT / f"{name}.{twin}.mlir").write_text(jax.jit(fn).lower(*args).as_text())
        (OUT / f"{name}.ref.mlir").write_text(jax.jit(ref).lower(*args).as_text())
    print(f"wrote {len(PAIRS)} pairs in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
