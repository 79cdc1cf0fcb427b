"""Shrinking-rule pairs for halves written as pads (docs/shrinking.md, "Halves", pads;
switch dim_rules.PAD_HALVES). jax transposes a half slice `x[:, :h]` into `pad(g, hi=h)`
and `x[:, h:]` into `pad(g, lo=h)`: RoPE's backward. Same form and XLA ground truth as
testdata/gen_shrink_rules.py: a reference, a correct twin and a bug twin, run on XLA at
their original sizes, written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in
`manifest_pad_halves.json`.

    .venv/bin/python testdata/shrink_rules/gen_pad_halves.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import Arg, Pair, write_manifest  # noqa: E402


def _rotate_half(x):
    h = x.shape[-1] // 2
    return jnp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


# RoPE's rotate-half, transposed: the reference is jax's vjp (two pads by the half, added);
# the correct twin writes the adjoint by hand, concat(g2, -g1) (the halves as a product,
# (2, h)); the bug stacks the halves after the positions, an interleave ((h, 2)): the dim is
# read two ways and keeps its size. At one element per half a concatenation and an
# interleave are the same vector: a rule that read the pad's halves minor-first would hide it.
def pad_halves(s: int, d: int, variant: str) -> Pair:
    h = d // 2

    def ref(x, g):
        return jax.vjp(_rotate_half, x)[1](g)[0] * x

    def ok(x, g):
        return jnp.concatenate([g[:, h:], -g[:, :h]], axis=1) * x

    def bug(x, g):
        return jnp.stack([g[:, h:], -g[:, :h]], axis=-1).reshape(s, d) * x

    return Pair("pad_halves", "h", variant, {"seq": s, "head_dim": d}, [Arg((s, d)), Arg((s, d))], ref, ok, bug,
                "the adjoint's halves interleaved (stacked after the positions), not concatenated")


def pairs() -> list[Pair]:
    return [pad_halves(8, 128, "small"), pad_halves(2048, 128, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_pad_halves.json")


if __name__ == "__main__":
    raise SystemExit(main())
