"""The sweep's candidates by position (prove/sweep.py `_by_placement`): a vocab-parallel
embedding gradient summed over dp. Most vocabulary rows get no token in most random runs,
so their gradient elements are zero in all runs but one or none and carry no fingerprint;
the rows that do are merged by fingerprint, and they place the shard at its row offset in
the reference gradient. The rest are then proved against the elements at that offset, so
the whole gradient meets the reference's before the update reads it (in a train step the
gradient is too deep for the outputs' own proofs: llama_train_step was `unknown` without it)."""
from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from tv_mlir import jax as tj  # noqa: E402

HIDDEN, BATCH, SEQ, DP, TP = 4, 4, 8, 2, 4
MESH = jax.make_mesh((DP, TP), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


def _update(e, g):
    """An Adam-like step: g * g under an uninterpreted sqrt needs g itself merged."""
    return e - 0.01 * g / (jnp.sqrt(g * g) + 1e-8)


def _reference(e, ids, w):
    def loss(e):
        return jnp.sum(jnp.take(e, jnp.clip(ids, 0, e.shape[0] - 1), axis=0) * w)
    return _update(e, jax.grad(loss)(e))


def _sharded(shift: int, vocab: int):
    """shift 0: the right plan; 1: every shard's rows offset by one (a bug)."""
    def body(e, ids, w):
        rows = e.shape[0]

        def loss(e):
            local = jnp.clip(ids, 0, vocab - 1) - jax.lax.axis_index("tp") * rows - shift
            hit = (local >= 0) & (local < rows)
            x = jnp.where(hit[..., None], jnp.take(e, jnp.clip(local, 0, rows - 1), axis=0), 0.0)
            return jnp.sum(x * w)  # each id's row is on one shard: the tp sum is the lookup
        return _update(e, jax.lax.psum(jax.grad(loss)(e), "dp"))
    return jax.shard_map(body, mesh=MESH, in_specs=(P("tp", None), P("dp", None), P("dp", None, None)),
                         out_specs=P("tp", None), check_vma=False)


IN = (NamedSharding(MESH, P("tp", None)), NamedSharding(MESH, P("dp", None)),
      NamedSharding(MESH, P("dp", None, None)))


def _check(shift: int, vocab: int):
    args = (jax.ShapeDtypeStruct((vocab, HIDDEN), jnp.float32), jax.ShapeDtypeStruct((BATCH, SEQ), jnp.int32),
            jax.ShapeDtypeStruct((BATCH, SEQ, HIDDEN), jnp.float32))
    return tj.check(_sharded(shift, vocab), *args, reference=_reference, in_shardings=IN,
                    out_shardings=NamedSharding(MESH, P("tp", None)), form="shardy", shrink=False, cache=False)


def test_gradient_rows_without_a_fingerprint_merge_by_their_shard_offset() -> None:
    # 64 rows, 32 ids a run: many rows get an id in one run or none (at 32 rows, too few)
    v = _check(0, 64)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["merged_by_position"] > 0
    assert v.stats["syntactic"] == v.stats["elements"]


def test_rows_offset_by_one_are_caught() -> None:
    v = _check(1, 16)
    assert v.verdict == "not-equivalent", v.reason
