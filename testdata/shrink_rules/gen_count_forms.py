"""Adversarial pairs against rule (k)'s reading of counts beyond affine maps
(docs/shrinking.md, rule k "non-affine splits" and "rational degrees"), over a class of 64
entries and a count k = sum_i [x_i > 0]. Same form as gen_pole.py (a reference, a correct
twin and a bug twin, `<pair>.small.{ref,ok,bug}.mlir`, listed in `manifest_count_forms.json`);
the ground truth is XLA at the original size on inputs with exactly a given number of
positive entries, asserted here:

- `count_square`: s + 0.1 [k k - 2000 > 0] against s (the term left out): equal up to 44
  positive entries of 64, different from 45 (sqrt(2000) = 44.7). The compare's constant is
  0; where the count reaches it is 44.7.
- `count_rational` (52 entries, float64): Q(k) against -R(k) / (k + 1) / ... / (k + 5),
  where Q and R are the quotient and remainder of k (k - 1) ... (k - 13) by
  (k + 1) ... (k + 5): the difference is k (k - 1) ... (k - 13) / ((k + 1) ... (k + 5)),
  zero at 0..13 positive entries and not above. Each program alone has degree 9 (Q; and
  4 + 5 for the fraction), so rule (k) asked for 9 + 2 x 2 = 13 (52 / 4); the
  cross-multiplied difference has degree 14.

    .venv/bin/python testdata/shrink_rules/gen_count_forms.py
"""
from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)  # count_rational (count_square stays float32)

from gen_shrink_rules import OUT, Arg, Pair, _max_diff, write_twins  # noqa: E402

N = 64


def _count(x):
    return jnp.sum((x > 0).astype(jnp.float32))


def _mul(p: list[Fraction], q: list[Fraction]) -> list[Fraction]:
    """Coefficients, highest first."""
    out = [Fraction(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        for j, b in enumerate(q):
            out[i + j] += a * b
    return out


def _divmod(p: list[Fraction], q: list[Fraction]) -> tuple[list[Fraction], list[Fraction]]:
    p = list(p)
    quot: list[Fraction] = []
    while len(p) >= len(q):
        c = p[0] / q[0]
        quot.append(c)
        for j, b in enumerate(q):
            p[j] -= c * b
        p.pop(0)
    return quot, p


# count_rational over 52 entries, which shrink to 13 (= 52 / 4): the difference's numerator
# k (k - 1) ... (k - 13) vanishes at every count 13 entries reach; the denominator's zeros
# -1..-5 are at no count. Its quotient's coefficients reach 1e10: the pair is in float64
# (float32 constants would round, and the identity at 0..13 would not hold over the reals).
N_RATIONAL, ROOTS, POLES = 52, 14, 5
NUM = [Fraction(1)]
for _j in range(ROOTS):
    NUM = _mul(NUM, [Fraction(1), Fraction(-_j)])
DEN = [Fraction(1)]
for _j in range(1, POLES + 1):
    DEN = _mul(DEN, [Fraction(1), Fraction(_j)])
QUOT, REM = _divmod(NUM, DEN)
assert all(c.denominator == 1 and abs(c) < 2 ** 53 for c in QUOT + REM)


def _horner(cs: list[Fraction], k):
    out = jnp.full((), float(cs[0]), k.dtype)  # degree len(cs) - 1 in k, not one more
    for c in cs[1:]:
        out = out * k + float(c)
    return out


def count_square(n: int) -> Pair:
    f = jnp.float32  # float32 throughout (x64 is on for count_rational)

    def ref(x):
        k, s = _count(x), jnp.sum(x)
        return s + f(0.1) * jnp.where(k * k - f(2000.0) > f(0.0), f(1.0), f(0.0))

    def ok(x):
        k, s = _count(x), jnp.sum(x)
        return jnp.where(f(0.0) < k * k - f(2000.0), f(0.1), f(0.0)) + s

    def bug(x):
        return jnp.sum(x)

    return Pair("count_square", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "the term 0.1 [k k - 2000 > 0] left out: differs at 45 or more positive entries of 64")


def _count64(x):
    return jnp.sum((x > 0).astype(jnp.float64))


def count_rational(n: int) -> Pair:
    def ref(x):
        return _horner(QUOT, _count64(x))

    def ok(x):
        k = _count64(x)
        # the same polynomial, in powers of k summed from the lowest
        return sum(float(c) * k ** (len(QUOT) - 1 - i) for i, c in reversed(list(enumerate(QUOT))))

    def bug(x):
        k = _count64(x)
        out = -_horner(REM, k)
        for j in range(1, POLES + 1):
            out = out / (k + float(j))  # one affine denominator at a time (rule k, poles)
        return out

    return Pair("count_rational", "k", "small", {"n": n}, [Arg((n,), jnp.float64)], ref, ok, bug,
                f"Q(k) for -R(k) / ((k + 1) ... (k + {POLES})): equal at 0..{ROOTS - 1} positive entries of "
                f"{n}, not above")


def pairs() -> list[Pair]:
    return [count_square(N), count_rational(N_RATIONAL)]


def _with(n: int, count: int, seed: int = 7, dtype=np.float32) -> np.ndarray:
    """Inputs with exactly `count` positive entries (and the others negative)."""
    rng = np.random.default_rng(seed)
    x = -np.abs(rng.standard_normal(n)) - 0.1
    x[rng.permutation(n)[:count]] *= -1.0
    return x.astype(dtype)


def _differs(f, g, x: np.ndarray) -> bool:
    a, b = float(jax.jit(f)(x)), float(jax.jit(g)(x))
    tol = 1e-4 * max(1.0, abs(a)) if x.dtype == np.float32 else 1e-3  # count_rational: a difference >= 6e4
    return abs(a - b) > tol


# (equal at these counts, different at these) on XLA at the original size
WITNESS = {"count_square": (range(0, 45), range(45, N + 1)),
           "count_rational": (range(0, ROOTS), range(ROOTS, N_RATIONAL + 1))}


def main() -> int:
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ok_diff = _max_diff(p, p.ref, p.ok)
        assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
        same, other = WITNESS[p.name]
        n = p.sizes["n"]
        for c in list(same) + list(other):
            x = _with(n, c, dtype=np.dtype(p.args[0].dtype))
            assert not _differs(p.ref, p.ok, x), f"{stem}: the correct twin differs at {c} positives"
            assert _differs(p.ref, p.bug, x) == (c in other), f"{stem}: the bug twin at {c} positives"
        x = _with(n, other[0], dtype=np.dtype(p.args[0].dtype))
        print(f"{stem}: equal at {same[0]}..{same[-1]} positives, differs at {other[0]}..{other[-1]}; at "
              f"{other[0]} ref {float(jax.jit(p.ref)(x))}, bug {float(jax.jit(p.bug)(x))}")
        manifest.append(write_twins(p, stem, specs, True))
    (OUT / "manifest_count_forms.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
