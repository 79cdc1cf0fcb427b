"""Value ranges of integer terms of the own store, and the two's-complement wrap that XLA's
fixed-width integers apply to every arithmetic result (issue 16).

Integers are terms over the mathematical integers; a result of an integer type is its
mathematical value reduced into the type's range. Most integer values in ML programs are
indices, whose range analysis shows they never leave the type (an iota plus a shard
offset), so the wrap is the value itself and the terms stay what they were. Where a value
can leave the range by at most one period on either side (a sum or difference of two
values of the type: `ids - offset`), the wrap is a select on the affine overflow
conditions, which the case split over an index (`piecewise`) and the solver's linear
arithmetic both read; only past that (products) is it a Euclidean remainder."""
from __future__ import annotations

import math

from tv_mlir.algebra.base import type_range, wrap_int
from tv_mlir.algebra.term import BITS, DEFER, IDIV, IMOD, INT, ITE, POLY, VAR, Term, TermStore

Bound = int | float  # an int, or +-inf
Interval = tuple[Bound, Bound]
UNBOUNDED: Interval = (-math.inf, math.inf)
_CACHE = "intervals"  # TermStore.caches key: term id -> Interval
_WRAPS = "intervals.wraps"  # TermStore.caches key: a wrap's atom id -> (what it wraps, the period)
_WRAPPED = "intervals.wrapped"  # TermStore.caches key: a wrap's result id -> (what it wraps, the period)
# A wrap is replaced by what it wraps only when that is this small: long integer chains of
# products would otherwise expand into ever larger polynomials.
UNWRAP_MONOMIALS = 64


def interval(t: Term) -> Interval:
    """Bounds of an integer polynomial's values (unbounded where it cannot tell). Bounds of
    free constants come from `TermStore.bounds` (an input's type, a cut point's definition)."""
    store = t.store
    memo: dict[int, Interval] = store.caches.setdefault(_CACHE, {})
    hit = memo.get(t.id)
    if hit is not None:
        return hit
    # Children before parents with an explicit stack: selects nest as deep as a dimension
    # is long (a gather's choice among rows).
    stack: list[tuple[Term, bool]] = [(t, False)]
    while stack:
        u, ready = stack.pop()
        if u.id in memo:
            continue
        kids = _children(u)
        if not ready:
            stack.append((u, True))
            stack.extend((k, False) for k in kids if k.id not in memo)
            continue
        memo[u.id] = _combine(u, store, memo)
    return memo[t.id]


def _children(u: Term) -> list[Term]:
    if u.kind == POLY:
        return list(u.args)
    if u.kind == ITE:
        return [u.args[1], u.args[2]]
    return []


def _combine(u: Term, store: TermStore, memo: dict[int, Interval]) -> Interval:
    if u.kind == POLY:
        if u.sort != INT:
            return UNBOUNDED
        lo: Bound = 0
        hi: Bound = 0
        for mono, c in u.data:
            mlo, mhi = _monomial(mono, store, memo)
            a, b = _mul((c, c), (mlo, mhi))
            lo, hi = lo + a, hi + b
        return lo, hi
    if u.kind == VAR:
        rng = store.bounds.get(u.id)
        return rng if rng is not None else store.ranges.get(u.id, UNBOUNDED)
    if u.kind == ITE:
        (a, b), (c, d) = memo[u.args[1].id], memo[u.args[2].id]
        return min(a, c), max(b, d)
    if u.kind == IMOD:
        k = u.args[1].const
        if k is not None and k != 0:
            return 0, abs(int(k)) - 1
    if u.kind == IDIV:
        k = u.args[1].const
        inner = interval(u.args[0])
        if k is not None and k > 0:
            return _floor_div(inner[0], int(k)), _floor_div(inner[1], int(k))
    if u.kind == BITS:
        _, width, signed = u.data
        return type_range(width, signed)
    if u.kind == DEFER:  # a deferred IEEE class (`fast.DEFER_CLASSES`): FIN, POS, NEG or NAN
        return 0, 3
    return UNBOUNDED


def _monomial(mono: tuple[tuple[int, int], ...], store: TermStore, memo: dict[int, Interval]) -> Interval:
    acc: Interval = (1, 1)
    for atom, exp in mono:
        node = store.nodes[atom]
        r = memo.get(atom)
        if r is None:  # atoms are the polynomial's children, so this is only a safety net
            r = memo[atom] = interval(node)
        for _ in range(exp):
            acc = _mul(acc, r)
    return acc


def _mul(a: Interval, b: Interval) -> Interval:
    ends = [_times(x, y) for x in a for y in b]
    return min(ends), max(ends)


def _times(x: Bound, y: Bound) -> Bound:
    if x == 0 or y == 0:
        return 0  # a zero factor bounds the product whatever the other one is (no inf * 0)
    return x * y


def _floor_div(x: Bound, k: int) -> Bound:
    return x if isinstance(x, float) else x // k


def wrap(t: Term, width: int, signed: bool) -> Term:
    """t reduced into the range of a `width`-bit integer type, as XLA's arithmetic does."""
    lo, hi = type_range(width, signed)
    s = t.store
    k = t.const
    if k is not None:
        return s.int_(wrap_int(int(k), width, signed))
    period = 1 << width
    t = _unwrapped(t, period)
    low, high = interval(t)
    if lo <= low and high <= hi:
        return t
    if lo - period <= low and high <= hi + period:
        out = t
        if high > hi:
            out = s.ite(s.lt(s.int_(hi), t), s.sub(t, s.int_(period)), out)
        if low < lo:
            out = s.ite(s.lt(t, s.int_(lo)), s.add(t, s.int_(period)), out)
        # The select does not know its conditions; its values are the type's (t is within
        # one period of the range), which later wraps of sums of it need to know.
        s.caches.setdefault(_CACHE, {})[out.id] = (lo, hi)
        _note(s, out, t, period)
        return out
    out = s.add(s.int_(lo), s.imod(s.sub(t, s.int_(lo)), s.int_(period)))
    _note(s, out, t, period)
    return out


def _note(s: TermStore, out: Term, t: Term, period: int) -> None:
    """Remember that `out` is t modulo `period`, for the wraps of sums and products of it."""
    s.caches.setdefault(_WRAPPED, {})[out.id] = (t, period)
    # out is lo + imod(t - lo, P), or a select between t and t -+ P: one atom plus a
    # constant c, so the atom is t - c modulo P.
    linear = [(m, k) for m, k in out.data if m] if out.kind == POLY else []
    if len(linear) == 1 and linear[0][1] == 1 and len(linear[0][0]) == 1 and linear[0][0][0][1] == 1:
        atom = s.nodes[linear[0][0][0][0]]
        if atom.kind in (IMOD, ITE):
            c = sum((k for m, k in out.data if not m), 0)
            s.caches.setdefault(_WRAPS, {})[atom.id] = (s.sub(t, s.int_(int(c))), period)


def note_cut(var: Term, definition: Term) -> None:
    """A cut variable defined by a wrap is, like the wrap, what it wraps modulo the period."""
    got = definition.store.caches.get(_WRAPPED, {}).get(definition.id)
    if got is not None and var.leaf is not None:
        definition.store.caches.setdefault(_WRAPS, {})[var.leaf.id] = got


def _unwrapped(t: Term, period: int) -> Term:
    """t with the wraps among its atoms (one level deep) replaced by what they wrap, where
    their period is a multiple of `period`: a wrap is t minus a multiple of its period, so
    the sum or product stays the same modulo `period` and its own wrap the same value. Two
    programs that wrap at different places (a * wrap(b + 1) against wrap(a * b + a)) then
    get the same term, as the ring arithmetic of the type says they are; the solver would
    see a nonlinear remainder (z3 proved such a query in 0.05 s or timed out at 60 s)."""
    wraps = t.store.caches.get(_WRAPS)
    if not wraps or t.kind != POLY:
        return t
    mapping = {a.id: w[0] for a in t.args if (w := wraps.get(a.id)) is not None and w[1] % period == 0
               and len(w[0].data) <= UNWRAP_MONOMIALS}
    return t.store.replace_atoms(t, mapping) if mapping else t
