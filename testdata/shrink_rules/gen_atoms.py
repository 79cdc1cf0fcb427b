"""Adversarial pairs against rule (k)'s "atoms" (docs/shrinking.md, rule k "atoms": a count
through an uninterpreted op or max/min keeps its argument's degree). Same form and XLA
ground truth as testdata/gen_shrink_rules.py: per pair a reference, a correct twin and a
bug twin, run on XLA at their original sizes (the correct twin agrees with the reference,
the bug twin differs), written to `<pair>.small.{ref,ok,bug}.mlir` and listed in
`manifest_atoms.json`.

Every bug twin differs from its reference only on counts the shrunk size the atoms rule
picks never reaches:
- `count_max`: max(k, 2k - 20) against max(k, 2k - 40): the pieces cross at a count (20)
  that no constant compared with a count names, so the degree (1) asks for T + 1 = 3
  positions and the crossing is never reached;
- `count_max_reduce`: the same max written as a max reduction over a stacked pair;
- `exp_coincide`: e^h (e^u - 1)(e^v - 1)(e^w - 1) = 0 written out as two sums of four exps
  (exp(u+v+w+h) + exp(u+h) + exp(v+h) + exp(w+h) against exp(u+v+h) + exp(u+w+h) +
  exp(v+w+h) + exp(h)), u, v, w the products of (k - j) over j = 0..2, 3..5, 6..8 (scaled),
  h = k / 100: equal on k = 0..8, where one of u, v, w vanishes, and not beyond (the
  arguments are equal as sets there, not as polynomials). Each exp's argument has degree 3,
  so the rule asks for D + T d = 3 + 2 x 2 = 7 of 64 positions, 8: every count 0..8 makes
  atoms' arguments coincide, and the degree argument (a difference of degree 3 vanishing at
  9 points) never applies to the generic case;
- `count_pow`: k^5 written `lax.pow(k, 5.0)` against its interpolant on k = 0..4 (k^5 -
  k(k-1)(k-2)(k-3)(k-4)); the verifier multiplies a power with a small integer exponent
  out, so it is no uninterpreted atom: its degree is 5, not its argument's 1.

    .venv/bin/python testdata/shrink_rules/gen_atoms.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import OUT, RUN_LIMIT, Arg, Pair, _max_diff, write_twins  # noqa: E402
from jax import lax  # noqa: E402


def _count(x):
    return jnp.sum((x > 0).astype(jnp.float32))


def count_max(n: int) -> Pair:
    def ref(x):
        k = _count(x)
        return jnp.maximum(k, 2.0 * k - 20.0) + jnp.sum(x)

    def ok(x):
        k = _count(x)
        return jnp.sum(x) + jnp.maximum(2.0 * k - 20.0, k)

    def bug(x):
        k = _count(x)
        return jnp.maximum(k, 2.0 * k - 40.0) + jnp.sum(x)

    return Pair("count_max", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "max(k, 2k - 40) for max(k, 2k - 20): equal for counts up to 20")


def count_max_reduce(n: int) -> Pair:
    def ref(x):
        k = _count(x)
        return jnp.max(jnp.stack([k, 2.0 * k - 20.0])) + jnp.sum(x)

    def ok(x):
        k = _count(x)
        return jnp.sum(x) + jnp.max(jnp.stack([2.0 * k - 20.0, k]))

    def bug(x):
        k = _count(x)
        return jnp.max(jnp.stack([k, 2.0 * k - 40.0])) + jnp.sum(x)

    return Pair("count_max_reduce", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "a max reduction over (k, 2k - 40) for (k, 2k - 20): equal for counts up to 20")


def exp_coincide(n: int) -> Pair:
    scale = 3e-5  # s w1 is about 0.9 at k = 32 of 64

    def args(x):
        k = _count(x)
        u = scale * k * (k - 1.0) * (k - 2.0)
        v = scale * (k - 3.0) * (k - 4.0) * (k - 5.0)
        w = scale * (k - 6.0) * (k - 7.0) * (k - 8.0)
        return u, v, w, 0.01 * k

    def ref(x):
        u, v, w, h = args(x)
        e = jnp.exp
        return e(u + v + w + h) + e(u + h) + e(v + h) + e(w + h) + jnp.sum(x)

    def ok(x):
        u, v, w, h = args(x)
        e = jnp.exp
        return jnp.sum(x) + e(w + h) + e(v + h) + e(u + h) + e(u + v + w + h)

    def bug(x):
        u, v, w, h = args(x)
        e = jnp.exp
        return e(u + v + h) + e(u + w + h) + e(v + w + h) + e(h) + jnp.sum(x)

    return Pair("exp_coincide", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "exp(u+v+h) + exp(u+w+h) + exp(v+w+h) + exp(h) for exp(u+v+w+h) + exp(u+h) + exp(v+h) + "
                "exp(w+h): equal wherever u, v or w vanishes, k <= 8")


def count_pow(n: int) -> Pair:
    scale = 1e-2  # k^5 - its interpolant is 1.2 at k = 5, the first count it differs at

    def p(k, e):
        return lax.pow(k, jnp.float32(e))

    def ref(x):
        return scale * p(_count(x), 5.0) + jnp.sum(x)

    def ok(x):
        k = _count(x)
        return jnp.sum(x) + scale * (k * p(k, 4.0))

    def bug(x):
        k = _count(x)
        interp = 10.0 * p(k, 4.0) - 35.0 * p(k, 3.0) + 50.0 * p(k, 2.0) - 24.0 * k
        return scale * interp + jnp.sum(x)

    return Pair("count_pow", "k", "small", {"n": n}, [Arg((n,))], ref, ok, bug,
                "k^5 replaced by its interpolant on k = 0..4 (lax.pow with constant exponents)")


def pairs() -> list[Pair]:
    return [count_max(64), count_max_reduce(64), exp_coincide(64), count_pow(64)]


def main() -> int:
    manifest = []
    for p in pairs():
        stem = f"{p.name}.{p.variant}"
        specs = [a.spec() for a in p.args]
        ran = sum(int(np.prod(a.shape)) for a in p.args) <= RUN_LIMIT
        if ran:
            ok_diff, bug_diff = _max_diff(p, p.ref, p.ok), _max_diff(p, p.ref, p.bug)
            assert ok_diff < 1e-5, f"{stem}: the correct twin differs from the reference by {ok_diff}"
            assert bug_diff > 1e-3, f"{stem}: the bug twin does not differ from the reference ({bug_diff})"
            print(f"{stem}: ok {ok_diff:.2e}, bug {bug_diff:.2e}")
        manifest.append(write_twins(p, stem, specs, ran))
    (OUT / "manifest_atoms.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
