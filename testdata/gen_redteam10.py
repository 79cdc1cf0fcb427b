"""Red-team batch 10 (docs/shrinking-redteam10.md): pairs aimed at what batches 1-9 attacked
least. Each is a reference, a correct twin and a bug twin; the bug writes, as a literal or
through another class, what the reference computes from a size, at the value it takes at
the shrunk sizes (so it can only hide if the plan shrinks to them):

- counts through reductions other than sums: `prod_count` (prod_t 1.5 = 1.5^T), `max_count`
  (max(iota) + 1), `or_last` (any(iota == V - 1) of a longer class);
- size values among themselves (`constants.PAIR_MEETING`) through a call, a while carry,
  converts: `meet_count`, `meet_call`, `meet_while`, `meet_convert`;
- integers that wrap at the original sizes only: `loop_int8_count` (an int8 counter in a
  loop of T trips), `iota_int8` (an int8 iota along the tokens);
- float sizes: `rsqrt_count` (x / sqrt(T) against the literal 1 / sqrt(T'));
- positions: `reverse_pick` (flip(x)[0] against x[3]), `concat_index` (concat(a, b)[T]
  against [V]), `argmax_rem` (argmax % 4), `reshape_last` (a merged (T, 3) dim's last element
  by an iota against a literal), `dus_offset` (an update at T - 1 against V - 1),
  `gather_batched` (a batched gather of ids clamped at 3), `cumsum_pick`, `sort_pick`.

Every twin is run on XLA at its original sizes (random inputs and both ends of the ids'
range): the generator asserts that the correct twin agrees with the reference and the bug
twin differs. `testdata/redteam10/<pair>.small.{ref,ok,bug}.mlir`, `manifest.json`.

    .venv/bin/python testdata/gen_redteam10.py
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
OUT = Path(__file__).resolve().parent / "redteam10"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {"gather_batched": {"ids": "hidden"}}
T, V, HD = 16, 12, 4
SHRUNK = 4  # the tokens' shrunk size the bugs are written for (a correct twin's plan)


def _x0(x: jax.Array) -> jax.Array:
    return x[:, 0]


def _ones(v: jax.Array) -> jax.Array:
    """The number of v's elements as a sum of ones (a count of a constant: rule a's)."""
    return jnp.sum((v * 0 + 1).astype(F32))


def _tail(emb: jax.Array) -> jax.Array:
    """Another class's rows, summed to the fourth power (Newton keeps them at 4)."""
    return jnp.sum(emb ** 4, axis=0) * 0.01


def _scaled(name: str, rule: str, c: Callable[[jax.Array], jax.Array], ok_c: Callable[[jax.Array], jax.Array],
            bug: float, what: str, t: int = T) -> Pair:
    """sum(x, 0) * c(x): the reference's c computed from the tokens' size, the correct twin's
    another way, the bug's the literal c takes at the shrunk size."""
    return Pair(name, rule, "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))],
                lambda x: jnp.sum(x, axis=0) * c(x), lambda x: jnp.sum(x, axis=0) * ok_c(x),
                lambda x: jnp.sum(x, axis=0) * jnp.float32(bug), what)


def counts() -> list[Pair]:
    def prod(x: jax.Array) -> jax.Array:
        return jnp.prod(_x0(x) * 0.0 + 1.5)

    def prod_ok(x: jax.Array) -> jax.Array:
        return jnp.prod(jnp.where(_x0(x) > 0, 1.5, 1.5 + _x0(x) * 0.0))

    def mx(x: jax.Array) -> jax.Array:
        return (jnp.max(lax.broadcasted_iota(I32, x.shape, 0)) + 1).astype(F32)

    return [
        _scaled("prod_count", "k", prod, prod_ok, 1.5 ** SHRUNK, "prod_t 1.5 (1.5^T) written 1.5^4"),
        _scaled("max_count", "a", mx, _ones_x0, float(SHRUNK), "max(iota) + 1 (T) written 4"),
    ]


def _ones_x0(x: jax.Array) -> jax.Array:
    return _ones(_x0(x))


def or_last(t: int, v: int) -> Pair:
    """any(iota_T == T - 1) is 1; the bug asks for V - 1 of a longer class (never a token)."""
    def f(k: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def g(x: jax.Array, emb: jax.Array) -> jax.Array:
            hit = jnp.any(lax.broadcasted_iota(I32, (t,), 0) == k)
            return jnp.sum(x, axis=0) * hit.astype(F32) + _tail(emb)
        return g

    def ok(x: jax.Array, emb: jax.Array) -> jax.Array:
        return jnp.sum(x, axis=0) + _tail(emb)
    return Pair("or_last", "a", "small", {"tokens": t, "vocab": v, "hidden": HD}, [Arg((t, HD)), Arg((v, HD))],
                f(t - 1), ok, f(v - 1), f"any(iota == V - 1 = {v - 1}) where T - 1 = {t - 1}")


def meets(t: int, v: int) -> list[Pair]:
    """sum(x, 0) times the tokens' count; the bug counts the rows of another input (V < T)
    by the same route: a plain count, through a call, a while carry, converts."""
    def plain(a: jax.Array) -> jax.Array:
        return _ones(_x0(a))

    @jax.jit
    def called(a: jax.Array) -> jax.Array:
        return _ones(_x0(a))

    def looped(a: jax.Array) -> jax.Array:
        n = a.shape[0]
        return lax.fori_loop(0, n, lambda i, c: c + 1.0, jnp.float32(0.0) + _x0(a)[0] * 0.0)

    def converted(a: jax.Array) -> jax.Array:
        c = jnp.sum((_x0(a) * 0 + 1).astype(I32))
        return c.astype(jnp.int16).astype(F32)

    out = []
    for name, cnt in (("meet_count", plain), ("meet_call", called), ("meet_while", looped),
                      ("meet_convert", converted)):
        def mk(use: str, cnt: Callable[[jax.Array], jax.Array] = cnt) -> Callable[[jax.Array, jax.Array], jax.Array]:
            def g(x: jax.Array, emb: jax.Array) -> jax.Array:
                return jnp.sum(x, axis=0) * cnt(x if use == "x" else emb) + _tail(emb)
            return g

        def ok(x: jax.Array, emb: jax.Array) -> jax.Array:
            return jnp.sum(x, axis=0) * _ones(_x0(x)) + _tail(emb)
        out.append(Pair(name, "a", "small", {"tokens": t, "vocab": v, "hidden": HD}, [Arg((t, HD)), Arg((v, HD))],
                        mk("x"), ok, mk("emb"), f"the count of emb's rows (V) where the tokens' (T) ({name})"))
    return out


def wraps() -> list[Pair]:
    tl = 200  # an int8 count of 200 wraps to -56

    def loop_count(dt: jnp.dtype) -> Callable[[jax.Array], jax.Array]:
        def c(x: jax.Array) -> jax.Array:
            n = lax.fori_loop(0, x.shape[0], lambda i, c: c + jnp.ones((), dt), jnp.zeros((), dt))
            return n.astype(F32)
        return c

    def iota_sum(dt: jnp.dtype) -> Callable[[jax.Array], jax.Array]:
        def f(x: jax.Array) -> jax.Array:
            pos = lax.broadcasted_iota(dt, (x.shape[0],), 0).astype(F32)
            return jnp.sum(x * pos[:, None], axis=0)
        return f

    return [
        Pair("loop_int8_count", "a", "small", {"tokens": tl, "hidden": HD}, [Arg((tl, HD))],
             lambda x: jnp.sum(x, axis=0) * loop_count(I32)(x), lambda x: jnp.sum(x, axis=0) * _ones(_x0(x)),
             lambda x: jnp.sum(x, axis=0) * loop_count(jnp.int8)(x), "the loop's count of T = 200 in int8 (-56)"),
        Pair("iota_int8", "a", "small", {"tokens": tl, "hidden": HD}, [Arg((tl, HD))],
             iota_sum(I32), iota_sum(jnp.uint8), iota_sum(jnp.int8),
             "sum_t x_t * t with t an int8 iota (wraps at 128)"),
    ]


def floats() -> list[Pair]:
    def rs(x: jax.Array) -> jax.Array:
        return lax.rsqrt(_ones(_x0(x)))

    def rs_ok(x: jax.Array) -> jax.Array:
        return lax.rsqrt(_ones(_x0(x)) * 1.0)
    return [_scaled("rsqrt_count", "a", rs, rs_ok, 1.0 / np.sqrt(SHRUNK), "1 / sqrt(T) written 1 / sqrt(4)")]


def dynamic(t: int) -> list[Pair]:
    """Sizes the program computes at run time: a loop's trip count, a slice's offset, an
    integer product that wraps at the original sizes only."""
    def n_int(x: jax.Array) -> jax.Array:
        return jnp.sum((_x0(x) * 0 + 1).astype(I32))

    def trips(x: jax.Array) -> jax.Array:
        return lax.fori_loop(0, n_int(x), lambda i, c: c + 1.5, jnp.float32(0.0))

    def last(k: Callable[[jax.Array], jax.Array]) -> Callable[[jax.Array], jax.Array]:
        return lambda x: lax.dynamic_slice_in_dim(x, k(x), 1, axis=0)[0]

    tw = 40  # 2^40 leaves int32 (0 there), 2^T' does not

    def pw(x: jax.Array) -> jax.Array:
        return jnp.prod(jnp.full(x.shape[:1], 2.0, F32) + _x0(x) * 0.0)

    def pw_int(x: jax.Array) -> jax.Array:
        return jnp.prod((_x0(x) * 0 + 2).astype(I32)).astype(F32)
    return [
        _scaled("while_dyn_trip", "a", trips, lambda x: _ones(_x0(x)) * 1.5, 1.5 * SHRUNK,
                "a loop of T trips (a computed count) adding 1.5, written 6"),
        Pair("dyn_slice_count", "a", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))],
             last(lambda x: n_int(x) - 1), lambda x: x[t - 1] * 1.0, last(lambda x: jnp.int32(SHRUNK - 1)),
             "x[count - 1] by a dynamic slice, written x[3]"),
        Pair("prod_int_wrap", "a", "small", {"tokens": tw, "hidden": HD}, [Arg((tw, HD))],
             lambda x: jnp.sum(x, axis=0) * pw(x), lambda x: jnp.sum(x, axis=0) * pw(x) * 1.0,
             lambda x: jnp.sum(x, axis=0) * pw_int(x), "prod_t 2 in int32 (2^40 wraps to 0)"),
    ]


def positions(t: int, v: int) -> list[Pair]:
    def ref_last(x: jax.Array) -> jax.Array:
        return jnp.flip(x, 0)[0]

    rev = Pair("reverse_pick", "a", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))], ref_last,
               lambda x: x[t - 1] * 1.0, lambda x: x[SHRUNK - 1] * 1.0, "flip(x)[0] (x[T - 1]) written x[3]")

    def cat(k: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def f(a: jax.Array, b: jax.Array) -> jax.Array:
            return jnp.concatenate([a, b], 0)[k] + _tail(b)
        return f
    conc = Pair("concat_index", "a", "small", {"tokens": t, "vocab": v, "hidden": HD}, [Arg((t, HD)), Arg((v, HD))],
                cat(t), lambda a, b: b[0] + _tail(b), cat(v), f"concat(a, b)[V = {v}] where [T = {t}] (b[0])")

    def am(x: jax.Array) -> jax.Array:
        return jnp.argmax(_x0(x)).astype(F32) + jnp.sum(x) * 0.0

    def am_ok(x: jax.Array) -> jax.Array:
        x0 = _x0(x)
        pos = lax.broadcasted_iota(I32, x0.shape, 0)
        return jnp.min(jnp.where(x0 == jnp.max(x0), pos, t)).astype(F32) + jnp.sum(x) * 0.0

    def am_bug(x: jax.Array) -> jax.Array:
        return (jnp.argmax(_x0(x)) % SHRUNK).astype(F32) + jnp.sum(x) * 0.0
    arg = Pair("argmax_rem", "c", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))], am, am_ok, am_bug,
               "argmax % 4")

    def flat_pick(k: int) -> Callable[[jax.Array], jax.Array]:
        def f(x: jax.Array) -> jax.Array:
            flat = x[:, :3].reshape(-1)
            pos = lax.broadcasted_iota(I32, flat.shape, 0)
            return jnp.sum(jnp.where(pos == k, flat, 0.0)) + jnp.sum(x, axis=0)
        return f
    resh = Pair("reshape_last", "a", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))], flat_pick(3 * t - 1),
                lambda x: x[t - 1, 2] + jnp.sum(x, axis=0), flat_pick(3 * SHRUNK - 1),
                "the last of (T, 3) merged, by iota == 3T - 1, written 3 * 4 - 1")

    def dus(k: int) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def f(x: jax.Array, emb: jax.Array) -> jax.Array:
            y = lax.dynamic_update_slice_in_dim(x, emb[:1] * 2.0, jnp.int32(k), axis=0)
            return jnp.sum(y * y, axis=0) + _tail(emb)
        return f
    upd = Pair("dus_offset", "a", "small", {"tokens": t, "vocab": v, "hidden": HD}, [Arg((t, HD)), Arg((v, HD))],
               dus(t - 1), lambda x, emb: jnp.sum(x[:t - 1] ** 2, axis=0) + 4.0 * emb[0] ** 2 + _tail(emb), dus(v - 1),
               f"an update at V - 1 = {v - 1} where the last row T - 1 = {t - 1}")

    def cs(k: int) -> Callable[[jax.Array], jax.Array]:
        return lambda x: jnp.cumsum(x, axis=0)[k]
    cum = Pair("cumsum_pick", "a", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))], cs(t - 1),
               lambda x: jnp.sum(x, axis=0), cs(SHRUNK - 1), "cumsum(x)[3] where [T - 1] (the sum)")

    def srt(k: int) -> Callable[[jax.Array], jax.Array]:
        return lambda x: jnp.sort(x, axis=0)[k]
    so = Pair("sort_pick", "c", "small", {"tokens": t, "hidden": HD}, [Arg((t, HD))], srt(t - 1),
              lambda x: jnp.max(x, axis=0), srt(SHRUNK - 1), "sort(x)[3] where [T - 1] (the max)")
    return [rev, conc, arg, resh, upd, cum, so]


def gather_batched(t: int, h: int) -> Pair:
    """x[t, ids[t]] by a gather with batching dims (vmap); the bug clamps the ids at 3."""
    def take(cap: int | None) -> Callable[[jax.Array, jax.Array], jax.Array]:
        def f(x: jax.Array, ids: jax.Array) -> jax.Array:
            i = ids if cap is None else jnp.minimum(ids, cap)
            return jax.vmap(lambda r, j: r[j])(x, i)
        return f

    def ok(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.take_along_axis(x, ids[:, None], axis=1)[:, 0]
    return Pair("gather_batched", "b", "small", {"tokens": t, "hidden": h}, [Arg((t, h)), Arg((t,), I32, h)],
                take(None), ok, take(SHRUNK - 1), "a batched gather of the ids clamped at 3")


def pairs() -> list[Pair]:
    return (counts() + [or_last(T, 20)] + meets(T, V) + wraps() + floats() + dynamic(T) + positions(T, V)
            + [gather_batched(T, 16)])


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
