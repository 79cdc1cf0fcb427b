"""Shrinking pairs for `chlo.square` (helper-47; docs/shrinking.md, "Squares"): jax's
`lax.square` (flax's RMSNorm and LayerNorm variance) lowers to `chlo.square`, which the
verifier computes as x * x (semantics/elementwise.py), a polynomial, not an atom.

- `square_degree` (Newton's degree): p_4 = sum(square(square(x))) over the tokens against the
  bug's two-variable form of p_4 in p_1 = sum(x) and p_2 = sum(square(x)) (Newton's
  identities with e_3 = e_4 = 0), which agrees at 1 and 2 tokens only. Read as an atom
  (degree 1), a square let the tokens shrink to 2, where the bug is the reference.
- `square_const` (constant terms): sum(square(x + 1)) is p_2 + 2 p_1 + T (the token count);
  the bug writes 2 where T belongs. square(x) has a constant term exactly where x has one,
  so this sum counts the tokens; the correct twin's sum(square(x)) + 2 sum(x) + T does not
  make the tokens counted through its square.

Same form as testdata/gen_shrink_rules.py (its helpers): `testdata/squares/<pair>.small.
{ref,ok,bug}.mlir`, `manifest.json`. Every twin is run on XLA at its original sizes (random
inputs): the generator asserts that the correct twin agrees with the reference and the bug
twin differs.

    .venv/bin/python testdata/gen_squares.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_shrink_rules  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import Arg, Pair, write_manifest  # noqa: E402
from jax import lax  # noqa: E402

OUT = Path(__file__).resolve().parent / "squares"


def _p4_two_tokens(x: jax.Array) -> jax.Array:
    """p_4 by Newton's identities in two variables: p_4 = p_1^2 p_2 - e_2 (p_1^2 + p_2) with
    e_2 = (p_1^2 - p_2) / 2 (true at 1 and 2 tokens, where e_3 = e_4 = 0)."""
    p1, p2 = jnp.sum(x, axis=0), jnp.sum(lax.square(x), axis=0)
    e2 = (p1 * p1 - p2) * 0.5  # no literal 2 for rule a to order the tokens with
    return p1 * p1 * p2 - e2 * (p1 * p1 + p2)


def square_degree(t: int, hd: int) -> Pair:
    return Pair("square_degree", "newton", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd))],
                lambda x: jnp.sum(lax.square(lax.square(x)), axis=0), lambda x: jnp.sum(x * x * x * x, axis=0),
                _p4_two_tokens, "p_4 written by Newton's identities for two tokens")


def square_const(t: int, hd: int) -> Pair:
    return Pair("square_const", "newton", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd))],
                lambda x: jnp.sum(lax.square(x + 1.0), axis=0),
                lambda x: jnp.sum(lax.square(x), axis=0) + 2.0 * jnp.sum(x, axis=0) + float(t),
                lambda x: jnp.sum(lax.square(x), axis=0) + 2.0 * jnp.sum(x, axis=0) + 2.0,
                f"the square's constant term summed: 2 where {t} belongs")


def pairs() -> list[Pair]:
    return [square_degree(16, 4), square_const(16, 4)]


def main() -> int:
    jax.config.update("jax_enable_x64", False)
    OUT.mkdir(exist_ok=True)
    gen_shrink_rules.OUT = OUT  # write_twins and write_manifest write there
    return write_manifest(pairs(), "manifest.json", ok_tol=1e-4)


if __name__ == "__main__":
    raise SystemExit(main())
