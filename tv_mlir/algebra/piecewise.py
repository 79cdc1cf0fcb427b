"""Equality of two own terms that depend on one integer variable through selects: both
are evaluated piecewise over the integers (intervals on which every condition that
mentions the variable is constant), and the pieces are compared by identity.

Why: a lookup that is split over shards (a vocabulary-parallel embedding: each shard
gathers from its rows, masks the ids outside them, and the shards' parts are summed) is
the reference lookup only because exactly one shard's mask holds for each id. As terms,
that is a chain of selects on the id against a sum of masked chains, equal for every
integer id but not as polynomials; the solver proves it one element at a time. Here the
conditions split the integer line into intervals (breakpoints where an affine condition
changes its truth value), on each of which both sides are one polynomial: a proof by
exhaustive cases, exact and without a solver.

Sound by construction: every piece (lo, hi, value) satisfies t(x) == value(x) for every
integer x in [lo, hi]; a condition this module cannot decide on an interval stays a
condition in the piece's value (identity of values then still implies equality). Any
construct it does not model around the variable (the variable inside an uninterpreted
function, a product of it with itself in a condition) makes it give up (None)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from tv_mlir.algebra.term import (
    AND,
    BITE,
    BOOL,
    BVAR,
    CMP,
    DEFER,
    INT,
    ITE,
    NOT,
    OR,
    POLY,
    VAR,
    Coeff,
    Monomial,
    Term,
    TermBudget,
    TermStore,
)

INF = math.inf
Bound = int | float  # an integer, or -inf / +inf
Value = Term | bool
Pieces = list[tuple[Bound, Bound, Value]]

MAX_PIECES = 4096  # per term: past this the case split is not worth it
MAX_DEPTH = 2000  # nested selects followed (a gather over a long axis is a chain of them)
MAX_TERMS = 200_000  # new terms one check may make


class _GiveUp(Exception):
    """The term uses the variable in a way the evaluation does not model."""


@dataclass
class _Evaluator:
    store: TermStore
    x: Term  # the integer VAR atom
    definition: Callable[[Term], Term | None]  # an integer or Boolean cut variable's definition
    _mentions: dict[int, bool] = field(default_factory=dict)
    _memo: dict[tuple[int, Bound, Bound], Pieces] = field(default_factory=dict)
    _depth: int = 0

    # -- which terms depend on x ------------------------------------------------
    def mentions(self, t: Value) -> bool:
        if isinstance(t, bool):
            return False
        hit = self._mentions.get(t.id)
        if hit is not None:
            return hit
        # Iterative post-order: terms can be deep (chains of selects).
        stack: list[tuple[Term, bool]] = [(t, False)]
        while stack:
            node, done = stack.pop()
            if node.id in self._mentions:
                continue
            kids = self._children(node)
            if not done:
                stack.append((node, True))
                stack.extend((k, False) for k in kids if k.id not in self._mentions)
                continue
            self._mentions[node.id] = node is self.x or any(self._mentions[k.id] for k in kids)
        return self._mentions[t.id]

    def _children(self, t: Term) -> tuple[Term, ...]:
        if (t.kind == BVAR or t.kind == VAR and t.sort == INT) and t is not self.x:
            d = self.definition(t)
            return (d,) if d is not None else ()
        return t.args

    # -- evaluation -------------------------------------------------------------
    def pieces(self, t: Value, lo: Bound, hi: Bound) -> Pieces:
        """t's pieces over [lo, hi]. A select is evaluated top-down on the interval (a chain
        of selects on x narrows it one case at a time, so the chain costs its length);
        anything else once over the whole line, then cut to the interval (a clamp in a
        condition is evaluated once, not once per case)."""
        if not self.mentions(t):
            return [(lo, hi, t)]
        assert isinstance(t, Term)
        if t.kind == POLY and len(t.args) == 1 and t.args[0].kind == ITE and t.data == ((((t.args[0].id, 1),), 1),):
            return self.pieces(t.args[0], lo, hi)  # a select as a polynomial (1 * select): the select
        if t.kind not in (ITE, BITE) and (lo, hi) != (-INF, INF):
            return _restrict(self.pieces(t, -INF, INF), lo, hi)
        key = (t.id, lo, hi)
        got = self._memo.get(key)
        if got is not None:
            return got
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _GiveUp("nesting")
        try:
            out = _merge(self._pieces(t, lo, hi))
        finally:
            self._depth -= 1
        if len(out) > MAX_PIECES:
            raise _GiveUp("pieces")
        self._memo[key] = out
        return out

    def _pieces(self, t: Term, lo: Bound, hi: Bound) -> Pieces:
        s = self.store
        k = t.kind
        if k == POLY:
            return self._poly(t, lo, hi)
        if k in (VAR, BVAR):  # an integer or Boolean cut variable defined from x
            d = self.definition(t)
            if d is None:
                raise _GiveUp("variable without definition")
            return self.pieces(d, lo, hi)
        if k in (ITE, BITE):
            out: Pieces = []
            for clo, chi, c in self.pieces(t.args[0], lo, hi):
                if c is True or c is False:
                    out += self.pieces(t.args[1] if c else t.args[2], clo, chi)
                    continue
                for plo, phi, a, b in _overlay(self.pieces(t.args[1], clo, chi), self.pieces(t.args[2], clo, chi)):
                    out.append((plo, phi, s.ite(c, a, b) if k == ITE else s.bite(c, a, b)))  # type: ignore[arg-type]
            return out
        if k == CMP:
            return self._cmp(t, lo, hi)
        if k == NOT:
            return [(a, b, s.not_(v)) for a, b, v in self.pieces(t.args[0], lo, hi)]
        if k in (AND, OR):
            acc = self.pieces(t.args[0], lo, hi)
            join = s.and_ if k == AND else s.or_
            for arg in t.args[1:]:
                acc = [(a, b, join(u, v)) for a, b, u, v in _overlay(acc, self.pieces(arg, lo, hi))]
                acc = _merge(acc)
            return acc
        if k == DEFER:  # a class built only when read (`fast.DEFER_CLASSES`): its term
            return self.pieces(s.expand(t), lo, hi)
        raise _GiveUp(k)  # the variable under an uninterpreted function, a division, ...

    def _poly(self, t: Term, lo: Bound, hi: Bound) -> Pieces:
        """A polynomial over atoms some of which depend on x: the atoms evaluated
        piecewise, the polynomial rebuilt per piece."""
        s = self.store
        moving = [a for a in t.args if a is not self.x and self.mentions(a)]
        acc: list[tuple[Bound, Bound, dict[int, Value]]] = [(lo, hi, {})]
        for atom in moving:
            nxt: list[tuple[Bound, Bound, dict[int, Value]]] = []
            for plo, phi, mapping in acc:
                for alo, ahi, v in self.pieces(atom, plo, phi):
                    nxt.append((alo, ahi, {**mapping, atom.id: v}))
            acc = nxt
            if len(acc) > MAX_PIECES:
                raise _GiveUp("pieces")
        out: Pieces = []
        for plo, phi, mapping in acc:
            out.append((plo, phi, s.replace_atoms(t, mapping) if mapping else t))  # type: ignore[arg-type]
        return out

    def _cmp(self, t: Term, lo: Bound, hi: Bound) -> Pieces:
        """A comparison of a polynomial against 0: decided per piece where the polynomial
        is affine in x (split at its breakpoint), else left as a condition."""
        s = self.store
        op = t.data
        out: Pieces = []
        for plo, phi, p in self.pieces(t.args[0], lo, hi):
            assert isinstance(p, Term)
            if p.const is not None:
                k = p.const
                out.append((plo, phi, k < 0 if op == "lt0" else k <= 0 if op == "le0" else k == 0))
                continue
            affine = self._affine(p)
            if affine is None:
                if self.mentions(p):
                    raise _GiveUp("non-affine condition")
                zero = s.int_(0) if p.sort == INT else s.real(0)
                cond = s.lt(p, zero) if op == "lt0" else s.le(p, zero) if op == "le0" else s.eq(p, zero)
                out.append((plo, phi, cond))
                continue
            a, b = affine
            out += _split(op, a, b, plo, phi)
        return out

    def _affine(self, p: Term) -> tuple[int | Fraction, int | Fraction] | None:
        """(a, b) with p == a*x + b, a != 0, when p is that (and mentions nothing else)."""
        a: int | Fraction = 0
        b: int | Fraction = 0
        for mono, c in p.data:
            if not mono:
                b += c
            elif mono == ((self.x.id, 1),):
                a += c
            else:
                return None
        return (a, b) if a != 0 else None


def _split(op: str, a: int | Fraction, b: int | Fraction, lo: Bound, hi: Bound) -> Pieces:
    """Where a*x + b < 0 (<= 0, == 0) holds for integer x in [lo, hi]: pieces with True or False."""
    root = Fraction(-b) / a
    if op == "eq0":
        if root.denominator != 1 or not lo <= root.numerator <= hi:
            return [(lo, hi, False)]
        r = root.numerator
        parts: Pieces = [(lo, r - 1, False), (r, r, True), (r + 1, hi, False)]
        return [(x, y, v) for x, y, v in parts if x <= y]
    # a*x + b < 0 with a > 0: x < root; with a < 0: x > root (<= and >= for le0).
    if a > 0:
        last_true = math.ceil(root) - 1 if op == "lt0" else math.floor(root)
        parts = [(lo, min(hi, last_true), True), (max(lo, last_true + 1), hi, False)]
    else:
        first_true = math.floor(root) + 1 if op == "lt0" else math.ceil(root)
        parts = [(lo, min(hi, first_true - 1), False), (max(lo, first_true), hi, True)]
    return [(x, y, v) for x, y, v in parts if x <= y]


def _restrict(pieces: Pieces, lo: Bound, hi: Bound) -> Pieces:
    """The pieces cut to [lo, hi]."""
    return [(max(a, lo), min(b, hi), v) for a, b, v in pieces if a <= hi and b >= lo]


def _overlay(p: Pieces, q: Pieces) -> list[tuple[Bound, Bound, Value, Value]]:
    """The common refinement of two piece lists over the same interval."""
    out: list[tuple[Bound, Bound, Value, Value]] = []
    i = j = 0
    while i < len(p) and j < len(q):
        lo = max(p[i][0], q[j][0])
        hi = min(p[i][1], q[j][1])
        if lo <= hi:
            out.append((lo, hi, p[i][2], q[j][2]))
        if p[i][1] < q[j][1]:
            i += 1
        else:
            j += 1
    return out


def _merge(pieces: Pieces) -> Pieces:
    """Adjacent pieces with the same value as one."""
    out: Pieces = []
    for lo, hi, v in pieces:
        if out and out[-1][2] is v and out[-1][1] + 1 >= lo:
            out[-1] = (out[-1][0], hi, v)
        else:
            out.append((lo, hi, v))
    return out


def int_variables(terms: list[Term], definition: Callable[[Term], Term | None]) -> set[Term]:
    """The integer free constants (not cut variables with a definition) the terms depend
    on, looking through integer cut variables' definitions."""
    out: set[Term] = set()
    seen: set[int] = set()
    stack = list(terms)
    while stack:
        t = stack.pop()
        if t.id in seen:
            continue
        seen.add(t.id)
        if t.kind == VAR and t.sort == INT or t.kind == BVAR:
            d = definition(t)
            if d is None:
                if t.kind == VAR:
                    out.add(t)
            elif isinstance(d, Term):
                stack.append(d)
            continue
        stack.extend(t.args)
    return out


def int_range(t: Term, definition: Callable[[Term], Term | None]) -> tuple[Bound, Bound] | None:
    """Bounds of an integer term that depends on (at most) one integer variable, from its
    pieces: a clamp of an id is [lo, hi] whatever the id. None when unknown."""
    if t.kind != POLY or t.sort != INT:
        return None
    xs = int_variables([t], definition)
    if len(xs) != 1:
        return None
    x = next(iter(xs))
    ev = _Evaluator(t.store, x, definition)
    lo, hi = t.store.bounds.get(x.id, (-INF, INF))
    try:
        with t.store.budget(MAX_TERMS):
            pieces = ev.pieces(t, lo, hi)
    except (_GiveUp, RecursionError, TermBudget):
        return None
    low: Fraction | Bound = INF
    high: Fraction | Bound = -INF
    for plo, phi, v in pieces:
        assert isinstance(v, Term)
        ends: list[Fraction | Bound]
        if v.const is not None:
            ends = [v.const, v.const]
        else:
            affine = ev._affine(v)
            if affine is None:
                return None
            a, b = affine
            ends = [a * plo + b if plo != -INF else (-INF if a > 0 else INF),
                    a * phi + b if phi != INF else (INF if a > 0 else -INF)]
        low, high = min(low, *ends), max(high, *ends)
    lower: Bound = -INF if low == -INF else math.floor(low)
    upper: Bound = INF if high == INF else math.ceil(high)
    return lower, upper


@dataclass
class PiecewiseChecker:
    """Decides equalities by cases over one integer variable (module docstring), keeping
    what it evaluated per variable: the elements of one lookup (a row of an embedding)
    share their conditions, so each condition is split once."""

    definition: Callable[[Term], Term | None]  # an integer cut variable's definition, else None
    _evaluators: dict[int, _Evaluator] = field(default_factory=dict)

    def equal(self, a: Term, b: Term) -> bool:
        """a == b for every value of the one integer variable they depend on (through
        integer cut variables). False when it cannot tell: several integer variables or
        none, or a construct not modelled."""
        if a.kind != POLY or b.kind != POLY or a.sort != b.sort or a.sort == BOOL:
            return False
        xs = int_variables([a, b], self.definition)
        if not xs:
            return False
        try:
            with a.store.budget(MAX_TERMS):
                if len(xs) == 1:
                    x = next(iter(xs))
                    ev = self._evaluator(x)
                    lo, hi = a.store.bounds.get(x.id, (-INF, INF))  # x never leaves its bounds
                    return all(u is v for _, _, u, v in _overlay(ev.pieces(a, lo, hi), ev.pieces(b, lo, hi)))
                return self._separable_zero(a.store.sub(a, b))
        except (_GiveUp, RecursionError, TermBudget):
            return False

    def _evaluator(self, x: Term) -> _Evaluator:
        ev = self._evaluators.get(x.id)
        if ev is None:
            ev = self._evaluators[x.id] = _Evaluator(x.store, x, self.definition)
        return ev

    def _separable_zero(self, d: Term) -> bool:
        """d == 0 for all values of several integer variables, when each monomial of d
        depends on at most one of them: the monomials grouped by their variable, each
        group zero by cases over its variable and the rest zero as a polynomial. (A sum
        of updates scattered to data-dependent rows, one index per update.) Sufficient,
        not necessary: groups that cancel only together are not recognised."""
        s = d.store
        groups: dict[int, dict[Monomial, Coeff]] = {}
        variables: dict[int, Term] = {}
        for mono, c in d.data:
            xs = int_variables([s.nodes[atom] for atom, _ in mono], self.definition)
            if len(xs) > 1:
                return False
            key = next(iter(xs)).id if xs else -1
            if xs:
                variables[key] = next(iter(xs))
            groups.setdefault(key, {})[mono] = c
        if -1 in groups:
            return False  # monomials without an index that do not cancel
        for key, monos in groups.items():
            part = s.polynomial(d.sort, monos)
            pieces = self._evaluator(variables[key]).pieces(part, -INF, INF)
            if any(v.const != 0 for _, _, v in pieces if isinstance(v, Term)):
                return False
        return True
