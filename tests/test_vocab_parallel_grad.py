"""A vocab-parallel embedding gradient under an Adam second-moment update: each tp shard
scatters the token gradients whose ids fall in its rows, the reference scatters them all.
The two programs guard a row with different index arithmetic; the guards are one term once
made canonical (tv_mlir/algebra/univariate.py), so the squared rows close by normal form,
without the solver. (Without it the outcome rests on the sweep's short solver calls, which
succeed or time out with the machine's load: tests/test_univariate.py tests the mechanism
itself, term by term.)"""
from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

from tv_mlir import jax as tj  # noqa: E402

VOCAB, HIDDEN, TOKENS, TP = 16, 4, 8, 4
MESH = jax.make_mesh((TP,), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
BETA2 = 0.99


def _reference(v, ids, dy):
    g = jnp.zeros((VOCAB, HIDDEN), jnp.float32).at[jnp.clip(ids, 0, VOCAB - 1)].add(dy)
    return BETA2 * v + (1 - BETA2) * g * g


def _sharded(shift: int):
    """shift 0: the right plan; 1: each shard's rows offset by one (a bug)."""
    def body(v, ids, dy):
        rows = v.shape[0]
        local = jnp.clip(ids, 0, VOCAB - 1) - jax.lax.axis_index("tp") * rows - shift
        hit = (local >= 0) & (local < rows)
        g = jnp.zeros((rows, HIDDEN), jnp.float32).at[jnp.clip(local, 0, rows - 1)].add(
            jnp.where(hit[:, None], dy, 0.0))
        return BETA2 * v + (1 - BETA2) * g * g
    return jax.shard_map(body, mesh=MESH, in_specs=(P("tp", None), P(), P()), out_specs=P("tp", None),
                         check_vma=False)


ARGS = (jax.ShapeDtypeStruct((VOCAB, HIDDEN), jnp.float32), jax.ShapeDtypeStruct((TOKENS,), jnp.int32),
        jax.ShapeDtypeStruct((TOKENS, HIDDEN), jnp.float32))
IN = (NamedSharding(MESH, P("tp", None)), NamedSharding(MESH, P()), NamedSharding(MESH, P()))


def _check(shift: int):
    return tj.check(_sharded(shift), *ARGS, reference=_reference, in_shardings=IN,
                    out_shardings=NamedSharding(MESH, P("tp", None)), form="shardy", shrink=False)


def test_vocab_parallel_adam_moment_closes_without_the_solver() -> None:
    v = _check(0)
    assert v.verdict == "equivalent", v.reason
    assert v.stats["solver_queries"] == 0
    assert v.stats["syntactic"] == v.stats["elements"]


def test_rows_offset_by_one_are_caught() -> None:
    v = _check(1)
    assert v.verdict == "not-equivalent"
