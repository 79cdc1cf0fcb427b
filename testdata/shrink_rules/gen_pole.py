"""Adversarial pairs against rule (k)'s reading of a division (docs/shrinking.md, rule k
"poles"): a count k = sum_i [x_i > 0] in a denominator `k - c`. Rule (k) gave a divide the
sum of its operands' degrees, as if 1 / (k - c) were a polynomial in k; it is one only
where k != c. At a count c that the original size reaches and the shrunk one does not, one
twin is inf or NaN and the other is not (or is the other infinity), and nothing else
differs. Same form as testdata/gen_shrink_rules.py (a reference, a correct twin and a bug
twin, `<pair>.small.{ref,ok,bug}.mlir`, listed in `manifest_pole.json`); the ground truth
is XLA at the original size on inputs with exactly c positive entries (random inputs
almost never hit one count), asserted here:

- `pole_nan`: s / (k + 1) against s (k - 20) / ((k + 1)(k - 20)) (a factor cancelled in
  the reference and not in the bug) over 32 entries: equal at every count but 20, where
  the bug is NaN. Rule (k) without poles shrank the class to 8 and proved the pair equal.

- `count_offset`: s + 0.1 max(k - 20, 0) against s (the penalty left out): equal up to 20
  positive entries. Rule (k)'s threshold read the clip's constant (0), not where the
  count reaches it (20), and the class shrank to 4.

The same written (q - s) / (k - 20) against (s - q) / (20 - k) (the opposite infinity at
the pole) is rule (k)'s too, but the solver times out on it at any size: not a test pair.

    .venv/bin/python testdata/shrink_rules/gen_pole.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import OUT, Arg, Pair, _max_diff, write_twins  # noqa: E402

POLE = 20.0


def _count(x):
    return jnp.sum((x > 0).astype(jnp.float32))


def pole_nan(n: int) -> Pair:
    def ref(x):
        k, s = _count(x), jnp.sum(x)
        return s / (k + 1.0)

    def ok(x):
        k, s = _count(x), jnp.sum(x)
        return s * (1.0 / (1.0 + k))

    def bug(x):
        k, s = _count(x), jnp.sum(x)
        return s * (k - POLE) / ((k + 1.0) * (k - POLE))

    return Pair("pole_nan", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "s (k - 20) / ((k + 1)(k - 20)) for s / (k + 1): NaN at 20 positive entries of 32")


def count_offset(n: int) -> Pair:
    def ref(x):
        k, s = _count(x), jnp.sum(x)
        return s + 0.1 * jnp.maximum(k - POLE, 0.0)

    def ok(x):
        k, s = _count(x), jnp.sum(x)
        return 0.1 * jnp.maximum(0.0, k - POLE) + s

    def bug(x):
        return jnp.sum(x)

    return Pair("count_offset", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "the penalty 0.1 max(k - 20, 0) left out: differs at more than 20 positive entries of 32")


def pairs() -> list[Pair]:
    return [pole_nan(32), count_offset(32)]


def _at_pole(n: int, seed: int, count: int = int(POLE)) -> np.ndarray:
    """Inputs with exactly `count` positive entries (and the others negative)."""
    rng = np.random.default_rng(seed)
    x = -np.abs(rng.standard_normal(n)) - 0.1
    x[rng.permutation(n)[:count]] *= -1.0
    return x.astype(np.float32)


def _differs_at_pole(p: Pair, f, g) -> bool:
    x = _at_pole(p.sizes["n"], 7, int(POLE) + (4 if p.name == "count_offset" else 0))
    a, b = float(jax.jit(f)(x)), float(jax.jit(g)(x))
    if not (np.isfinite(a) and np.isfinite(b)):
        return not (a == b or (np.isnan(a) and np.isnan(b)))
    return abs(a - b) > 1e-4 * max(1.0, abs(a))


def main() -> int:
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
        assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
        if p.name == "pole_nan":
            assert bug_diff < 1e-5, f"{stem}: the bug twin differs off the pole ({bug_diff})"
        assert not _differs_at_pole(p, p.ref, p.ok), f"{stem}: the correct twin differs at the pole"
        assert _differs_at_pole(p, p.ref, p.bug), f"{stem}: the bug twin does not differ at the pole"
        x = _at_pole(p.sizes["n"], 7, int(POLE) + (4 if p.name == "count_offset" else 0))
        print(f"{stem}: random inputs ok {ok_diff:.2e}, bug {bug_diff:.2e}; at {int((x > 0).sum())} positives "
              f"ref {float(jax.jit(p.ref)(x))}, bug {float(jax.jit(p.bug)(x))}")
        manifest.append(write_twins(p, stem, specs, True))
    (OUT / "manifest_pole.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
