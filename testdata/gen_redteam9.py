"""Red-team batch 9 (docs/shrinking.md, "Red-team batch 9"): pairs aimed at what batch 8
left open.

Wraps (rule k's zero types read integer compares as affine forms over unbounded integers,
`zero_types._widens` takes a narrowing convert as exact): a count of a predicate that is
true at every input because the integers wrap, which the normal form decides false (or
cannot decide), so the predicated sum looks like a sum with a zero type and the tokens
are not counted. The reference is `sum(x, 0) * c` with c = T at every input; the correct
twin counts with a sum of ones, the bug twin writes the count as the literal 4 (the size
rule k's bound leaves the tokens at):
- `wrap_narrow_eq`: `int8(ids + 256) == int8(ids)` (the nf: 256 apart, never equal);
- `wrap_sum_eq`: `ids + 2^30 + 2^30 == ids - 2^30 - 2^30` (int32: both ids + 2^31);
- `wrap_mul_zero`: `ids * 2^16 * 2^16 == 0` (int32: 2^32 is 0);
- `wrap_unsigned`: `uint32(ids) + 2^31 + 2^31 == uint32(ids)`.
Bounded atoms (the normal form read every atom as a free value with an interval, where the
verifier interprets it): `bound_sign` (`sign(x) <= 1`), `bound_rem` (`rem(ids, 2) < 2`),
`bound_and` (`ids & 1 <= 1`), `bound_shift` (`ids >> 31 <= 0`), `bound_sumsq` (`sum_h x^2 >=
0`), `bound_dot` (`x . x >= 0`), `bound_sos` (`x0^2 - 2 x0 x1 + x1^2 >= 0`); held before:
`bound_select` (`where(x > 0, 1, 2) > 0`), `bound_bool` (`float(x > 0) <= 1`), `bound_pair`
(`x <= 1 or x^2 > 1`), `bound_table` (`[1, ..., 8][ids] > 0`).
Positions (rule a, sizes met by positions): `meet_last` (the last token picked by a slice in
the reference, by `iota == V - 1` in the bug, V < T another input's rows), `meet_slice` (the
bug's pick a dynamic slice: held).

Every twin is run on XLA at its original sizes (random inputs and both ends of the ids'
range): the generator asserts that the correct twin agrees with the reference and the bug
twin differs. `testdata/redteam9/<pair>.small.{ref,ok,bug}.mlir`, `manifest.json`.

    .venv/bin/python testdata/gen_redteam9.py
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
from gen_shrink_rules import I32, Arg, Pair  # noqa: E402
from jax import lax  # noqa: E402

F32 = jnp.float32
OUT = Path(__file__).resolve().parent / "redteam9"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {}
T, HD = 16, 4


def _x0(x: jax.Array) -> jax.Array:
    return x[:, 0]


def _ones(v: jax.Array) -> jax.Array:
    """The number of v's elements as a sum of ones (a count of a constant: rule a's)."""
    return jnp.sum((v * 0 + 1).astype(F32))


def _wrap(name: str, p: Callable[[jax.Array], jax.Array], what: str, bug_count: float = 4.0) -> Pair:
    """sum(x, 0) times the count of p over the tokens (T at every input: p always holds);
    the correct twin counts ones, the bug writes `bug_count`."""
    def ref(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * jnp.sum(jnp.where(p(ids), 1.0, _x0(x) * 0.0))

    def ok(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * _ones(_x0(x))

    def bug(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * jnp.float32(bug_count)
    return Pair(name, "k", "small", {"tokens": T, "hidden": HD}, [Arg((T, HD)), Arg((T,), I32, 50)],
                ref, ok, bug, what + f" (T at every input) written {bug_count:g}")


def wraps() -> list[Pair]:
    b30 = np.int32(1 << 30)
    u31 = np.uint32(1 << 31)
    return [
        _wrap("wrap_narrow_eq", lambda ids: (ids + 256).astype(jnp.int8) == ids.astype(jnp.int8),
              "count(int8(ids + 256) == int8(ids))"),
        _wrap("wrap_sum_eq", lambda ids: ids + b30 + b30 == ids - b30 - b30,
              "count(ids + 2^30 + 2^30 == ids - 2^30 - 2^30)"),
        _wrap("wrap_mul_zero", lambda ids: ids * np.int32(65536) * np.int32(65536) == 0,
              "count(ids * 2^16 * 2^16 == 0)"),
        _wrap("wrap_unsigned", lambda ids: ids.astype(jnp.uint32) + u31 + u31 == ids.astype(jnp.uint32),
              "count(uint32(ids) + 2^31 + 2^31 == uint32(ids))"),
    ]


def _count(name: str, p: Callable[[jax.Array, jax.Array], jax.Array], what: str, bug_count: float,
           rows: bool = False) -> Pair:
    """As `_wrap`, the predicate of the tokens' x (their rows with `rows`, else x[:, 0]) and ids."""
    def ref(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * jnp.sum(jnp.where(p(x if rows else _x0(x), ids), 1.0, _x0(x) * 0.0))

    def ok(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * _ones(_x0(x))

    def bug(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * jnp.float32(bug_count)
    return Pair(name, "k", "small", {"tokens": T, "hidden": HD}, [Arg((T, HD)), Arg((T,), I32, 50)],
                ref, ok, bug, what + f" (T at every input) written {bug_count:g}")


def bounded() -> list[Pair]:
    return [
        _count("bound_select", lambda x, ids: jnp.where(x > 0, 1.0, 2.0) > 0, "count(where(x > 0, 1, 2) > 0)", 4.0),
        _count("bound_sign", lambda x, ids: jnp.sign(x) <= 1.0, "count(sign(x) <= 1)", 4.0),
        _count("bound_rem", lambda x, ids: lax.rem(ids, np.int32(2)) < 2, "count(rem(ids, 2) < 2)", 4.0),
        _count("bound_and", lambda x, ids: (ids & 1) <= 1, "count(ids & 1 <= 1)", 4.0),
        _count("bound_shift", lambda x, ids: lax.shift_right_arithmetic(ids, np.int32(31)) <= 0,
               "count(ids >> 31 <= 0)", 4.0),
        _count("bound_bool", lambda x, ids: (x > 0).astype(F32) <= 1.0, "count(float(x > 0) <= 1)", 4.0),
        _count("bound_sumsq", lambda x, ids: jnp.sum(x * x, axis=1) >= 0.0, "count(sum_h x^2 >= 0)", 4.0, True),
        _count("bound_dot", lambda x, ids: jnp.einsum("th,th->t", x, x) >= 0.0, "count(x . x >= 0)", 4.0, True),
        _count("bound_sos", lambda x, ids: x[:, 0] * x[:, 0] - 2.0 * x[:, 0] * x[:, 1] + x[:, 1] * x[:, 1] >= 0.0,
               "count(x0^2 - 2 x0 x1 + x1^2 >= 0)", 4.0, True),
        _count("bound_pair", lambda x, ids: (x <= 1.0) | (x * x > 1.0), "count(x <= 1 or x^2 > 1)", 4.0),
        _count("bound_table",
               lambda x, ids: jnp.take(jnp.asarray(np.arange(1.0, 9.0, dtype=np.float32)), ids, mode="clip") > 0.0,
               "count(table[ids] > 0) (a table of 1..8)", 4.0),
    ]


def meet_last(t: int, v: int, hd: int) -> Pair:
    """The last token, picked by a slice (the reference) or by a compare of the positions
    with the last position (the correct twin); the bug compares them with V - 1, the last
    row of another input (V < T), whose sum of fourth powers keeps V at 4 (Newton)."""
    def tail(emb: jax.Array) -> jax.Array:
        return jnp.sum(emb ** 4, axis=0) * 0.01

    def pick(k: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def f(x: jax.Array, emb: jax.Array) -> jax.Array:
            pos = lax.broadcasted_iota(I32, (t, 1), 0)
            return jnp.sum(jnp.where(pos == k, x, 0.0), axis=0) + tail(emb)
        return f

    def ref(x: jax.Array, emb: jax.Array) -> jax.Array:
        return x[t - 1] + tail(emb)
    return Pair("meet_last", "a", "small", {"tokens": t, "vocab": v, "hidden": hd}, [Arg((t, hd)), Arg((v, hd))],
                ref, pick(t - 1), pick(v - 1), f"the token at V - 1 = {v - 1} where the last, {t - 1}, is right")


def meet_slice(t: int, v: int, hd: int) -> Pair:
    """As `meet_last`, the bug picking the token at V - 1 by a dynamic slice."""
    def tail(emb: jax.Array) -> jax.Array:
        return jnp.sum(emb ** 4, axis=0) * 0.01

    def pick(k: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def f(x: jax.Array, emb: jax.Array) -> jax.Array:
            return lax.dynamic_slice_in_dim(x, jnp.int32(k), 1, axis=0)[0] + tail(emb)
        return f

    def ref(x: jax.Array, emb: jax.Array) -> jax.Array:
        return x[t - 1] + tail(emb)
    return Pair("meet_slice", "a", "small", {"tokens": t, "vocab": v, "hidden": hd}, [Arg((t, hd)), Arg((v, hd))],
                ref, pick(t - 1), pick(v - 1), f"the token at V - 1 = {v - 1} (a dynamic slice), not the last")


def wrap_count_convert(t: int, hd: int) -> Pair:
    """The tokens' count, a float, scaled by 2^27 and made int32 (2^31 at 16 tokens: out of
    range) and shifted back: the count below 16 tokens, something else at 16."""
    def ref(x: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) * _ones(_x0(x))

    def bug(x: jax.Array) -> jax.Array:
        c = (_ones(_x0(x)) * np.float32(1 << 27)).astype(I32)
        return jnp.sum(x, axis=0) * lax.shift_right_arithmetic(c, np.int32(27)).astype(F32)
    return Pair("wrap_count_convert", "a", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd))], ref,
                lambda x: jnp.sum(x, axis=0) * _ones(_x0(x)) * 1.0, bug,
                "int32(count * 2^27) >> 27 (2^31 at 16 tokens leaves int32)")


def pairs() -> list[Pair]:
    return wraps() + bounded() + [meet_last(T, 12, HD), meet_slice(T, 12, HD), wrap_count_convert(T, HD)]


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
