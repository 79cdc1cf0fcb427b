"""Canonical conditions over one integer atom.

Why: an index guard is written differently by each program. The reference scatters a
token's gradient into row `ids == 5`; a vocab-parallel shard tests
`clamp(clamp(ids) - 4, 0, 3) == 1 and 4 <= ids < 8`. Both are the set {5} of the one
integer atom they read, yet as terms they differ, so every sum over tokens differs term by
term and the polynomial normal form cannot close the equality (an Adam update squares that
sum: hundreds of products of selects). A condition whose only free atom is one integer
atom is a piecewise-linear predicate of it, so its truth set is a finite union of
intervals, computed exactly here; the condition is then rebuilt from that set in one
canonical way. Equal truth sets give the same term.

Soundness: the set is computed over the atom's known bounds (the store's `bounds` or, for
a cut point, the `ranges` its definition cannot leave) and otherwise over all integers;
the rebuilt condition agrees with the original at every value in that domain. An interval
touching a domain end is emitted open on that side, so the emitted term does not depend on
whether the bound was known when it was built.
Anything else (two atoms, a product of the atom with itself, a real comparison, a division,
a bitwise op) is left as it is."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

from tv_mlir.algebra import term as K

if TYPE_CHECKING:
    from tv_mlir.algebra.term import Bool, Term, TermStore

# `_atom_of` results besides an atom id.
_CONST = -1  # no free atom
_MIXED = -2  # two atoms or an unsupported node

Lo = int | None  # None: unbounded below
Hi = int | None  # None: unbounded above
# value a * x + b on [lo, hi]; a and b exact: the polynomials' own coefficients (ints for
# the integer polynomials read here; int arithmetic is much cheaper than Fraction's), made
# Fractions only where `_solve` divides.
Piece = tuple[Lo, Hi, int | Fraction, int | Fraction]
IntervalSet = tuple[tuple[Lo, Hi], ...]  # sorted, disjoint, not adjacent

MAX_PIECES = 64  # past it a term is left alone: the truth sets of index guards are small


class _GiveUp(Exception):
    pass


@dataclass
class Univariate:
    """Per-store memo of atoms, pieces and truth sets (one per `TermStore`)."""

    store: TermStore
    _atom: dict[int, int] = field(default_factory=dict)  # term id -> atom id | _CONST | _MIXED
    # Keyed by (term id, atom id): a piece's or a set's ends are the atom's domain, and a
    # term with no atom of its own (a constant branch, 288) is read over several atoms'
    # domains. Keyed by the term alone, a constant's pieces made over y in [250, 289] were
    # reused over an unbounded atom x, so ite(x == 1, 288, 20) <= 128 lost its x == 1 piece
    # and folded to True.
    _pieces: dict[tuple[int, int], tuple[Piece, ...]] = field(default_factory=dict)
    _sets: dict[tuple[int, int], IntervalSet] = field(default_factory=dict)
    _canon: dict[tuple[int, int], Bool] = field(default_factory=dict)  # (cond id, bounds seen) -> cond
    _bounds_seen: int = 0  # pieces and sets depend on the atoms' domains: cleared when bounds grow

    def canonical(self, c: Term) -> Bool:
        """The canonical condition with c's truth set, or c itself."""
        if c.sort != K.BOOL:
            return c
        seen = len(self.store.bounds) + len(self.store.ranges)
        key = (c.id, seen)
        hit = self._canon.get(key)
        if hit is not None:
            return hit
        if seen != self._bounds_seen:
            self._pieces.clear()
            self._sets.clear()
            self._bounds_seen = seen
        out: Bool = c
        point = self._point(c)
        if point is not None:
            # x == v for v strictly inside x's domain (most index guards: a gather's, a
            # scatter's, a one-hot's row test): its truth set is {v}, which `_emit` rebuilds
            # as this one comparison (neither end is the domain's, and {v} is shorter than
            # its complement), so the interval arithmetic is skipped.
            x, v = point
            self._canon[key] = out = self.store.eq(self.store._atom_poly(self.store.nodes[x]), self.store.int_(v))
            return out
        x = self.atom_of(c)
        if x >= 0:
            try:
                dom = self._domain(x)
                out = self._emit(x, _intersect(self._set(c, x, dom), (dom,)), dom)
            except _GiveUp:
                out = c
        self._canon[key] = out
        return out

    def _point(self, c: Term) -> tuple[int, int] | None:
        """(x, v) when c is `x - v == 0` (or `x == 0`) for an opaque integer atom x and v
        strictly inside x's domain, else None."""
        if c.kind != K.CMP or c.data != "eq0":
            return None
        data = c.args[0].data
        if len(data) == 2:
            (m0, k), (m1, a) = data
            if m0:
                return None
        elif len(data) == 1:
            (m1, a), = data
            k = 0
        else:
            return None
        if a != 1 or len(m1) != 1 or m1[0][1] != 1 or type(k) is not int:
            return None
        x = m1[0][0]
        if self._int_atom(self.store.nodes[x]) != x:
            return None
        v = -k
        lo, hi = self._domain(x)
        if (lo is not None and v <= lo) or (hi is not None and v >= hi):
            return None
        return x, v

    # -- which atom ------------------------------------------------------------
    def atom_of(self, t: Term) -> int:
        hit = self._atom.get(t.id)
        if hit is not None:
            return hit
        kind = t.kind
        found = _CONST
        if kind == K.POLY:
            if t.sort != K.INT:
                found = _MIXED
            else:
                for m, _ in t.data:
                    for a, e in m:
                        atom = self.store.nodes[a]
                        sub = self._int_atom(atom) if e == 1 else _MIXED
                        found = _join(found, sub)
                        if found == _MIXED:
                            break
                    if found == _MIXED:
                        break
        elif kind == K.CMP or kind in (K.AND, K.OR, K.NOT, K.BITE):
            for a in t.args:
                found = _join(found, self.atom_of(a))
                if found == _MIXED:
                    break
        else:
            found = _MIXED
        self._atom[t.id] = found
        return found

    def _int_atom(self, atom: Term) -> int:
        if atom.kind == K.ITE:
            found = _CONST
            for a in atom.args:
                found = _join(found, self.atom_of(a))
            return found
        if atom.sort == K.INT and atom.kind in (K.VAR, K.UF, K.TO_INT, K.IDIV, K.IMOD, K.BITS):
            return atom.id  # opaque: the one free value the condition reads
        return _MIXED

    def _domain(self, x: int) -> tuple[Lo, Hi]:
        rng = self.store.bounds.get(x) or self.store.ranges.get(x)
        if rng is None:
            return (None, None)
        lo, hi = rng
        return (None if math.isinf(lo) else math.ceil(lo), None if math.isinf(hi) else math.floor(hi))

    # -- pieces ----------------------------------------------------------------
    def _lin(self, t: Term, x: int, dom: tuple[Lo, Hi]) -> tuple[Piece, ...]:
        key = (t.id, x)
        hit = self._pieces.get(key)
        if hit is not None:
            return hit
        acc: tuple[Piece, ...] = ((dom[0], dom[1], 0, 0),)
        for m, c in t.data:
            k = c
            if not m:
                part: tuple[Piece, ...] = ((dom[0], dom[1], 0, k),)
            else:
                if len(m) != 1 or m[0][1] != 1:
                    raise _GiveUp  # x * x, x * select: not linear
                a = m[0][0]
                if a == x:
                    part = ((dom[0], dom[1], k, 0),)
                else:
                    atom = self.store.nodes[a]
                    if atom.kind != K.ITE:
                        raise _GiveUp
                    part = tuple((lo, hi, k * p, k * q) for lo, hi, p, q in self._ite(atom, x, dom))
            acc = _combine(acc, part)
        self._pieces[key] = acc
        return acc

    def _ite(self, atom: Term, x: int, dom: tuple[Lo, Hi]) -> tuple[Piece, ...]:
        cond, then, other = atom.args
        s = self._set(cond, x, dom)
        a, b = self._lin(then, x, dom), self._lin(other, x, dom)
        return _merge(_restrict(a, s) + _restrict(b, _complement(s, dom)))

    # -- truth sets ------------------------------------------------------------
    def _set(self, c: Bool, x: int, dom: tuple[Lo, Hi]) -> IntervalSet:
        if isinstance(c, bool):
            return (dom,) if c else ()
        key = (c.id, x)
        hit = self._sets.get(key)
        if hit is not None:
            return hit
        kind = c.kind
        if kind == K.CMP:
            out: IntervalSet = _normal(tuple(iv for p in self._lin(c.args[0], x, dom)
                                             for iv in _solve(c.data, p)))
        elif kind == K.AND:
            out = (dom,)
            for a in c.args:
                out = _intersect(out, self._set(a, x, dom))
        elif kind == K.OR:
            out = ()
            for a in c.args:
                out = _normal(out + self._set(a, x, dom))
        elif kind == K.NOT:
            out = _complement(self._set(c.args[0], x, dom), dom)
        elif kind == K.BITE:
            s = self._set(c.args[0], x, dom)
            out = _normal(_intersect(s, self._set(c.args[1], x, dom))
                          + _intersect(_complement(s, dom), self._set(c.args[2], x, dom)))
        else:
            raise _GiveUp
        if len(out) > MAX_PIECES:
            raise _GiveUp
        self._sets[key] = out
        return out

    # -- the canonical term ----------------------------------------------------
    def _emit(self, x: int, s: IntervalSet, dom: tuple[Lo, Hi]) -> Bool:
        if not s:
            return False
        # Open at the domain's ends: the same term whether or not the bound was known.
        s = tuple((None if lo == dom[0] else lo, None if hi == dom[1] else hi) for lo, hi in s)
        if s == ((None, None),):
            return True
        comp = _complement(s, (None, None))
        if len(comp) < len(s):
            return self.store.not_(self._emit_set(x, comp))
        return self._emit_set(x, s)

    def _emit_set(self, x: int, s: IntervalSet) -> Bool:
        st = self.store
        v = st._atom_poly(st.nodes[x])
        parts: list[Bool] = []
        for lo, hi in s:
            if lo is not None and lo == hi:
                parts.append(st.eq(v, st.int_(lo)))
                continue
            ends: list[Bool] = []
            if lo is not None:
                ends.append(st.le(st.int_(lo), v))
            if hi is not None:
                ends.append(st.le(v, st.int_(hi)))
            parts.append(st.and_(*ends))
        return st.or_(*parts)


def _join(a: int, b: int) -> int:
    if a == _CONST:
        return b
    if b == _CONST or a == b:
        return a
    return _MIXED


def _cut_points(a: tuple[Piece, ...], b: tuple[Piece, ...]) -> list[int]:
    return sorted({lo for lo, _, _, _ in a + b if lo is not None})


def _at(ps: tuple[Piece, ...], v: Lo) -> Piece:
    """The piece holding v (None: the piece unbounded below)."""
    for p in ps:
        if v is None:
            if p[0] is None:
                return p
        elif (p[0] is None or p[0] <= v) and (p[1] is None or v <= p[1]):
            return p
    raise _GiveUp  # the pieces do not cover the domain: a bug, never a wrong answer


def _combine(a: tuple[Piece, ...], b: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """Pointwise sum of two piecewise-linear functions over the same domain."""
    if len(a) == 1 and len(b) == 1:
        (lo, hi, p, q), (_, _, r, s) = a[0], b[0]
        return ((lo, hi, p + r, q + s),)
    first = a[0][0]
    starts: list[Lo] = [first, *(c for c in _cut_points(a, b) if first is None or c > first)]
    end = a[-1][1]
    out: list[Piece] = []
    for i, lo in enumerate(starts):
        hi = starts[i + 1] - 1 if i + 1 < len(starts) else end  # type: ignore[operator]
        pa, pb = _at(a, lo), _at(b, lo)
        out.append((lo, hi, pa[2] + pb[2], pa[3] + pb[3]))
    if len(out) > MAX_PIECES:
        raise _GiveUp
    return _merge(tuple(out))


def _merge(ps: tuple[Piece, ...]) -> tuple[Piece, ...]:
    """Sorted by start, neighbours with the same line joined."""
    ps = tuple(sorted(ps, key=lambda p: -math.inf if p[0] is None else p[0]))
    out: list[Piece] = []
    for p in ps:
        if out and out[-1][2:] == p[2:]:
            out[-1] = (out[-1][0], p[1], p[2], p[3])
        else:
            out.append(p)
    if len(out) > MAX_PIECES:
        raise _GiveUp
    return tuple(out)


def _restrict(ps: tuple[Piece, ...], s: IntervalSet) -> tuple[Piece, ...]:
    out: list[Piece] = []
    for lo, hi, a, b in ps:
        for l2, h2 in _intersect(((lo, hi),), s):
            out.append((l2, h2, a, b))
    return tuple(out)


def _solve(op: str, p: Piece) -> IntervalSet:
    """The integers of [lo, hi] where a * x + b (op) 0."""
    lo, hi, a, b = p
    if a == 0:
        holds = b < 0 if op == "lt0" else b <= 0 if op == "le0" else b == 0
        return ((lo, hi),) if holds else ()
    r = Fraction(-b) / a  # the root, exact (never int / int: that is a float)
    if op == "eq0":
        if r.denominator != 1:
            return ()
        v = int(r)
        return _intersect(((lo, hi),), ((v, v),))
    if op == "lt0":  # a > 0: x < r; a < 0: x > r
        iv: tuple[Lo, Hi] = (None, math.ceil(r) - 1) if a > 0 else (math.floor(r) + 1, None)
    else:  # le0
        iv = (None, math.floor(r)) if a > 0 else (math.ceil(r), None)
    return _intersect(((lo, hi),), (iv,))


def _lo_key(v: Lo) -> float:
    return -math.inf if v is None else v


def _hi_key(v: Hi) -> float:
    return math.inf if v is None else v


def _normal(s: IntervalSet) -> IntervalSet:
    ivs = sorted(s, key=lambda iv: _lo_key(iv[0]))
    out: list[tuple[Lo, Hi]] = []
    for lo, hi in ivs:
        if out and (out[-1][1] is None or lo is None or lo <= out[-1][1] + 1):
            prev_lo, prev_hi = out[-1]
            out[-1] = (prev_lo, None if prev_hi is None or hi is None else max(prev_hi, hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _intersect(s: IntervalSet, t: IntervalSet) -> IntervalSet:
    out: list[tuple[Lo, Hi]] = []
    for a_lo, a_hi in s:
        for b_lo, b_hi in t:
            lo = b_lo if a_lo is None else a_lo if b_lo is None else max(a_lo, b_lo)
            hi = b_hi if a_hi is None else a_hi if b_hi is None else min(a_hi, b_hi)
            if lo is None or hi is None or lo <= hi:
                out.append((lo, hi))
    return _normal(tuple(out))


def _complement(s: IntervalSet, dom: tuple[Lo, Hi]) -> IntervalSet:
    """dom without s."""
    out: list[tuple[Lo, Hi]] = []
    cur: Lo = dom[0]  # the first value not yet covered (None: from -inf)
    for lo, hi in _intersect(s, (dom,)):
        if lo is not None and (cur is None or lo > cur):
            out.append((cur, lo - 1))
        if hi is None:
            return tuple(out)
        cur = hi + 1
    if dom[1] is None or cur is None or cur <= dom[1]:
        out.append((cur, dom[1]))
    return tuple(out)
