"""Shrinking-rule pairs for the holes left open on issue 12 after the gaps of gen_gaps.py:
sums of multipliers, integer division by a size, constants that reach their use through a
call, and positions that enter a loop as its carried values. Same form and XLA ground truth
as testdata/gen_shrink_rules.py, whose helpers this imports: per pair and variant a
reference, a correct twin and a bug twin, run on XLA at their original sizes (the correct
twin agrees with the reference, the bug twin differs), written to
`<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_holes.json`.

    .venv/bin/python testdata/shrink_rules/gen_holes.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, OUT, RUN_LIMIT, TP, Arg, Pair, _max_diff, _smap, write_twins  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32


# (a, sums of multipliers) Twice the mean written as the sum of two means, s / h + s / h:
# each term's multiplier is 1 / hidden, their sum 2 / hidden, which is the bug's literal
# 1 / 8 at hidden' = 16 (rule a keeps hidden' above the literal 8, not 2 / hidden' away
# from 1 / 8). The correct twin is mean * 2.
def mult_sum(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        s = jnp.sum(x, axis=1)
        return s / h + s / h

    def ok(x):
        return jnp.mean(x, axis=1) * 2.0

    def bug(x):
        return jnp.sum(x, axis=1) / 8.0

    return Pair("mult_sum", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the sum is divided by 8 where the sum of two means (2 / hidden) is right")


# (a, sums of one value computed twice) The same as mult_sum, with each mean its own
# reduce (jax does not merge them: two atoms that are one value) and the correct twin's sum
# doubled before it is divided, (s + s) / h.
def mean_twice(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        return jnp.mean(x, axis=1) + jnp.mean(x, axis=1)

    def ok(x):
        s = jnp.sum(x, axis=1)
        return (s + s) / h

    def bug(x):
        return jnp.sum(x, axis=1) / 8.0

    return Pair("mean_twice", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the sum is divided by 8 where the sum of two means (2 / hidden) is right")


# (a, a constant made of size constants) The same factor built as a traced constant
# expression, 1 / h + 1 / h (jax stages arithmetic on arrays inside jit): the two
# constants meet an add, not a multiply, so nothing read them as the reciprocals of hidden.
def const_sum(b: int, h: int, variant: str) -> Pair:
    def ref(x):
        c = jnp.asarray(1.0 / h, F32) + jnp.asarray(1.0 / h, F32)
        return jnp.sum(x, axis=1) * c

    def ok(x):
        return jnp.mean(x, axis=1) * 2.0

    def bug(x):
        return jnp.sum(x, axis=1) / 8.0

    return Pair("const_sum", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the sum is divided by 8 where 2 / hidden (a constant built as 1 / h + 1 / h) is right")


# (a, integer division by a size) The position of a token inside the shard that holds it,
# ids % local (local = seq / tp, a size the sharded twins name as their block). The bug
# forgets the block's size: ids - ids // local. A free sequence shrinks to 1 per shard,
# where x % 1 = 0 and x - x // 1 = 0: both are 0 and the bug hides.
def int_rem(s: int, h: int, variant: str) -> Pair:
    local = s // TP

    def ref(x, ids):
        return x + (ids % local).astype(F32)[:, None]

    def body(wrong: bool):
        def f(x, ids):
            r = ids - ids // local if wrong else ids - ids // local * local
            return x + r.astype(F32)[:, None]
        return _smap(MESH_TP, f, (P("tp", None), P("tp")), P("tp", None))

    return Pair("int_rem", "a", variant, {"seq": s, "hidden": h}, [Arg((s, h)), Arg((s,), I32, s)],
                ref, body(False), body(True), "the position inside the shard is ids - ids // local, not ids % local")


# (a, through a call) Twice the mean, against a helper that divides by its argument
# (a jitted function: a func.call with the divisor as operand). The correct twin passes
# hidden and doubles the sum; the bug passes the literal 8: at hidden' = 16 the
# reference's 2 / 16 is the bug's 1 / 8, and the bug's divisor is no chain's factor.
def call_ratio(b: int, h: int, variant: str) -> Pair:
    @jax.jit
    def divide(s, n):
        return s / n

    def ref(x):
        return jnp.mean(x, axis=1) * 2.0

    def ok(x):
        return divide(jnp.sum(x, axis=1) * 2.0, float(h))

    def bug(x):
        return divide(jnp.sum(x, axis=1), 8.0)

    return Pair("call_ratio", "a", variant, {"batch": b, "hidden": h}, [Arg((b, h))], ref, ok, bug,
                "the sum is divided (in a called helper) by 8 where twice the mean is right")


# (b, positions into a loop) A fori_loop accumulates a token's rows and zeroes the tokens
# at float position >= T inside its body: the positions are computed outside the loop and
# enter it as a carried value (a while's region argument). The correct twin masks after
# the loop; the bug has no mask. At a shrunk sequence every position is below T.
def loop_pos(s: int, h: int, thr: int, steps: int, variant: str) -> Pair:
    def pos():
        return lax.broadcasted_iota(F32, (s, h), 0)

    def ref(x):
        p = pos()

        def step(_, y):
            return jnp.where(p >= float(thr), 0.0, y + x)
        return lax.fori_loop(0, steps, step, jnp.zeros_like(x))

    def ok(x):
        y = lax.fori_loop(0, steps, lambda _, y: y + x, jnp.zeros_like(x))
        return jnp.where(pos() >= float(thr), 0.0, y)

    def bug(x):
        return lax.fori_loop(0, steps, lambda _, y: y + x, jnp.zeros_like(x))

    return Pair("loop_pos", "b", variant, {"seq": s, "hidden": h, "threshold": thr}, [Arg((s, h))], ref, ok, bug,
                f"the mask of positions >= {thr} (inside the loop in the reference) is missing")


# (a, integer overflow at the original sizes) A token's row recovered from its flattened
# index into [tokens, vocab] logits, (t * V + label) // V, in int32: past t = 2^31 / V the
# product wraps and the row is negative. The correct twin computes the same; the "bug"
# writes t + label // V, which never wraps: equal wherever nothing overflows, so at any
# shrunk size, and different at the original ones (an index computation that overflows is
# a real difference, DESIGN.md). A sum over a table of V words makes V a class.
def int_overflow(t: int, v: int, variant: str) -> Pair:
    def out(row, emb):
        return row.astype(F32) + jnp.sum(emb)

    def clip(labels):
        return jnp.clip(labels, 0, v - 1)  # a label is a word: no input overflows by itself

    def ref(emb, labels):
        pos = lax.iota(I32, t)
        return out((pos * v + clip(labels)) // v, emb)

    def ok(emb, labels):
        pos = lax.iota(I32, t)
        return out((clip(labels) + v * pos) // v, emb)

    def bug(emb, labels):
        return out(lax.iota(I32, t) + clip(labels) // v, emb)

    return Pair("int_overflow", "a", variant, {"tokens": t, "vocab": v}, [Arg((v,)), Arg((t,), I32, v)],
                ref, ok, bug, "the row is computed without the flattened index, which wraps at the original sizes")


def pairs() -> list[Pair]:
    return [
        mult_sum(12, 64, "small"), mult_sum(128, 4096, "big"),
        mean_twice(12, 64, "small"), mean_twice(128, 4096, "big"),
        const_sum(12, 64, "small"), const_sum(128, 4096, "big"),
        int_rem(64, 4, "small"), int_rem(2048, 4096, "big"),
        call_ratio(12, 64, "small"), call_ratio(128, 4096, "big"),
        loop_pos(64, 4, 40, 3, "small"), loop_pos(2048, 4096, 1000, 3, "big"),
        int_overflow(4096, 1 << 20, "small"), int_overflow(131072, 32768, "big"),
    ]


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
    (OUT / "manifest_holes.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
