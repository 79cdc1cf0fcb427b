"""Shrinking-rule pairs for rule (a)'s literals that meet, at calls (docs/shrinking.md, rule a
"a call's meets are its callee's"). Same form and XLA ground truth as
testdata/gen_shrink_rules.py: per pair and variant a reference, a correct twin and a bug
twin, run on XLA at their original sizes (the correct twin agrees with the reference, the
bug twin differs), written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in
`manifest_call_meets.json`.

    .venv/bin/python testdata/shrink_rules/gen_call_meets.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import F32, I32, Arg, Pair, write_manifest  # noqa: E402


# (a, a call's meets) An embedding lookup with the ids clipped into [0, V - 1], scaled
# by a RoPE-like frequency table `1 / base^(j / h)` over the hidden positions, then by a weight
# `w`. The twins do the lookup in a jitted helper `pick(emb, ids, last, scale)` (a
# `func.call`) that clamps the ids at its argument `last` and multiplies the rows by `scale`:
# the call's operands hold the frequency table (which the base meets) next to the bound, as
# the 8B backward's `_take` call holds the gradient next to the ids. The correct twin passes
# the vocabulary's last row V - 1 (a size value); inside the helper it meets only the ids, so
# the base need not keep the vocabulary above it (it did while a call's other operands counted
# as met). The bug passes the literal `cap`: inside the helper it clamps the ids, as V - 1
# does, so the vocabulary must stay above it; a rule that stopped at the call (the call read
# as an op carrying its operands to its results, the callee not entered) would see the cap
# meet only `w`, shrink the vocabulary below it, and the clamp at the cap would never bite.
def call_meet(v: int, h: int, n: int, base: float, cap: int, variant: str) -> Pair:
    def scale() -> jax.Array:
        return 1.0 / (base ** (jnp.arange(h, dtype=jnp.float32) / h))

    @jax.jit
    def pick(emb: jax.Array, ids: jax.Array, last: jax.Array, sc: jax.Array) -> jax.Array:
        return jnp.take(emb, jnp.minimum(ids, last), axis=0, mode="clip") * sc[None, :]

    def ref(emb, ids, w):  # the lookup by indexing, no call: V - 1 meets the ids and the rows' index
        return emb[jax.lax.clamp(0, ids, v - 1)] * scale()[None, :] * w[None, :]

    def ok(emb, ids, w):
        return pick(emb, ids, jnp.int32(v - 1), scale()) * w[None, :]

    def bug(emb, ids, w):
        return pick(emb, ids, jnp.int32(cap), scale()) * w[None, :]

    return Pair("call_meet", "a", variant, {"vocab": v, "hidden": h, "tokens": n, "base": int(base), "cap": cap},
                [Arg((v, h)), Arg((n,), I32, v), Arg((h,), F32)], ref, ok, bug,
                f"the ids clamped at the literal {cap} (inside a called helper) instead of the vocabulary's last row")


# (a, a hole this does not close) The lookup with no size constant at all: jnp.take's "clip"
# mode is the gather's own clamp of its start index into [0, V - 1], written as no constant.
# The bug clamps the ids at the literal `cap` first. Rule (a) orders literals with size
# values, and here there is none: the cap meets the gather's index (its reach records the
# vocabulary's dims) but nothing keeps the vocabulary above it, so it shrinks to 2, where
# min(ids, cap) and the gather's clamp agree; only the full-size check catches the bug
# (tests/test_shrink_call_meets.py holds this as a strict xfail).
def gather_cap(v: int, h: int, n: int, cap: int, variant: str) -> Pair:
    def ref(emb, ids):
        return jnp.take(emb, ids, axis=0, mode="clip")

    def ok(emb, ids):
        return jnp.take(emb, jax.lax.clamp(0, ids, v - 1), axis=0, mode="clip")

    def bug(emb, ids):
        return jnp.take(emb, jnp.minimum(ids, cap), axis=0, mode="clip")

    return Pair("gather_cap", "a", variant, {"vocab": v, "hidden": h, "tokens": n, "cap": cap},
                [Arg((v, h)), Arg((n,), I32, v)], ref, ok, bug,
                f"the ids clamped at the literal {cap} before a gather that clamps at the vocabulary's last row")


def pairs() -> list[Pair]:
    return [call_meet(256, 8, 8, 100.0, 40, "small"), call_meet(32000, 8, 16, 10000.0, 1000, "big"),
            gather_cap(256, 8, 8, 40, "small")]


def main() -> int:
    return write_manifest(pairs(), "manifest_call_meets.json")


if __name__ == "__main__":
    raise SystemExit(main())
