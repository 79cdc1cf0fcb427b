"""Shrinking-rule pairs for rule (k)'s partitioned lookups (docs/shrinking.md, rule k
"partitioned lookups"). Same form and XLA ground truth as testdata/gen_shrink_rules.py:
per pair and variant a reference, a correct twin and a bug twin, run on XLA at their
original sizes (the correct twin agrees with the reference, the bug twin differs), written
to `<pair>.<variant>.{ref,ok,bug}.mlir` and listed in `manifest_lookup_sums.json`. The
token ids are assumed in [0, vocab) (`--assume ids=0:VOCAB`).

    .venv/bin/python testdata/shrink_rules/gen_lookup_sums.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, TP, Arg, Pair, _smap, write_manifest  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def _lookup(table, ids, block: int, starts):
    """A vocabulary-parallel lookup on TP devices, as XLA partitions one: each device tests
    whether the id lies in its block [start, start + block) and contributes its row there,
    zero elsewhere; a psum adds the devices' rows. `starts`: a table of the blocks' starts,
    or a function of the device's index."""
    q = jax.lax.axis_index("tp")
    start = starts(q) if callable(starts) else starts[q]
    inside = (ids >= start) & (ids < start + block)
    rows = jnp.take(table, jnp.clip(ids - start, 0, block - 1), axis=0, mode="clip")
    mask = jnp.broadcast_to(inside.reshape(inside.shape + (1,) * (rows.ndim - 1)), rows.shape)
    return jax.lax.psum(jax.lax.select(mask, rows, jnp.zeros_like(rows)), "tp")


# (k, partitioned lookups) The lookup of an embedding partitioned over 4 devices, then a
# log-sum-exp over the tokens of a score per token (block starts `axis_index * block`, a
# size the rewrite ties): the block tests are data predicates
# whose sums meet exp and log, so rule (k) pinned the tokens. The blocks partition the
# vocabulary (every id in exactly one device's block), so the psum is one gathered row:
# a gather, which rule (k) does not count. The bug's blocks start one word late on every
# device but the first (word `block` is in no block: its row reads zero).
def lookup_gather(v: int, h: int, n: int, variant: str) -> Pair:
    block = v // TP

    def tail(x, w):
        return jax.nn.logsumexp(x @ w) + 0.5 * jnp.sum(x * x)

    def ref(emb, w, ids):
        return tail(jnp.take(emb, ids, axis=0, mode="clip"), w)

    def sharded(shift):
        def body(emb, w, ids):
            return tail(_lookup(emb, ids, block, lambda q: q * block + jnp.minimum(q, shift)), w)
        return _smap(MESH_TP, body, (P("tp", None), P(None), P(None)), P())

    return Pair("lookup_gather", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((v, h)), Arg((h,)), Arg((n,), I32, v)], ref, sharded(0), sharded(1),
                "every block but the first starts one word late: word `block` reads a zero row")


# (k, partitioned lookups: the partition is what makes a lookup a gather) A count made of a
# lookup whose blocks do not cover the vocabulary: device 3's block starts past its end, so
# the psum of the looked-up ones is 1 for the ids of blocks 0..2 and 0 for block 3's: k, the
# number of ids outside block 3, a count. All three programs share it; the reference and
# the correct twin add exp(C(k, 3) / 6 * scale), the bug divides by 3 instead of 3!, equal
# for k <= 2. Read as a gather without the partition check, the tokens shrink to a few and
# no count reaches 3: the bug hides.
def lookup_count(v: int, n: int, variant: str) -> Pair:
    block = v // TP
    starts = np.array([0, block, 2 * block, 10 * v], np.int32)
    half = n // 2
    scale = 6.0 / (half * (half - 1) * (half - 2))

    def counted(divide):
        def body(x, ids):
            ones = jnp.ones((block,), jnp.float32)
            k = jnp.sum(_lookup(ones, ids, block, jnp.asarray(starts)))
            return jnp.exp(divide(k) * scale) + jnp.sum(x)
        return _smap(MESH_TP, body, (P(None), P(None)), P())

    return Pair("lookup_count", "k", variant, {"vocab": v, "tokens": n}, [Arg((n,)), Arg((n,), I32, v)],
                counted(lambda k: k * (k - 1) * (k - 2) / 6.0), counted(lambda k: (k - 2) * (k - 1) * k / 6.0),
                counted(lambda k: k * (k - 1) * (k - 2) / 3.0),
                "C(k, 3) of a count made by a lookup that does not cover the vocabulary, divided by 3, not 3!")


# (k and h, a lookup's offset table) The same lookup written as XLA's partitioned module
# writes it: the block starts read from a constant table by the device's index, the rows
# gathered at `id - start` (an inline gather that clamps). A table of q * block is a block
# offset table, rewritten with the shrunk block, so the blocks partition the vocabulary at
# the shrunk sizes too and the lookup is a gather there; the bug's table starts every block
# but the first a word late (no q * block: kept, the blocks do not partition, counted).
def lookup_table(v: int, h: int, n: int, variant: str) -> Pair:
    block = v // TP
    dnums = jax.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))

    def tail(x, w):
        return jax.nn.logsumexp(x @ w) + 0.5 * jnp.sum(x * x)

    def ref(emb, w, ids):
        return tail(jnp.take(emb, ids, axis=0, mode="clip"), w)

    def sharded(shift):
        starts = np.array([q * block + (shift if q else 0) for q in range(TP)], np.int32)

        def body(emb, w, ids):
            start = jnp.asarray(starts)[jax.lax.axis_index("tp")]
            inside = (ids >= start) & (ids <= start + (block - 1))
            rows = jax.lax.gather(emb, (ids - start)[:, None], dnums, slice_sizes=(1, h),
                                  mode=jax.lax.GatherScatterMode.CLIP)
            mask = jnp.broadcast_to(inside[:, None], rows.shape)
            return tail(jax.lax.psum(jax.lax.select(mask, rows, jnp.zeros_like(rows)), "tp"), w)
        return _smap(MESH_TP, body, (P("tp", None), P(None), P(None)), P())

    return Pair("lookup_table", "k", variant, {"vocab": v, "hidden": h, "tokens": n},
                [Arg((v, h)), Arg((h,)), Arg((n,), I32, v)], ref, sharded(0), sharded(1),
                "every block but the first starts one word late in the offset table: word `block` reads a zero row")


def pairs() -> list[Pair]:
    return [lookup_gather(64, 4, 32, "small"), lookup_gather(32000, 8, 2048, "big"), lookup_count(64, 32, "small"),
            lookup_table(64, 4, 32, "small"), lookup_table(32000, 8, 2048, "big")]


def main() -> int:
    return write_manifest(pairs(), "manifest_lookup_sums.json")

if __name__ == "__main__":
    raise SystemExit(main())
