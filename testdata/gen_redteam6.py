"""A sixth red-team batch of shrinking pairs (helper-49), written against rule (k)'s
counts of predicates the verifier decides (batch 5's open `count_tautology`) and against
the last stop's arguments: rule t's `trips.MEMBER_DEFS`, Newton's constant terms
(`constant_terms.CONSTANT_TERMS`), rule k after its zero-type fix, and the scaled runs
(`stages/lift.scaled_runs`, no pair: they only lift differences XLA confirms).
docs/shrinking.md, "Red-team batch 6", has each pair's verdicts before and after.

Most pairs are `sum(x, 0) * count` with a count over the tokens that is T at every input:
- `taut_*`: a count of a predicate true everywhere (x <= x, not(ids != ids), ids + 1 > ids,
  iota(T) < T, ids >= 0 on an assumed range, x * x >= 0, x * x + y * y >= 0, max(x, 0) >= 0,
  where(iota >= 0, 1, 0)), or of predicates that together cover every input (x > 0 and
  x <= 0; x[:, 0] > 0 and x.T[0] <= 0; where(x > 0, 1, 1); x >= 0 or y >= 0 or x + y < 0);
- `exp_cancel`, `exp_select`: a sum of an atom whose argument is the same everywhere
  (exp(x - x), exp(where(y > 0, 0, x - x)));
- `const_lookup`: a table of ones read at the ids; `iota_sum`: the sum of the positions;
- `trip_manual` (rule t): a count of H enters a shard_map as a scalar and meets a scan's
  counter there (`k - i == 11`).
The correct twin counts with a sum of ones (a count of a constant, rule a's size value); the
bug twin writes the literal the count equalled at the size its class shrank to.

Same form as testdata/gen_redteam5.py: `testdata/redteam6/<pair>.small.{ref,ok,bug}.mlir`,
listed in `manifest.json` with each pair's assumed ranges. Every twin is run on XLA at its
original sizes (random inputs and both ends of the ids' range): the generator asserts that
the correct twin agrees with the reference and the bug twin differs.

    .venv/bin/python testdata/gen_redteam6.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_shrink_rules  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, MESH_TP, Arg, Pair, _smap  # noqa: E402
from jax import lax  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

F32 = jnp.float32
OUT = Path(__file__).resolve().parent / "redteam6"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {}


def _counted(name: str, t: int, hd: int, count, bug_n: int, what: str, ids_hi: int = 50, over: str = "x") -> Pair:
    """sum(x) times a count over the tokens that is t at every input (`count(x, ids)`);
    the correct twin counts them as a sum of ones (t), the bug twin writes `bug_n` (the
    size the tokens shrank to when the count was read as a data predicate's)."""
    def twin(kind: str):
        def f(x, ids):
            n = count(x, ids) if kind == "ref" else (
                _ones(x[:, 0] if over == "x" else ids) if kind == "ok" else jnp.float32(bug_n))
            return jnp.sum(x, axis=0) * n
        return f
    return Pair(name, "k", "small", {"tokens": t, "hidden": hd, "vocab": ids_hi},
                [Arg((t, hd)), Arg((t,), I32, ids_hi)], twin("ref"), twin("ok"), twin("bug"), what)


def _ones(v: jax.Array) -> jax.Array:
    """The number of v's elements as a sum of ones (a count of a constant: rule a's)."""
    return jnp.sum((v * 0 + 1).astype(F32))


def _c(p: jax.Array) -> jax.Array:
    return jnp.sum(p.astype(F32))


def _count(x: jax.Array) -> jax.Array:
    """The number of x's elements, computed in the program (a value of x's class size)."""
    return jnp.sum((x * 0 + 1).astype(I32))


def trip_manual(h: int, layers: int) -> Pair:
    """Rule t inside a manual computation: k = a count of H's elements enters a shard_map
    as a (replicated) scalar operand; inside, a scan's counter meets it (`k - i == h - 1`):
    a region argument of the manual computation is made by no op of the group."""
    def twin(kind: str):
        def f(x, ws):
            k = _count(x)

            def inner(x, ws, k):
                def layer(carry, w):
                    s, i = carry
                    term = jnp.sum(x * w)
                    if kind != "ref":
                        hit = k - i == h - 1
                        term = jnp.where(hit, 0.0 if kind == "bug" else jnp.sum(w * x), term)
                    return (s + term, i + 1), None
                (s, _), _ = lax.scan(layer, (jnp.float32(0), jnp.int32(0)), ws)
                return s
            return _smap(MESH_TP, inner, (P(), P(), P()), P())(x, ws, k)
        return f
    return Pair("trip_manual", "t", "small", {"positions": h, "layers": layers},
                [Arg((h,)), Arg((layers, h))], twin("ref"), twin("ok"), twin("bug"),
                f"inside a shard_map, layer i is skipped where count - i == {h - 1} (layer 1 at H = {h})")


def iota_sum(t: int, hd: int) -> Pair:
    """sum(x) times the sum of the positions 0..T-1 (an iota along the tokens, joined with
    x by `+ x * 0`): T (T - 1) / 2, a size value no constant writes. The correct twin sums
    the positions backwards (T - 1 - iota); the bug writes 6, the sum at T' = 4."""
    def twin(kind: str):
        def f(x):
            pos = lax.iota(F32, t)
            pos = pos if kind == "ref" else (t - 1.0) - pos
            s = jnp.sum(pos + x[:, 0] * 0.0) if kind != "bug" else jnp.float32(6.0)
            return jnp.sum(x, axis=0) * s
        return f
    return Pair("iota_sum", "b", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd))], twin("ref"), twin("ok"),
                twin("bug"), f"the sum of the positions 0..{t - 1} written as 6")


def pairs() -> list[Pair]:
    t, hd = 16, 4
    x0 = lambda x: x[:, 0]  # noqa: E731 - one token's first feature
    out = [
        _counted("taut_le", t, hd, lambda x, ids: _c(x0(x) <= x0(x)), 4, "a count of x <= x written as 4"),
        _counted("taut_not_ne", t, hd, lambda x, ids: _c(~(ids != ids)), 8, "a count of not(ids != ids) as 8",
                 over="ids"),
        _counted("taut_shift", t, hd, lambda x, ids: _c(ids + 1 > ids), 2,
                 "a count of ids + 1 > ids (ids in [0, V)) as 2", over="ids"),
        _counted("taut_iota", t, hd, lambda x, ids: _c(lax.iota(I32, t) < t), 4, "a count of iota(T) < T as 4",
                 over="ids"),
        _counted("taut_range", t, hd, lambda x, ids: _c(ids >= 0), 2, "a count of ids >= 0 (ids in [0, V)) as 2",
                 over="ids"),
        _counted("taut_pair", t, hd, lambda x, ids: _c(x0(x) > 0) + _c(x0(x) <= 0), 8,
                 "count(x > 0) + count(x <= 0) written as 8"),
        _counted("taut_select", t, hd, lambda x, ids: jnp.sum(jnp.where(x0(x) > 0, 1.0, 0.0))
                 + jnp.sum(jnp.where(x0(x) > 0, 0.0, 1.0)), 8, "count(x > 0) + count(not x > 0) as 8"),
        _counted("taut_same", t, hd, lambda x, ids: jnp.sum(jnp.where(x0(x) > 0, 1.0, 1.0)), 4,
                 "a sum of where(x > 0, 1, 1) as 4"),
        _counted("taut_square", t, hd, lambda x, ids: _c(x0(x) * x0(x) >= 0), 4, "a count of x * x >= 0 as 4"),
        _counted("taut_cover", 64, hd, lambda x, ids: jnp.sum(jnp.where(
            x[:, 0] >= 0, 1.0, jnp.where(x[:, 1] >= 0, 1.0, jnp.where(x[:, 0] + x[:, 1] < 0, 1.0, 0.0)))), 16,
                 "a count of x >= 0 or y >= 0 or x + y < 0 (true everywhere, as nested wheres) as 16"),
        _counted("taut_squares", t, hd, lambda x, ids: _c(x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1] >= 0), 4,
                 "a count of x * x + y * y >= 0 as 4"),
        _counted("exp_cancel", t, hd, lambda x, ids: jnp.sum(jnp.exp(x0(x) - x0(x))), 2,
                 "a sum of exp(x - x) (1 at every token) as 2"),
        _counted("const_lookup", t, hd, lambda x, ids: jnp.sum(jnp.take(jnp.ones(50, F32), ids, mode="clip")), 2,
                 "a sum of a table of ones read at the ids as 2", over="ids"),
        iota_sum(t, hd),
        _counted("taut_positions", t, hd, lambda x, ids: jnp.sum(jnp.where(lax.iota(I32, t) >= 0, 1.0, 0.0)
                                                                 + x0(x) * 0.0), 4,
                 "a sum of where(iota >= 0, 1, 0) over the tokens as 4"),
        _counted("taut_max", t, hd, lambda x, ids: _c(jnp.maximum(x0(x), 0.0) >= 0), 4,
                 "a count of max(x, 0) >= 0 as 4"),
        _counted("taut_transpose", t, hd, lambda x, ids: _c(x0(x) > 0) + _c(x.T[0] <= 0), 8,
                 "count(x[:, 0] > 0) + count(x.T[0] <= 0) (one element read two ways) as 8"),
        _counted("taut_poly", t, hd, lambda x, ids: _c(x0(x) * x0(x) - 2.0 * x0(x) + 1.0 >= 0), 4,
                 "a count of x * x - 2 x + 1 >= 0 (a square, expanded) as 4"),
        trip_manual(12, 10),
        _counted("exp_select", t, hd, lambda x, ids: jnp.sum(jnp.exp(jnp.where(x[:, 1] > 0, 0.0, x0(x) - x0(x)))),
                 4, "a sum of exp(where(y > 0, 0, x - x)) (1 at both outcomes) as 4"),
    ]
    for p in out:
        if p.name in ("taut_range", "taut_shift"):
            ASSUME[p.name] = {"arg1": "vocab"}
    return out


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
