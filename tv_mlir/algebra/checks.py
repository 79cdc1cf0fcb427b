"""Equalities closed without a solver: z3's simplifier in sum-of-monomials form (with real
if-then-else read as indicator polynomials) and min/max networks by the 0-1 principle.
These run on every merge of the sweep and every output element before a query is built."""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import z3

from tv_mlir.algebra import modeval
from tv_mlir.algebra.piecewise import PiecewiseChecker
from tv_mlir.algebra.term import CMP, ITE, REAL, Term, TermBudget

# z3's default som_blowup (10) stops expanding products early and then reports a zero
# polynomial as non-zero; the sizes we hand it are bounded by the cut points.
SOM_BLOWUP = 1_000_000


def trivially_equal(eq: Any, blowup: int | None = None) -> bool:
    """The cheap check before the solver: z3's simplifier closes the equality by itself."""
    if eq is True:
        return True
    if eq is False or isinstance(eq, Term):
        return False  # own terms are in normal form: a true equality has folded to True
    return z3.is_true(z3.simplify(eq, som=True, som_blowup=blowup or SOM_BLOWUP, arith_lhs=True))


def difference_is_zero(a: Any, b: Any) -> bool:
    """Polynomial normal form of a - b is 0 (sum-of-monomials), or is 0 once every real
    if-then-else is read as a polynomial in an indicator of its condition."""
    if isinstance(a, Term):
        return a is b or _own_indicator_zero(a, b)
    d = z3.simplify(a - b, som=True, som_blowup=SOM_BLOWUP)
    if z3.is_rational_value(d):
        return d.numerator_as_long() == 0
    return ite_difference_is_zero(a, b, d)


def piecewise_equal(a: Any, b: Any, checker: PiecewiseChecker) -> bool:
    """a == b by cases over the one integer variable both depend on (own terms only; see
    `piecewise`): a lookup split over shards against the whole lookup."""
    if not isinstance(a, Term) or not isinstance(b, Term):
        return False
    return checker.equal(a, b)


# Indicator polynomials expand like products of (i*x + (1 - i)*y): selects nested in
# selects (a gather over a symbolic index is a chain of them) blow up exponentially, so
# only shallow ones are tried, and the expansion has a step budget besides.
MAX_ITE_NESTING = 2
INDICATOR_STEPS = 200_000
INDICATOR_TERMS = 200_000  # new own terms an indicator-form check may make


def ite_difference_is_zero(a: Any, b: Any, simplified: Any = None) -> bool:
    """a - b is 0 as a polynomial once real if-then-else terms are indicator polynomials
    (`indicator_form`); False at once when there is no such term or they nest deeply."""
    if isinstance(a, Term):
        return _own_indicator_zero(a, b)
    nesting = _real_ite_nesting(simplified if simplified is not None else a - b)
    if nesting == 0 or nesting > MAX_ITE_NESTING:
        return False
    d = z3.simplify(indicator_form(a - b), som=True, som_blowup=SOM_BLOWUP, max_steps=INDICATOR_STEPS)
    return z3.is_rational_value(d) and d.numerator_as_long() == 0


def _real_ite_nesting(t: z3.ExprRef) -> int:
    """How deeply real if-then-else terms nest in t (0: none); stops counting past the
    limit that matters. Walks with z3's C API (it runs on every failed local proof)."""
    C = z3.z3core
    c = t.ctx.ref()
    depth: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(t.as_ast(), False)]
    while stack:
        a, expanded = stack.pop()
        key = C.Z3_get_ast_id(c, a)
        if key in depth:
            continue
        if C.Z3_get_ast_kind(c, a) != z3.Z3_APP_AST or \
                C.Z3_get_sort_kind(c, C.Z3_get_sort(c, a)) == z3.Z3_BOOL_SORT:
            depth[key] = 0
            continue
        n = C.Z3_get_app_num_args(c, a)
        kids = [C.Z3_get_app_arg(c, a, i) for i in range(n)]
        if kids and not expanded:
            stack.append((a, True))
            stack.extend((k, False) for k in kids)
            continue
        inner = max((depth.get(C.Z3_get_ast_id(c, k), 0) for k in kids), default=0)
        own = C.Z3_get_decl_kind(c, C.Z3_get_app_decl(c, a)) == z3.Z3_OP_ITE and \
            C.Z3_get_sort_kind(c, C.Z3_get_sort(c, a)) == z3.Z3_REAL_SORT
        depth[key] = inner + 1 if own else inner
        if depth[key] > MAX_ITE_NESTING:
            return depth[key]
    return depth.get(C.Z3_get_ast_id(c, t.as_ast()), 0)


def indicator_form(t: z3.ExprRef) -> z3.ExprRef:
    """t with every real `If(c, x, y)` replaced by `i*x + (1 - i)*y`, one fresh real i per
    distinct condition c. The result equals t whenever each i is c's 0/1 value, so a
    polynomial identity of the result (for all reals i) proves t's identity: sums of
    selects with constants scaled into their branches (relu gradients, masked sums)
    then normalise like polynomials. Conditions are compared as terms, so equal
    conditions written differently only cost a failed proof.

    One substitution per nesting level: the outermost selects are replaced (their
    branches keep the selects nested in them), until none is left. The walks use z3's
    C API and nothing is rebuilt that holds no select: rebuilding every node through the
    Python wrappers cost most of the time of a realistic plan's local proofs."""
    ctx = t.ctx
    indicators: dict[int, z3.ExprRef] = {}
    for _ in range(MAX_ITE_NESTING + 1):
        outer = _outer_real_ites(t)
        if not outer:
            return t
        pairs = []
        for e in outer:
            c = e.arg(0)
            i = indicators.setdefault(c.get_id(), z3.Real(f"ind!{c.get_id()}", ctx))
            pairs.append((e, i * e.arg(1) + (1 - i) * e.arg(2)))
        t = z3.substitute(t, *pairs)
    # Deeper nesting than the callers allow (they check it first): the selects left stay
    # selects, which keeps the result equal to t; only fewer identities close.
    return t


def _outer_real_ites(t: z3.ExprRef) -> list[z3.ExprRef]:
    """The real if-then-else subterms of t not inside another one's branch, nor inside a
    Boolean subterm (a condition only names its indicator)."""
    C = z3.z3core
    c = t.ctx.ref()
    found: list[z3.ExprRef] = []
    seen: set[int] = set()
    stack = [t.as_ast()]
    while stack:
        a = stack.pop()
        key = C.Z3_get_ast_id(c, a)
        if key in seen:
            continue
        seen.add(key)
        if C.Z3_get_ast_kind(c, a) != z3.Z3_APP_AST or \
                C.Z3_get_sort_kind(c, C.Z3_get_sort(c, a)) == z3.Z3_BOOL_SORT:
            continue
        if C.Z3_get_decl_kind(c, C.Z3_get_app_decl(c, a)) == z3.Z3_OP_ITE and \
                C.Z3_get_sort_kind(c, C.Z3_get_sort(c, a)) == z3.Z3_REAL_SORT:
            found.append(z3.ArithRef(a, t.ctx))
            continue
        stack.extend(C.Z3_get_app_arg(c, a, k) for k in range(C.Z3_get_app_num_args(c, a)))
    return found


# ---------------------------------------------------------------------------
# Min/max networks: the 0-1 principle


class _Lattice:
    """Terms read as min/max networks over atoms (hash-consed node ids), for `lattice_equal`.

    Recognised: If(A <= B, A, B) = min(A, B) and its variants (<, >=, >, a negated
    condition, swapped branches), -1*t pushed inwards (-min(a, b) = max(-a, -b)), and
    If(u == w, u, w) = w (the -0 normalisation of sort comparators). Anything else is an
    atom, compared by identity: treating distinct terms as independent variables is sound
    (an identity for all values of the atoms holds for the values they take)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[str, int, int]] = []  # ("atom", k, 0) | ("min"|"max", node, node)
        self.atoms: list[tuple[Any, int]] = []  # atom k: (term, sign), the value sign * term
        self._atom_ids: dict[tuple[int, int], int] = {}
        self._intern: dict[tuple[str, int, int], int] = {}
        self._memo: dict[int, int] = {}  # z3 ast id -> node (the atoms keep the ids alive)
        self._keep: list[Any] = []
        self._neg: dict[int, int] = {}
        self._dnfs: dict[int, frozenset[frozenset[int]]] = {}

    def _node(self, key: tuple[str, int, int]) -> int:
        n = self._intern.get(key)
        if n is None:
            n = self._intern[key] = len(self.nodes)
            self.nodes.append(key)
        return n

    def _atom(self, t: Any, sign: int) -> int:
        tid = t.id if isinstance(t, Term) else t.get_id()
        k = self._atom_ids.get((tid, sign))
        if k is None:
            k = self._atom_ids[(tid, sign)] = len(self.atoms)
            self.atoms.append((t, sign))
        return self._node(("atom", k, 0))

    def _lat(self, op: str, a: int, b: int) -> int:
        if a == b:
            return a
        return self._node((op, min(a, b), max(a, b)))  # both are commutative

    def neg(self, n: int) -> int:
        hit = self._neg.get(n)
        if hit is None:
            op, x, y = self.nodes[n]
            if op == "atom":
                t, sign = self.atoms[x]
                hit = self._atom(t, -sign)
            else:
                hit = self._lat("max" if op == "min" else "min", self.neg(x), self.neg(y))
            self._neg[n] = hit
        return hit

    def read(self, t: Any) -> int:
        if isinstance(t, Term):
            return self._read_own(t)
        i = t.get_id()
        hit = self._memo.get(i)
        if hit is None:
            hit = self._memo[i] = self._read(t)
            self._keep.append(t)
        return hit

    def _read_own(self, t: Term) -> int:
        """The same networks over own terms. A polynomial with a negative leading
        coefficient is the negation of its opposite; a select's condition is a comparison
        of a normalised difference with 0, matched against the difference of the branches."""
        key = -1 - t.id  # own ids beside z3's (which are >= 0) in one memo
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        s = t.store
        data = s.terms_of(t)
        if data and data[-1][1] < 0:
            hit = self.neg(self.read(s.neg(t)))
        else:
            hit = self._own_select(t)
        self._memo[key] = hit
        return hit

    def _own_select(self, t: Term) -> int:
        s = t.store
        atom = s.atom_of(t)
        if atom is None or atom.kind != ITE or atom.args[0].kind != CMP or t.sort != REAL:
            return self._atom(t, 1)  # (an int comparison is scaled by its content instead)
        cond, p, q = atom.args
        d = cond.args[0]
        diff = s.sub(p, q)
        if s.constant(diff) is not None:
            return self._atom(t, 1)
        if cond.data == "eq0":
            # If(d == 0, p, q) with p - q a multiple of d: p == q wherever d == 0.
            return self.read(q) if _normalised(diff, signed=True) is d else self._atom(t, 1)
        # d < 0 reads A < B for d = A - B (A: d's positive monomials, B: the negated
        # negative ones); the branches are matched against A and B as networks, so a
        # comparator that compares normalised keys (-0 folded to 0) still reads.
        pos = {m: c for m, c in s.terms_of(d) if c > 0}
        neg = {m: -c for m, c in s.terms_of(d) if c < 0}
        a, b = self.read(s.polynomial(REAL, pos)), self.read(s.polynomial(REAL, neg))
        pn, qn = self.read(p), self.read(q)
        if (pn, qn) == (a, b):  # If(A < B, A, B) picks the smaller one
            return self._lat("min", a, b)
        if (pn, qn) == (b, a):
            return self._lat("max", a, b)
        na, nb = self.neg(a), self.neg(b)  # A < B is also -B < -A
        if (pn, qn) == (nb, na):
            return self._lat("min", nb, na)
        if (pn, qn) == (na, nb):
            return self._lat("max", na, nb)
        return self._atom(t, 1)

    def _read(self, t: Any) -> int:
        if not z3.is_app(t) or t.num_args() == 0:
            return self._atom(t, 1)
        k = t.decl().kind()
        if k == z3.Z3_OP_MUL and t.num_args() == 2:
            c, u = t.arg(0), t.arg(1)
            if z3.is_rational_value(u):
                c, u = u, c
            if z3.is_rational_value(c) and c.as_fraction() == -1:
                return self.neg(self.read(u))
        if k == z3.Z3_OP_UMINUS:
            return self.neg(self.read(t.arg(0)))
        if k == z3.Z3_OP_ITE:
            c, p, q = t.arg(0), t.arg(1), t.arg(2)
            while z3.is_not(c):
                c, p, q = c.arg(0), q, p
            ck = c.decl().kind() if z3.is_app(c) else None
            if ck == z3.Z3_OP_EQ and c.num_args() == 2 and _same_when_equal(c.arg(0), c.arg(1), p, q):
                return self.read(q)
            if ck in (z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE, z3.Z3_OP_GT) and c.num_args() == 2:
                a, b = self.read(c.arg(0)), self.read(c.arg(1))
                pn, qn = self.read(p), self.read(q)
                small_first = ck in (z3.Z3_OP_LE, z3.Z3_OP_LT)  # the test holds when a is smaller
                if (pn, qn) == (a, b):  # If(a <= b, a, b) picks the smaller one
                    return self._lat("min" if small_first else "max", a, b)
                if (pn, qn) == (b, a):
                    return self._lat("max" if small_first else "min", a, b)
        return self._atom(t, 1)

    def same_normal_form(self, a: int, b: int) -> bool | None:
        """Whether nodes a and b have the same reduced disjunctive normal form (max over
        an antichain of mins of atoms), which is unique in a free distributive lattice, so
        the same form is the same function on every 0-1 assignment and different forms
        differ on one. None when a form outgrows DNF_TERMS (networks that sort)."""
        try:
            return self._dnf(a) == self._dnf(b)
        except _TooLarge:
            return None

    def _dnf(self, root: int) -> frozenset[frozenset[int]]:
        memo = self._dnfs
        stack = [root]
        while stack:  # children first, without recursion (networks can be deep)
            n = stack[-1]
            if n in memo:
                stack.pop()
                continue
            op, x, y = self.nodes[n]
            if op == "atom":
                memo[n] = frozenset({frozenset({x})})
                stack.pop()
                continue
            missing = [k for k in (x, y) if k not in memo]
            if missing:
                stack.extend(missing)
                continue
            stack.pop()
            if op == "max":
                terms = memo[x] | memo[y]
            else:
                if len(memo[x]) * len(memo[y]) > DNF_TERMS:
                    raise _TooLarge
                terms = frozenset(s | t for s in memo[x] for t in memo[y])
            memo[n] = _antichain(terms)
        return memo[root]

    def equal_on_01(self, a: int, b: int, max_atoms: int) -> bool:
        """Nodes a and b agree on every 0-1 assignment of the atoms below them: by normal
        forms, or for a network whose normal form is too large, by enumerating the
        assignments of at most max_atoms atoms."""
        same = self.same_normal_form(a, b)
        if same is not None:
            return same
        seen: set[int] = set()
        stack = [a, b]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                op, x, y = self.nodes[n]
                if op != "atom":
                    stack += [x, y]
        order = sorted(seen)  # children before parents: ids are creation order
        atoms = sorted({self.nodes[n][1] for n in order if self.nodes[n][0] == "atom"})
        if len(atoms) > max_atoms:
            return False
        column = {k: j for j, k in enumerate(atoms)}
        grid = ((np.arange(1 << len(atoms))[:, None] >> np.arange(len(atoms))[None, :]) & 1).astype(bool)
        vals: dict[int, Any] = {}
        for n in order:
            op, x, y = self.nodes[n]
            if op == "atom":
                vals[n] = grid[:, column[x]]
            elif op == "min":
                vals[n] = vals[x] & vals[y]
            else:
                vals[n] = vals[x] | vals[y]
        return bool(np.array_equal(vals[a], vals[b]))


DNF_TERMS = 4096  # conjunctions in a normal form before it is given up


class _TooLarge(Exception):
    pass


def _antichain(terms: frozenset[frozenset[int]]) -> frozenset[frozenset[int]]:
    """The terms without those absorbed by a smaller one (x | (x & y) == x)."""
    if len(terms) > DNF_TERMS:
        raise _TooLarge
    ordered = sorted(terms, key=len)
    kept: list[frozenset[int]] = []
    for t in ordered:
        if not any(k <= t for k in kept):
            kept.append(t)
    return frozenset(kept)


def _normalised(d: Term, signed: bool = False) -> Term:
    """A real difference scaled as the store scales its comparisons with 0 (orders by
    1 / |leading coefficient|, equalities by 1 / leading coefficient), for matching a
    select's branches against its condition."""
    lead = Fraction(d.store.terms_of(d)[-1][1])
    return d.store.scale(d, Fraction(1) / (lead if signed else abs(lead)))


def _same_when_equal(u: Any, w: Any, x: Any, y: Any) -> bool:
    """If(u == w, x, y) is y: where u == w holds, y with u replaced by w (or w by u) is
    the same term as x (the -0 normalisation If(t == 0, 0, -t) of a sort comparator)."""
    sx = z3.simplify(x)
    return any(z3.simplify(z3.substitute(y, (s, r))).eq(sx) for s, r in ((u, w), (w, u)))


LATTICE_ATOMS = 16  # 2**16 assignments at most


def _own_indicator_zero(a: Term, b: Term) -> bool:
    """`ite_difference_is_zero` over own terms: every real select ITE(c, x, y) in a - b
    becomes i*x + (1 - i)*y, one fresh real i per condition, level by level; True when
    the difference is then the zero polynomial."""
    if modeval.differs(a, b):  # not zero at one point: the expansion would fail, slowly
        return False
    store = a.store
    try:
        with store.budget(INDICATOR_TERMS):
            return _indicator_zero(store, store.sub(a, b))
    except TermBudget:  # the indicator polynomials blew up: leave it to other checks
        return False


def _indicator_zero(store: Any, d: Term) -> bool:
    for level in range(MAX_ITE_NESTING + 1):
        if store.constant(d) == 0:
            return True
        ites = [t for t in store.walk([d]) if t.kind == ITE and t.sort == REAL]
        if not ites or level == MAX_ITE_NESTING:
            return False
        mapping: dict[int, Term | bool] = {}
        for e in ites:
            c, x, y = e.args
            i = store.var(f"ind!{c.id}", REAL)
            mapping[e.id] = store.add(store.mul(i, x), store.mul(store.sub(store.real(1), i), y))
        d_new = store.substitute(d, mapping)
        assert isinstance(d_new, Term)
        d = d_new
    return store.constant(d) == 0


def lattice_equal(pairs: Sequence[tuple[Any, Any]]) -> list[bool]:
    """For each (a, b) of real terms: True when both read as min/max networks over common
    atoms that agree on every 0-1 assignment of the atoms. By the 0-1 principle that proves
    a == b for all reals: a threshold map [x >= t] commutes with min and max, so a real
    point where a < b gives, at t = b, a 0-1 point where a is 0 and b is 1. This decides
    sorting-network identities that take z3 seconds per element."""
    lat = _Lattice()
    out: list[bool] = []
    for a, b in pairs:
        try:
            na, nb = lat.read(a), lat.read(b)
        except RecursionError:  # a very deep network: leave it to the solver
            out.append(False)
            continue
        if na == nb:
            out.append(True)
        elif lat.nodes[na][0] == "atom" and lat.nodes[nb][0] == "atom":
            out.append(False)  # distinct atoms: nothing to decide here
        else:
            out.append(lat.equal_on_01(na, nb, LATTICE_ATOMS))
    return out
