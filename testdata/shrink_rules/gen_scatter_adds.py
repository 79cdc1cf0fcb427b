"""Shrinking-rule pairs for scatter-adds by data indices, the lookup's transpose
(docs/shrinking.md, "Scatter-adds by data indices"; tv_mlir/shrink/scatters.py). Same form and
XLA ground truth as testdata/gen_shrink_rules.py: per pair and variant a reference, a
correct twin and a bug twin, run on XLA at their original sizes (the correct twin agrees
with the reference, the bug twin differs; the ids at random, all at V - 1 and all at 0),
written to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_scatter_adds.json`.
The token ids are assumed in [0, vocab) (`--assume ids=0:VOCAB`).

Every reference is the embedding gradient `zeros[V, H].at[ids].add(u)`
(`R[v] = sum_t [ids_t = v] u_t`); every correct twin is the partitioned one (the tokens
split over 4 devices, each scatter-adds its own, a psum adds the devices' tables).

    .venv/bin/python testdata/shrink_rules/gen_scatter_adds.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def _grad(v: int, ids, u, combine=None):
    table = jnp.zeros((v,) + u.shape[1:], u.dtype)
    return (combine or (lambda at, x: at.add(x)))(table.at[ids], u)


def _sharded(v: int, tail, index=lambda ids: ids, drop_last: bool = False, combine=None):
    """The tokens split over 4 devices: each scatter-adds its own rows (its last dropped
    when `drop_last`), a psum adds the devices' tables, then `tail`."""
    def body(u, ids):
        if drop_last:
            u, ids = u[:-1], ids[:-1]
        return tail(jax.lax.psum(_grad(v, index(ids), u, combine), "tp"))
    return _smap(MESH_TP, body, (P("tp", None), P("tp")), P())


# The embedding gradient itself: partitioned over the tokens (correct), or every update one
# row too far (an off-by-one index: the last word's row never receives its tokens, row
# ids + 1 receives them).
def scatter_rows(v: int, h: int, n: int, variant: str) -> Pair:
    def tail(r):
        return r * 1.0

    def ref(u, ids):
        return _grad(v, ids, u)

    return Pair("scatter_rows", "k", variant, {"vocab": v, "hidden": h, "tokens": n}, [Arg((n, h)), Arg((n,), I32, v)],
                ref, _sharded(v, tail), _sharded(v, tail, index=lambda ids: ids + 1),
                "each token's update lands one row late (ids + 1): an off-by-one index")


# Duplicates: the scatter of ones counts each row's tokens, k_v; C(k_v, 3) of it vanishes
# wherever no row holds 3 tokens. The bug divides by 3 instead of 3!: equal for every k_v
# <= 2, so a plan that read the tokens as free (Newton's degree 1) would verify at 2 tokens
# and see no difference. Rule k counts the one-hot predicate: D = 3, T = 2, d = 1: 5.
def scatter_count(v: int, n: int, variant: str) -> Pair:
    def count(divisor: float, order: bool):
        def tail(k):
            c = k * (k - 1) * (k - 2) if order else (k - 2) * (k - 1) * k
            return c / divisor
        return tail

    def ref(u, ids):
        return count(6.0, True)(_grad(v, ids, jnp.ones_like(u)))

    def twin(divisor: float):
        # One device: sharded, every shrunk size keeps 4 tokens, room for 3 on one row.
        def f(u, ids):
            return count(divisor, False)(_grad(v, ids, jnp.ones_like(u)))
        return f

    return Pair("scatter_count", "k", variant, {"vocab": v, "tokens": n}, [Arg((n, 1)), Arg((n,), I32, v)],
                ref, twin(6.0), twin(3.0),
                "C(k, 3) of each row's token count divided by 3, not 3!: equal while no row holds 3 tokens")


# The wrong combiner: max instead of add (equal wherever no two tokens share a row and the
# update is positive; apart on duplicates).
def scatter_combiner(v: int, h: int, n: int, variant: str) -> Pair:
    def tail(r):
        return r * 1.0

    return Pair("scatter_combiner", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((n, h)), Arg((n,), I32, v)], lambda u, ids: _grad(v, ids, u), _sharded(v, tail),
                _sharded(v, tail, combine=lambda at, x: at.max(x)),
                "the devices combine their tokens' updates with max, not add")


# A dropped token: each device leaves out its last token's update.
def scatter_drop(v: int, h: int, n: int, variant: str) -> Pair:
    def tail(r):
        return r * 1.0

    return Pair("scatter_drop", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((n, h)), Arg((n,), I32, v)], lambda u, ids: _grad(v, ids, u), _sharded(v, tail),
                _sharded(v, tail, drop_last=True), "each device drops its last token's update")


# A clamp that differs only at the vocabulary's end: the reference clamps the ids into
# [0, V - 1]; the bug into [0, V - 2], so the last word's tokens land on row V - 2 (rule a
# keeps the vocabulary at 2 x 2 + 2 for the `size - 2` constant).
def scatter_clamp(v: int, h: int, n: int, variant: str) -> Pair:
    def tail(r):
        return r * 1.0

    return Pair("scatter_clamp", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((n, h)), Arg((n,), I32, v)], lambda u, ids: _grad(v, jnp.clip(ids, 0, v - 1), u),
                _sharded(v, tail, index=lambda ids: jnp.minimum(ids, v - 1)),
                _sharded(v, tail, index=lambda ids: jnp.clip(ids, 0, v - 2)),
                "the ids clamped at V - 2: the last word's tokens land on the row before it")


# Rows picked by positions, not data: a segment sum `R[t // 2] += u_t` (pairs of tokens).
# Which tokens share a row depends on the sizes, so the rows and the tokens stay whole: the
# bug (`(t + 1) // 2`, the pairs shifted by one token) differs at every size, and the test
# holds the plan to keeping both.
def scatter_positions(n: int, h: int, variant: str) -> Pair:
    def segment(shift: int):
        def f(u, ids):
            rows = (jnp.arange(n) + shift) // 2
            return jnp.zeros((n // 2, h), u.dtype).at[rows].add(u) + 0 * ids[: n // 2, None]
        return f

    def ok(u, ids):
        return u.reshape(n // 2, 2, h).sum(axis=1) + 0 * ids[: n // 2, None]

    return Pair("scatter_positions", "k", variant, {"vocab": n // 2, "hidden": h, "tokens": n},
                [Arg((n, h)), Arg((n,), I32, n // 2)], segment(0), ok, segment(1),
                "the segments shifted by one token: (t + 1) // 2")


# A count as the row a scatter-add writes: k = #{t : x_t > 0} picks the row, which is no
# polynomial in k (a compare of k with every row). The bug adds what reached rows 12 and up,
# nothing while at most 11 tokens are positive: if the count kept its degree through the
# scatter's ids (D = 1: T + 1 = 3), rule k would shrink the tokens to 4 and hide it; they are
# kept (the rows are kept too: ids computed from floats).
def scatter_at_count(v: int, n: int, variant: str) -> Pair:
    def written(x):
        k = jnp.sum((x > 0).astype(jnp.int32))
        # lax's scatter-add, two updates of 0.5 at row k: `.at[k]` would wrap a negative
        # index first (a compare of the count, no degree of its own) and mark a scalar index
        # unique and sorted (which the rule declines).
        dn = jax.lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                             scatter_dims_to_operand_dims=(0,))
        rows = jnp.stack([k, k])[:, None]
        return jax.lax.scatter_add(jnp.zeros((v,), x.dtype), rows, jnp.full((2,), 0.5, x.dtype), dn)

    def ref(x, w, ids):  # ids unused: the pairs share the ids assumption
        return written(x) * w

    def ok(x, w, ids):
        k = jnp.sum((x > 0).astype(jnp.int32))
        return jnp.where(jnp.arange(v) == k, 1.0, 0.0) * w

    def bug(x, w, ids):
        r = written(x)
        return r * w + jnp.sum(r[12:])

    return Pair("scatter_at_count", "k", variant, {"vocab": v, "tokens": n}, [Arg((n,)), Arg((v,)), Arg((n,), I32, v)],
                ref, ok, bug, "adds the rows from 12 on: nothing while at most 11 tokens are positive")


def pairs() -> list[Pair]:
    return [scatter_rows(64, 4, 32, "small"), scatter_rows(32000, 8, 2048, "big"), scatter_count(64, 32, "small"),
            scatter_combiner(64, 4, 32, "small"), scatter_drop(64, 4, 32, "small"),
            scatter_clamp(64, 4, 32, "small"), scatter_positions(32, 4, "small"),
            scatter_at_count(64, 32, "small")]


def main() -> int:
    return write_manifest(pairs(), "manifest_scatter_adds.json")


if __name__ == "__main__":
    raise SystemExit(main())
