"""Shrinking-rule pairs for halves and RoPE's frequency divisor (docs/shrinking.md,
"Halves"). Same form and XLA ground truth as testdata/gen_shrink_rules.py: per pair and
variant a reference, a correct twin and a bug twin, run on XLA at their original sizes (the
correct twin agrees with the reference, the bug twin differs), written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_halves.json`.

    .venv/bin/python testdata/shrink_rules/gen_halves.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import Arg, Pair, write_manifest  # noqa: E402


# (halves) The halves of a dim swapped: `concat(x[:, h:], x[:, :h])` reads the dim as
# (2, h), the half index major. The correct twin stacks the halves on a new axis before the
# dim's pieces and reshapes ((2, h) again); the bug stacks them after (an interleave,
# (h, 2)): the same vector at h = 1, different from h = 2 on. A halves rule that read the
# dim in the wrong order (minor x major) would agree with the bug's reshape and shrink h to
# 1, where the bug hides; read right, the two splits disagree and the dim keeps its size.
def halves_swap(s: int, d: int, variant: str) -> Pair:
    h = d // 2

    def ref(x):
        return jnp.concatenate([x[:, h:], x[:, :h]], axis=1) * 2.0

    def ok(x):
        return jnp.stack([x[:, h:], x[:, :h]], axis=1).reshape(s, d) * 2.0

    def bug(x):
        return jnp.stack([x[:, h:], x[:, :h]], axis=2).reshape(s, d) * 2.0

    return Pair("halves_swap", "halves", variant, {"tokens": s, "dim": d}, [Arg((s, d))], ref, ok, bug,
                "the halves interleaved (stacked after the dim's pieces) instead of concatenated")


# (halves, RoPE) Rotary embedding by halves on q and k (head_dim d, `x[..., :d/2]`,
# `x[..., d/2:]`), with frequencies 1 / 10000^(arange(0, d, 2) / d): the float d divides
# positions only, and names two classes of one size, q/k's head_dim and v's (an attention
# without softmax, (q k^T) v). The correct twin writes the rotation as x cos + rot(x) sin
# (rot(x) = concat(-x2, x1), cos and sin repeated over both halves); the bug divides the
# frequencies' positions by d - 2: a size - 2 constant, which rule (a) keeps inside the
# shrunk head_dim.
def rope_halves(s: int, d: int, variant: str) -> Pair:
    h = d // 2

    def angles():
        pos = jnp.arange(s, dtype=jnp.float32)
        freqs = 1.0 / (10000.0 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / d))
        return pos[:, None] * freqs[None, :]

    def rope_halves_(x, a):
        c, n = jnp.cos(a), jnp.sin(a)
        x1, x2 = x[:, :h], x[:, h:]
        return jnp.concatenate([x1 * c - x2 * n, x1 * n + x2 * c], axis=1)

    def rope_rot(x, a):
        c, n = jnp.concatenate([jnp.cos(a)] * 2, axis=1), jnp.concatenate([jnp.sin(a)] * 2, axis=1)
        rot = jnp.concatenate([-x[:, h:], x[:, :h]], axis=1)
        return x * c + rot * n

    def attend(rope, a):
        def fn(q, k, v):
            return (rope(q, a()) @ rope(k, a()).T) @ v
        return fn

    def bug_angles():
        pos = jnp.arange(s, dtype=jnp.float32)
        freqs = 1.0 / (10000.0 ** (jnp.arange(0, d, 2, dtype=jnp.float32) / (d - 2)))
        return pos[:, None] * freqs[None, :]

    return Pair("rope_halves", "halves", variant, {"tokens": s, "head_dim": d},
                [Arg((s, d)), Arg((s, d)), Arg((s, d))],
                attend(rope_halves_, angles), attend(rope_rot, angles), attend(rope_halves_, bug_angles),
                "the frequencies' positions divided by head_dim - 2")


def pairs() -> list[Pair]:
    return [halves_swap(4, 8, "small"), halves_swap(64, 128, "big"),
            rope_halves(8, 16, "small"), rope_halves(64, 128, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_halves.json")

if __name__ == "__main__":
    raise SystemExit(main())
