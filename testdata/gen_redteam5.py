"""A fifth red-team batch of shrinking pairs (helper-43), written against the rules the
last stop added (docs/shrinking.md: rule (a)'s implicit clamps, rule (b)'s assumed ranges,
rule (t)'s trip predicates) by reading their arguments for the step that does not hold:

- `trip_count_sub` (rule t): a scan's counter i meets k = a count of H's elements through
  `k - i`, and that difference is compared with a literal (`where(k - i == 11, ...)`): the
  literal joins the counter's group (a trip predicate), and so does k, a value of H's size.
  The bug skips layer 1's weight at H = 12 (k - 1 = 11); at any H' < 12, k - i < 11.
- `trip_choose` (rule l, a choice between counters): a fori_loop slices layer
  `select(i + 11 < k, i + 1, i)` (k a count of H's elements) where the reference slices
  layer i: at H = 12 layer 0 reads layer 1's weight; at H' < 12 the choice never fires.
- `range_offset` (rule b, assumed ranges): ids in [0, vocab) masked by `ids + 1000 < 1100`
  (ids < 100 written with an offset): both literals are past the vocabulary (256), and a
  named position past |C| "bounds nothing". The bug does not mask.
- `range_negated`: the same mask written `1000 - ids > 900`.
- `clamp_scaled` (rule a, implicit clamps): a strided lookup `take(emb, 4 * ids)` (the
  gather clamps 4 ids at 255, so ids from 64 on read the last row) against the bug's
  `take(emb, 4 * minimum(ids, 40))`: the clamp orders the cap 40 with |C| - 1 but the index
  is 4 ids, so at |C'| <= 160 the cap never decides a row.
- `range_rem`: the same mask as `(ids + 1000) % 2000 < 1100` (no affine map).
- `range_count` (rule a, size values that meet): ids masked below a count of the tokens
  computed in the program (`ids < sum(ones(tokens))`); the bug does not mask.
- `range_iota`: ids masked below max(iota(tokens)) + 1, a value no input decides.
- `const_term` (Newton's argument): sum(x + 1) over the tokens against the bug's
  sum(x) + 2: the summand's constant term makes the sum hold the token count.
- `count_tautology` (rule k): a count of `ids == ids` (true everywhere) written as 4 (open).

Same form as testdata/gen_shrink_rules.py, whose helpers this imports:
`testdata/redteam5/<pair>.small.{ref,ok,bug}.mlir`, listed in `manifest.json` with each
pair's assumed ranges (`assume`: input -> the size name its range [0, size) ends at). Every
twin is run on XLA at its original sizes (random inputs and both ends of the ids' range):
the generator asserts that the correct twin agrees with the reference and the bug twin
differs.

    .venv/bin/python testdata/gen_redteam5.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_shrink_rules  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from gen_shrink_rules import I32, Arg, Pair  # noqa: E402
from jax import lax  # noqa: E402

F32 = jnp.float32
OUT = Path(__file__).resolve().parent / "redteam5"
# pair -> {input: the size name its assumed range [0, size) ends at}
ASSUME: dict[str, dict[str, str]] = {}


def _count(x: jax.Array) -> jax.Array:
    """The number of x's elements, computed in the program (a value of x's class size)."""
    return jnp.sum((x * 0 + 1).astype(I32))


def _scan_ref(x: jax.Array, ws: jax.Array) -> jax.Array:
    """A scan adding each layer's x . w_i (no value carried from layer to layer but the sum,
    so that H's summand degree is 2 without rule l's induction)."""
    def layer(s, w):
        return s + jnp.sum(x * w), None
    s, _ = lax.scan(layer, jnp.float32(0), ws)
    return s


def trip_count_sub(h: int, layers: int) -> Pair:
    """Layer i is skipped where k - i == h - 1 (k = h elements): layer 1 at the original H."""
    def twin(bug: bool):
        def f(x, ws):
            k = _count(x)

            def layer(carry, w):
                s, i = carry
                hit = k - i == h - 1
                term = jnp.where(hit, 0.0 if bug else jnp.sum(w * x), jnp.sum(x * w))
                return (s + term, i + 1), None
            (s, _), _ = lax.scan(layer, (jnp.float32(0), jnp.int32(0)), ws)
            return s
        return f
    return Pair("trip_count_sub", "t", "small", {"positions": h, "layers": layers},
                [Arg((h,)), Arg((layers, h))], _scan_ref, twin(False), twin(True),
                f"layer i is skipped where count - i == {h - 1} (layer 1 at H = {h})")


def trip_choose(h: int, layers: int) -> Pair:
    """A fori_loop slicing layer select(i + (h - 1) < k, i + 1, i), k = h elements."""
    def twin(kind: str):
        def f(x, ws):
            k = _count(x)

            def body(i, s):
                if kind == "bug":
                    at = lax.select(i + (h - 1) < k, i + 1, i)
                elif kind == "ok":
                    at = lax.select(i < 0, i + 1, i)  # never: a choice between counters
                else:
                    at = i
                return s + jnp.sum(x * lax.dynamic_index_in_dim(ws, at, keepdims=False))
            return lax.fori_loop(0, layers, body, jnp.float32(0))
        return f
    return Pair("trip_choose", "t", "small", {"positions": h, "layers": layers},
                [Arg((h,)), Arg((layers, h))], twin("ref"), twin("ok"), twin("bug"),
                f"layer 0 reads layer 1's weight where i + {h - 1} < count (at H = {h})")


def _pooled(mask):
    def f(emb, ids):
        rows = jnp.take(emb, ids, axis=0, mode="clip")
        return jnp.sum(jnp.where(mask(ids)[:, None], rows, 0.0), axis=0)
    return f


def range_offset(t: int, v: int, hd: int, u: int, off: int) -> Pair:
    ASSUME["range_offset"] = {"arg1": "vocab"}
    return Pair("range_offset", "b", "small", {"tokens": t, "vocab": v, "hidden": hd, "special": u},
                [Arg((v, hd)), Arg((t,), I32, v)], _pooled(lambda ids: ids + off < off + u),
                _pooled(lambda ids: ids < u), _pooled(lambda ids: ids >= 0),
                f"ids from {u} on (masked as ids + {off} < {off + u}) are not masked")


def range_negated(t: int, v: int, hd: int, u: int, off: int) -> Pair:
    ASSUME["range_negated"] = {"arg1": "vocab"}
    return Pair("range_negated", "b", "small", {"tokens": t, "vocab": v, "hidden": hd, "special": u},
                [Arg((v, hd)), Arg((t,), I32, v)], _pooled(lambda ids: off - ids > off - u),
                _pooled(lambda ids: ids < u), _pooled(lambda ids: ids >= 0),
                f"ids from {u} on (masked as {off} - ids > {off - u}) are not masked")


def clamp_scaled(t: int, v: int, hd: int, stride: int, cap: int) -> Pair:
    def twin(kind: str):
        def f(emb, ids):
            at = jnp.minimum(ids, cap) if kind == "bug" else ids
            at = stride * at if kind != "ok" else at * stride
            rows = jnp.take(emb, at, axis=0, mode="clip")
            return jnp.sum(rows * rows, axis=0)
        return f
    ASSUME["clamp_scaled"] = {"arg1": "vocab"}
    return Pair("clamp_scaled", "a", "small", {"tokens": t, "vocab": v, "hidden": hd, "cap": cap},
                [Arg((v, hd)), Arg((t,), I32, v)], twin("ref"), twin("ok"), twin("bug"),
                f"the ids are capped at {cap} before the strided lookup {stride} * ids")


def range_count(t: int, v: int, hd: int) -> Pair:
    def twin(kind: str):
        def f(emb, ids):
            n = _count(ids.astype(F32))
            mask = ids < n if kind == "ref" else (n > ids if kind == "ok" else ids >= 0)
            rows = jnp.take(emb, ids, axis=0, mode="clip")
            return jnp.sum(jnp.where(mask[:, None], rows * rows, 0.0), axis=0)
        return f
    ASSUME["range_count"] = {"arg1": "vocab"}
    return Pair("range_count", "a", "small", {"tokens": t, "vocab": v, "hidden": hd},
                [Arg((v, hd)), Arg((t,), I32, v)], twin("ref"), twin("ok"), twin("bug"),
                f"ids from the token count {t} on are not masked")


def const_term(t: int, hd: int) -> Pair:
    """sum(x + 1) over t tokens is sum(x) + t: the summand has degree 1 but a constant term,
    so the sum holds t itself (a count, as sum(1) would). The bug adds 2 where t belongs."""
    return Pair("const_term", "a", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd))],
                lambda x: jnp.sum(x + 1.0, axis=0), lambda x: jnp.sum(x, axis=0) + float(t),
                lambda x: jnp.sum(x, axis=0) + 2.0, f"the sum's constant term is 2 where {t} belongs")


def count_tautology(t: int, hd: int) -> Pair:
    """A count of a predicate that holds at every position (`ids == ids`: integers have no
    NaN) is t itself; rule k's types assume both outcomes can occur. The bug writes 4."""
    def twin(kind: str):
        def f(x, ids):
            n = jnp.sum((ids == ids).astype(F32)) if kind == "ref" else (
                jnp.float32(t) if kind == "ok" else jnp.float32(4))
            return jnp.sum(x, axis=0) * n
        return f
    return Pair("count_tautology", "k", "small", {"tokens": t, "hidden": hd}, [Arg((t, hd)), Arg((t,), I32, 50)],
                twin("ref"), twin("ok"), twin("bug"), f"a count of {t} true predicates written as 4")


def range_iota(t: int, v: int, hd: int) -> Pair:
    """Ids masked below a value computed from an iota over the tokens (max(iota) + 1 = t)."""
    def twin(kind: str):
        def f(emb, ids):
            n = jnp.max(lax.iota(I32, t)) + 1
            mask = ids < n if kind != "bug" else ids >= 0
            rows = jnp.take(emb, ids, axis=0, mode="clip")
            return jnp.sum(jnp.where(mask[:, None], rows * rows, 0.0), axis=0)
        return f
    ASSUME["range_iota"] = {"arg1": "vocab"}
    return Pair("range_iota", "a", "small", {"tokens": t, "vocab": v, "hidden": hd},
                [Arg((v, hd)), Arg((t,), I32, v)], twin("ref"), twin("ok"), twin("bug"),
                f"ids from max(iota(tokens)) + 1 = {t} on are not masked")


def range_rem(t: int, v: int, hd: int, u: int, off: int, mod: int) -> Pair:
    """The mask ids < u written through a remainder: (ids + off) % mod < off + u (every
    constant past the vocabulary; the remainder is no affine map, so the split is lost)."""
    ASSUME["range_rem"] = {"arg1": "vocab"}
    return Pair("range_rem", "b", "small", {"tokens": t, "vocab": v, "hidden": hd, "special": u},
                [Arg((v, hd)), Arg((t,), I32, v)], _pooled(lambda ids: (ids + off) % mod < off + u),
                _pooled(lambda ids: ids < u), _pooled(lambda ids: ids >= 0),
                f"ids from {u} on (masked as (ids + {off}) % {mod} < {off + u}) are not masked")


def pairs() -> list[Pair]:
    return [trip_count_sub(12, 10), trip_choose(12, 10), range_offset(16, 256, 4, 100, 1000),
            range_negated(16, 256, 4, 100, 1000), clamp_scaled(16, 256, 4, 4, 40), range_count(16, 256, 4),
            const_term(16, 4),
            count_tautology(16, 4), range_iota(16, 256, 4),
            range_rem(16, 256, 4, 100, 1000, 2000)]


def main() -> int:
    return gen_shrink_rules.write_batch(OUT, pairs(), ASSUME)


if __name__ == "__main__":
    raise SystemExit(main())
