"""A seventh red-team batch of shrinking pairs (helper-53; docs/shrinking.md, "Red-team
batch 7"), first against Newton's constant terms of values that are the same number at
every position though they have a degree (the open end of "Squares": exp(square(x * 0))),
then against the rules the last two stops added.

Every pair but the last is `sum(x, 0) * count` (as in gen_redteam6.py) with a count over the tokens that
is c * T at every input, written through a value that is the same at every position:
- `fixed_*`: a sum over the tokens of f(g(x * 0)) with g a square, cos, tanh, logistic,
  rsqrt, a convert, a reduce of a fixed value, a select by a predicate of a fixed value, a
  compare of a fixed value, a loop that carries a fixed value; a product written in the
  other order (x * y - y * x), an atom of an argument that folds (exp(x) - exp(x + y * 0)),
  max(x, x) - x, a select by positions of two values alike (where(iota < 5, 0, x * 0));
  and (not folded by the verifier either) a square written out, (x + 1)^2 - x^2 - 2 x - 1;
- `taut_*` (rule k's zero types): count(exp(x) > 1) + count(exp(x + y * 0) <= 1),
  count(x > 0) + count(id(x) <= 0) with id a called function, count(where(x > 0, y * 0 + 2,
  2) > 1);
- `call_const`: sum(x + 1) inside a called function (its argument's constant term);
- `count_scaled`: a sum of 0.75 over the tokens against the bug's 1.5 (rule a's count is
  0.75 n, not n: constants.order, another room's; the test is an expected failure).
- `range_device_scalar` (rule b through a device's offset; open, an expected failure): no
  count; gen_device_offsets.py's range_device with the bug's mask written
  `local + 1000 < 1100 + tp * 0` (the split's number computed from a device id).
The correct twin counts with a sum of ones times the constant (a count of a constant, rule
a's size value); the bug twin writes the count at the size its class shrank to when the
summand was read as a fresh variable with no constant term.

Same form as testdata/gen_redteam6.py: `testdata/redteam7/<pair>.small.{ref,ok,bug}.mlir`,
listed in `manifest.json` with each pair's assumed ranges. Every twin is run on XLA at its
original sizes (random inputs and both ends of the ids' range): the generator asserts that
the correct twin agrees with the reference and the bug twin differs.

    .venv/bin/python testdata/gen_redteam7.py
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
OUT = Path(__file__).resolve().parent / "redteam7"
# pair -> {input: the size name its assumed range [0, size) ends at} (none in this batch yet)
ASSUME: dict[str, dict[str, str]] = {}


def _ones(v: jax.Array) -> jax.Array:
    """The number of v's elements as a sum of ones (a count of a constant: rule a's)."""
    return jnp.sum((v * 0 + 1).astype(F32))


def _counted(name: str, t: int, hd: int, count: Callable[[jax.Array, jax.Array], jax.Array], per: float,
             bug_n: int, what: str, ids_hi: int = 50) -> Pair:
    """sum(x) times a count over the tokens that is `per` * t at every input; the correct
    twin is a sum of ones times `per`, the bug twin writes `per * bug_n` (the count at the
    size the tokens shrank to when the summand was read without a constant term)."""
    c = np.float32(per)

    def twin(kind: str):
        def f(x, ids):
            n = count(x, ids) if kind == "ref" else (_ones(x[:, 0]) * c if kind == "ok" else c * np.float32(bug_n))
            return jnp.sum(x, axis=0) * n
        return f
    return Pair(name, "newton", "small", {"tokens": t, "hidden": hd, "vocab": ids_hi},
                [Arg((t, hd)), Arg((t,), I32, ids_hi)], twin("ref"), twin("ok"), twin("bug"), what)


def _loop_fixed(x0: jax.Array) -> jax.Array:
    """exp of a value a fori_loop carries: it starts at x * 0 and adds x * 0 each trip."""
    z = lax.fori_loop(0, 3, lambda i, c: c + x0 * 0.0, x0 * 0.0)
    return jnp.sum(jnp.exp(z))


def range_device_scalar(t: int, v: int, hd: int, u: int, off: int) -> Pair:
    """Rule b through a device's offset (id_splits.DEVICE_OFFSETS), the split's constant
    written as a number made of device ids and constants (`1100 + tp * 0`), no literal: the
    bug drops the rows at local positions u.. of every shard (range_device's bug)."""
    vl = v // TP

    def ref(emb, ids):
        return jnp.sum(jnp.take(emb, ids, axis=0), axis=0)

    def body(bug: bool):
        def f(emb, ids):
            tp = lax.axis_index("tp")
            local = ids - tp * vl
            ok = (local >= 0) & (local < vl)
            if bug:
                ok = ok & (local + off < off + u + tp * 0)
            rows = jnp.take(emb, jnp.clip(local, 0, vl - 1), axis=0)
            return lax.psum(jnp.sum(jnp.where(ok[:, None], rows, 0.0), axis=0), "tp")
        return f

    def sharded(bug: bool):
        return _smap(MESH_TP, body(bug), (P("tp", None), P(None)), P(None))

    ASSUME["range_device_scalar"] = {"arg1": "vocab"}
    return Pair("range_device_scalar", "b", "small", {"tokens": t, "vocab": v, "hidden": hd, "special": u},
                [Arg((v, hd)), Arg((t,), I32, v)], ref, sharded(False), sharded(True),
                f"rows at local positions {u} to {vl - 1} of every shard masked (local + {off} < {off + u} + tp * 0)")


@jax.jit
def _call_sum(v: jax.Array) -> jax.Array:
    """A sum in a function of its own (a func.call in the lowered module)."""
    return jnp.sum(v)


@jax.jit
def _call_id(v: jax.Array) -> jax.Array:
    """v, through a function of its own (a func.call whose result is its argument)."""
    return v


def pairs() -> list[Pair]:
    t, hd = 16, 4
    x0 = lambda x: x[:, 0]  # noqa: E731 - one token's first feature
    z = lambda x: x[:, 0] * 0.0  # noqa: E731 - the same (0) at every token, of degree 1
    out = [
        _counted("fixed_square", t, hd, lambda x, ids: jnp.sum(jnp.exp(lax.square(z(x)))), 1.0, 2,
                 "a sum of exp(square(x * 0)) (1 at every token) as 2"),
        _counted("fixed_cos", t, hd, lambda x, ids: jnp.sum(jnp.cos(z(x))), 1.0, 2,
                 "a sum of cos(x * 0) (1 at every token) as 2"),
        _counted("fixed_tanh", t, hd, lambda x, ids: jnp.sum(jnp.exp(jnp.tanh(z(x)))), 1.0, 2,
                 "a sum of exp(tanh(x * 0)) as 2"),
        _counted("fixed_logistic", t, hd, lambda x, ids: jnp.sum(2.0 * jax.nn.sigmoid(z(x))), 1.0, 2,
                 "a sum of 2 logistic(x * 0) as 2"),
        _counted("fixed_rsqrt", t, hd, lambda x, ids: jnp.sum(lax.rsqrt(lax.square(z(x)) + 1.0)), 1.0, 2,
                 "a sum of rsqrt(square(x * 0) + 1) as 2"),
        _counted("fixed_convert", t, hd, lambda x, ids: jnp.sum(jnp.exp(z(x).astype(I32).astype(F32))), 1.0, 2,
                 "a sum of exp(float(int(x * 0))) as 2"),
        _counted("fixed_reduce", t, hd, lambda x, ids: jnp.sum(jnp.exp(jnp.sum(x * 0.0, axis=1))), 1.0, 2,
                 "a sum over the tokens of exp(sum over hidden of x * 0) as 2"),
        _counted("fixed_select", t, hd, lambda x, ids: jnp.sum(jnp.exp(
            jnp.where(jnp.cos(z(x)) > 0.5, z(x), x0(x)))), 1.0, 2,
                 "a sum of exp(where(cos(x * 0) > 0.5, x * 0, x)) (cos(0) = 1: 1 everywhere) as 2"),
        _counted("fixed_compare", t, hd, lambda x, ids: jnp.sum((jnp.cos(z(x)) > 0.5).astype(F32)), 1.0, 2,
                 "a count of cos(x * 0) > 0.5 (true everywhere) as 2"),
        _counted("fixed_commute", t, hd, lambda x, ids: jnp.sum(jnp.exp(x[:, 0] * x[:, 1] - x[:, 1] * x[:, 0])),
                 1.0, 2, "a sum of exp(x * y - y * x) as 2"),
        _counted("fixed_loop", t, hd, lambda x, ids: _loop_fixed(x0(x)), 1.0, 2,
                 "a sum of exp of a loop's carried x * 0 as 2"),
        _counted("fixed_positions", 64, hd, lambda x, ids: jnp.sum(jnp.exp(
            jnp.where(lax.iota(I32, 64) < 5, 0.0, z(x)))), 1.0, 16,
                 "a sum of exp(where(iota < 5, 0, x * 0)) (1 at every token: a select by positions of two "
                 "values the same everywhere) as 16"),
        _counted("fixed_congruent", t, hd, lambda x, ids: jnp.sum(jnp.exp(
            jnp.exp(x0(x)) - jnp.exp(x0(x) + x[:, 1] * 0.0))), 1.0, 2,
                 "a sum of exp(exp(x) - exp(x + y * 0)) (1 at every token: the atoms are one term) as 2"),
        _counted("taut_congruent", t, hd, lambda x, ids: jnp.sum((jnp.exp(x0(x)) > 1.0).astype(F32))
                 + jnp.sum((jnp.exp(x0(x) + x[:, 1] * 0.0) <= 1.0).astype(F32)), 1.0, 8,
                 "count(exp(x) > 1) + count(exp(x + y * 0) <= 1) (one atom: T) as 8"),
        _counted("taut_select_same", t, hd, lambda x, ids: jnp.sum(
            (jnp.where(x0(x) > 0, x[:, 1] * 0.0 + 2.0, 2.0) > 1.0).astype(F32)), 1.0, 8,
                 "a count of where(x > 0, y * 0 + 2, 2) > 1 (2 at both outcomes: true everywhere) as 8"),
        _counted("taut_call", t, hd, lambda x, ids: jnp.sum((x0(x) > 0).astype(F32))
                 + jnp.sum((_call_id(x0(x)) <= 0).astype(F32)), 1.0, 8,
                 "count(x > 0) + count(id(x) <= 0), id a called function (T) as 8"),
        _counted("fixed_max_self", t, hd, lambda x, ids: jnp.sum(jnp.exp(jnp.maximum(x0(x), x0(x)) - x0(x))), 1.0, 2,
                 "a sum of exp(max(x, x) - x) (1 at every token) as 2"),
        _counted("count_scaled", t, hd, lambda x, ids: jnp.sum(x0(x) * 0.0 + 0.75), 0.75, 2,
                 "a sum of 0.75 over the tokens (3 T / 4) written as 1.5"),
        _counted("fixed_poly", t, hd, lambda x, ids: jnp.sum(jnp.exp(
            lax.square(x0(x) + 1.0) - lax.square(x0(x)) - 2.0 * x0(x) - 1.0)), 1.0, 2,
                 "a sum of exp((x + 1)^2 - x^2 - 2 x - 1) (1 at every token) as 2"),
        _counted("call_const", t, hd, lambda x, ids: _call_sum(x0(x) + 1.0) - jnp.sum(x0(x)), 1.0, 2,
                 "sum(x + 1) - sum(x) with the first sum in a called function, as 2"),
        range_device_scalar(16, 512, 4, 100, 1000),
    ]
    return out


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
