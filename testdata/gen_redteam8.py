"""Red-team batch 8 (docs/shrinking.md, "Red-team batch 8"): pairs aimed at what batch 7
left open and at readings nobody attacked.

Counts (rule a: a count's number is c x n, c the summand's constant term; the bug twin
writes the count at the size the tokens shrink to, 2, so the pair hides there):
- `count_half_literal`: the count compared with a literal that is no integer
  (`where(T > 15.5, T + 1, T)`: 17 at 16 tokens, T at 2);
- `count_scaled_sum`: `sum(x * 0 + 0.5 + 0.25)` (0.75 T: two constants add) as 1.5;
- `count_scaled_exp`: `sum(exp(x * 0 + log 0.75))` (an atom of a constant) as 1.5;
- `count_scaled_dot`: a dot over the tokens of 0.5 and 1.5 (0.75 T) as 1.5;
- `count_scaled_typed`: `sum(where(x > 0, 0.75, 0)) + sum(where(x <= 0, 0.75, 0))` (rule
  k's zero types: 0.75 T at every input) as 1.5;
- `count_scaled_input`: `sum(x * 0 + w * 0.75)` (w a scalar input: 0.75 w T) as 1.5 w.
Ranges (rule b, id_splits: ids assumed in [0, 512) split at a number the walk computes):
- `range_barrier`: `ids + 1000 < barrier(1100)` (a number made of constants, no literal);
- `range_full_add`: `ids + 1000 < full(1000) + 100`;
- `range_offset_add`: `ids + (full(500) + 500) < 1100` (the offset a computed number).
Scatters, pads, lookup tables:
- `scatter_size_index`: a scatter-add of the tokens at `ids + full(T) - 16` (indices
  computed from a number that names the tokens' size, no literal);
- `pad_not_half`: x padded by a third of its size and rolled back (not a rotate-half);
- `lookup_table_shift`: the vocabulary-parallel lookup with a table of starts shifted by
  one row (entries no multiples of the block).

Every twin is run on XLA at its original sizes (random inputs and both ends of the ids'
range): the generator asserts that the correct twin agrees with the reference and the bug
twin differs. `testdata/redteam8/<pair>.small.{ref,ok,bug}.mlir`, `manifest.json`.

    .venv/bin/python testdata/gen_redteam8.py
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_shrink_rules  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, TP, Arg, Pair, _smap  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32
OUT = Path(__file__).resolve().parent / "redteam8"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {}
T, HD = 16, 4


def _ones(v: jax.Array) -> jax.Array:
    """The number of v's elements as a sum of ones (a count of a constant: rule a's)."""
    return jnp.sum((v * 0 + 1).astype(F32))


def _count(name: str, ref: Callable[[jax.Array, jax.Array], jax.Array],
           ok: Callable[[jax.Array, jax.Array], jax.Array], bug: Callable[[jax.Array, jax.Array], jax.Array],
           what: str, args: list[Arg] | None = None) -> Pair:
    """sum(x) times a number made of the tokens' count: ref, ok and bug write it."""
    def twin(n: Callable[[jax.Array, jax.Array], jax.Array]) -> Callable[..., jax.Array]:
        def f(x: jax.Array, w: jax.Array) -> jax.Array:
            return jnp.sum(x, axis=0) * n(x, w)
        return f
    return Pair(name, "a", "small", {"tokens": T, "hidden": HD},
                args or [Arg((T, HD)), Arg(())], twin(ref), twin(ok), twin(bug), what)


def _x0(x: jax.Array) -> jax.Array:
    return x[:, 0]


def counts() -> list[Pair]:
    c = np.float32(0.75)
    return [
        _count("count_half_literal", lambda x, w: _ones(_x0(x)),
               lambda x, w: _ones(_x0(x)) * 1.0,
               lambda x, w: jnp.where(_ones(_x0(x)) > 15.5, _ones(_x0(x)) + 1.0, _ones(_x0(x))),
               "where(T > 15.5, T + 1, T) (17 at 16 tokens, T at 2)"),
        _count("count_scaled_sum", lambda x, w: jnp.sum(_x0(x) * 0.0 + 0.5 + 0.25),
               lambda x, w: _ones(_x0(x)) * c, lambda x, w: jnp.float32(1.5),
               "sum(x * 0 + 0.5 + 0.25) (0.75 T) as 1.5"),
        _count("count_scaled_exp", lambda x, w: jnp.sum(jnp.exp(_x0(x) * 0.0 + np.float32(np.log(0.75)))),
               lambda x, w: _ones(_x0(x)) * c, lambda x, w: jnp.float32(1.5),
               "sum(exp(x * 0 + log 0.75)) (0.75 T) as 1.5"),
        _count("count_scaled_dot", lambda x, w: jnp.dot(_x0(x) * 0.0 + 0.5, _x0(x) * 0.0 + 1.5),
               lambda x, w: _ones(_x0(x)) * c, lambda x, w: jnp.float32(1.5),
               "a dot over the tokens of 0.5 and 1.5 (0.75 T) as 1.5"),
        _count("count_scaled_typed", lambda x, w: jnp.sum(jnp.where(_x0(x) > 0, 0.75, 0.0))
               + jnp.sum(jnp.where(_x0(x) <= 0, 0.75, 0.0)),
               lambda x, w: _ones(_x0(x)) * c, lambda x, w: jnp.float32(1.5),
               "sum(where(x > 0, 0.75, 0)) + sum(where(x <= 0, 0.75, 0)) (0.75 T) as 1.5"),
        _count("count_scaled_input", lambda x, w: jnp.sum(_x0(x) * 0.0 + w * 0.75),
               lambda x, w: _ones(_x0(x)) * w * c, lambda x, w: w * 1.5,
               "sum(x * 0 + 0.75 w) (0.75 w T, w a scalar input) as 1.5 w"),
    ]


def _iota(x: jax.Array) -> jax.Array:
    return lax.iota(I32, x.shape[0])


def wraps() -> list[Pair]:
    """Counts of a predicate zero_types' affine reading decides though the integers wrap
    (ids from [0, 50), no assumed range): the select then reads one branch (no constant
    term), so neither Newton nor rule k sees a count; the program takes the other branch at
    every token with such ids (a count c of T there). The bug writes min(c, 2): c at 2 tokens."""
    args = [Arg((T, HD)), Arg((T,), I32, 50)]

    def count(p: Callable[[jax.Array], jax.Array]) -> Callable[[jax.Array, jax.Array], jax.Array]:
        return lambda x, ids: jnp.sum(jnp.where(p(ids), _x0(x) * 0.0, 1.0))

    def pair(name: str, p: Callable[[jax.Array], jax.Array], what: str) -> Pair:
        c = count(p)
        return _count(name, c, lambda x, ids: c(x, ids) * 1.0, lambda x, ids: jnp.minimum(c(x, ids), 2.0),
                      what + " as min(c, 2)", args)
    bits = np.int32(1 << 30)
    return [
        pair("taut_narrow", lambda ids: (ids + 200).astype(jnp.int8).astype(I32) > ids,
             "c = count(int8(ids + 200) <= ids) (int8 wraps: T at ids below 56)"),
        pair("taut_wrap", lambda ids: ids + bits + bits > ids,
             "c = count(ids + 2^30 + 2^30 <= ids) (int32 wraps: T at ids >= 0)"),
        pair("taut_narrow_eq", lambda ids: (ids + 256).astype(jnp.int8).astype(I32) != ids,
             "c = count(int8(ids + 256) == ids) (T at ids in int8)"),
        pair("taut_unsigned", lambda ids: (ids - 100).astype(jnp.uint32).astype(jnp.float32) < 0.0,
             "c = count(float(uint32(ids - 100)) >= 0) (unsigned: T)"),
    ]


def fixed() -> list[Pair]:
    """Sums of an atom of a value the same at every token that `constant_terms.Same` may
    read as varying (then the atom is a fresh variable per token with no constant term,
    and T shrinks to 2): the correct twin counts with a sum of ones, the bug writes 2."""
    def pair(name: str, summand: Callable[[jax.Array], jax.Array], what: str) -> Pair:
        return _count(name, lambda x, w: jnp.sum(summand(_x0(x))), lambda x, w: _ones(_x0(x)),
                      lambda x, w: jnp.float32(2.0), what + " as 2")
    return [
        pair("fixed_clamp", lambda v: jnp.exp(jnp.clip(v, 0.0, 0.0)), "a sum of exp(clamp(0, x, 0)) (1 everywhere)"),
        pair("fixed_minmax", lambda v: jnp.exp(jnp.maximum(jnp.minimum(v, 0.0), 0.0)),
             "a sum of exp(max(min(x, 0), 0)) (1 everywhere)"),
        pair("fixed_pow0", lambda v: jnp.exp(lax.pow(v, 0.0) - 1.0), "a sum of exp(x ** 0 - 1) (1 everywhere)"),
        pair("fixed_and_zero", lambda v: jnp.exp((v.astype(I32) & 0).astype(F32)),
             "a sum of exp(float(int(x) & 0)) (1 everywhere)"),
        pair("fixed_xor_self", lambda v: jnp.exp((v.astype(I32) ^ v.astype(I32)).astype(F32)),
             "a sum of exp(float(int(x) ^ int(x))) (1 everywhere)"),
        pair("fixed_abs_neg", lambda v: jnp.exp(jnp.abs(v) - jnp.abs(-v)), "a sum of exp(|x| - |-x|) (1 everywhere)"),
    ]


def _range(name: str, mask: Callable[[jax.Array], jax.Array], what: str, v: int = 512) -> Pair:
    """A lookup of ids assumed in [0, v); the bug drops the rows its mask is false at (the
    mask true at every id below 100, false from 100 on)."""
    def ref(emb: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(jnp.take(emb, ids, axis=0), axis=0)

    def ok(emb: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(jnp.take(emb, jnp.clip(ids, 0, v - 1), axis=0), axis=0)

    def bug(emb: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(jnp.where(mask(ids)[:, None], jnp.take(emb, ids, axis=0), 0.0), axis=0)
    ASSUME[name] = {"arg1": "vocab"}
    return Pair(name, "b", "small", {"tokens": T, "vocab": v, "hidden": HD},
                [Arg((v, HD)), Arg((T,), I32, v)], ref, ok, bug, what)


def ranges() -> list[Pair]:
    return [
        _range("range_barrier", lambda ids: ids + 1000 < lax.optimization_barrier(jnp.int32(1100)),
               "ids + 1000 < barrier(1100) (the number no literal)"),
        _range("range_full_add", lambda ids: ids + 1000 < jnp.full((), 1000, I32) + 100,
               "ids + 1000 < full(1000) + 100"),
        _range("range_table_entry", lambda ids: ids < jnp.array([100, 7], I32)[0],
               "ids < table[0] (table = [100, 7]: a constant array's entry, no splat literal)"),
        _range("range_offset_add", lambda ids: ids + (jnp.full((), 500, I32) + 500) < 1100,
               "ids + (full(500) + 500) < 1100 (the offset a computed number)"),
    ]


def range_device_entry(t: int, v: int, hd: int) -> Pair:
    """The vocabulary-parallel lookup whose bug masks the local ids at a device's entry of a
    constant table (`local < [100, 101, 102, 103][tp]`): no splat literal names the split."""
    vl = v // TP

    def ref(emb: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(jnp.take(emb, ids, axis=0), axis=0)

    def body(bug: bool) -> Callable[..., jax.Array]:
        def f(emb: jax.Array, ids: jax.Array) -> jax.Array:
            tp = lax.axis_index("tp")
            local = ids - tp * vl
            ok = (local >= 0) & (local < vl)
            if bug:
                ok = ok & (local < jnp.array([100 + q for q in range(TP)], I32)[tp])
            rows = jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0)
            return lax.psum(jnp.sum(jnp.where(ok[:, None], rows, 0.0), axis=0), "tp")
        return f

    def sharded(bug: bool) -> Callable[..., jax.Array]:
        return _smap(MESH_TP, body(bug), (P("tp", None), P(None)), P(None))
    ASSUME["range_device_entry"] = {"arg1": "vocab"}
    return Pair("range_device_entry", "b", "small", {"tokens": t, "vocab": v, "hidden": hd},
                [Arg((v, hd)), Arg((t,), I32, v)], ref, sharded(False), sharded(True),
                "local ids masked at [100, 101, 102, 103][tp] (a device's entry of a constant table)")


def range_device_table(t: int, v: int, hd: int) -> list[Pair]:
    """The vocabulary-parallel lookup through a table of block starts (constants.LOOKUP_TABLES
    ties a table of q * B): the bug's table is shifted by one row (entries B q + 1, no
    multiples of the block), so each shard reads its block one row off."""
    vl = v // TP

    def ref(emb: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(jnp.take(emb, ids, axis=0), axis=0)

    def body(shift: int) -> Callable[..., jax.Array]:
        def f(emb: jax.Array, ids: jax.Array) -> jax.Array:
            table = jnp.array([q * vl + (shift if shift > 0 or q == TP - 1 else 0) for q in range(TP)], I32)
            local = ids - table[lax.axis_index("tp")]
            ok = (local >= 0) & (local < vl)
            rows = jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0)
            return lax.psum(jnp.sum(jnp.where(ok[:, None], rows, 0.0), axis=0), "tp")
        return f

    def sharded(shift: int) -> Callable[..., jax.Array]:
        return _smap(MESH_TP, body(shift), (P("tp", None), P(None)), P(None))
    ASSUME["lookup_table_shift"] = {"arg1": "vocab"}
    ASSUME["lookup_table_both"] = {"arg1": "vocab"}
    return [Pair("lookup_table_shift", "h", "small", {"tokens": t, "vocab": v, "hidden": hd},
                 [Arg((v, hd)), Arg((t,), I32, v)], ref, sharded(0), sharded(1),
                 "the table of block starts shifted by one row (q * 128 + 1)"),
            # The reference itself reads the table: an untied table is the same wrong
            # table in both programs at the shrunk sizes.
            Pair("lookup_table_both", "h", "small", {"tokens": t, "vocab": v, "hidden": hd},
                 [Arg((v, hd)), Arg((t,), I32, v)], sharded(0), sharded(0), sharded(-1),
                 "the sharded lookup against itself with the last shard's block start one row early (383)")]


def scatter_size_index(t: int, hd: int) -> Pair:
    """A scatter-add of the tokens' rows into t rows at `ids + full(t) - t`: the bug writes
    the shift as `full(16) - 16` only where a size-named number computes it: at t the same;
    a bug that adds `full(t) - 15` moves every row by one (rows dropped past the end)."""
    def twin(delta: int) -> Callable[..., jax.Array]:
        def f(x: jax.Array, ids: jax.Array) -> jax.Array:
            n = _ones(x[:, 0]).astype(I32)
            at = ids + n - (t - delta)
            return jnp.zeros((t, hd), F32).at[at].add(x, mode="drop")
        return f

    def ref(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.zeros((t, hd), F32).at[ids].add(x, mode="drop")
    ASSUME["scatter_size_index"] = {"arg1": "tokens"}
    return Pair("scatter_size_index", "h", "small", {"tokens": t, "hidden": hd},
                [Arg((t, hd)), Arg((t,), I32, t)], ref, twin(0), twin(1),
                "a scatter-add at ids + T - 15 (every row moved by one) where the correct twin adds T - 16")


def pad_not_half(n: int, hd: int) -> Pair:
    """x rolled by padding: the correct twin pads by n / 2 (a rotate-half, as RoPE's
    concatenate of halves), the bug pads by a third of n (read wrongly as a half)."""
    def roll(x: jax.Array, k: int) -> jax.Array:
        padded = lax.pad(x, jnp.float32(0), [(0, 0, 0), (k, 0, 0)])
        return padded[:, :hd * 0 + n] + lax.pad(x[:, n - k:], jnp.float32(0), [(0, 0, 0), (0, n - k, 0)])

    def ref(x: jax.Array) -> jax.Array:
        return jnp.roll(x, n // 2, axis=1)
    return Pair("pad_not_half", "h", "small", {"rows": hd, "n": n}, [Arg((hd, n))], ref,
                lambda x: roll(x, n // 2), lambda x: roll(x, n // 2 + 2),
                f"a roll by {n // 2 + 2} (pads of {n // 2 + 2} and {n // 2 - 2}) where the reference rolls by {n // 2}")


def pairs() -> list[Pair]:
    return counts() + wraps() + fixed() + ranges() + [range_device_entry(T, 512, HD), *range_device_table(T, 512, HD),
                                                      scatter_size_index(T, HD), pad_not_half(16, HD)]


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
