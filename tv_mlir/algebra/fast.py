"""The symbolic algebra over the project's own hash-consed terms (`term.TermStore`): the
same semantics as `symbolic.SymbolicAlgebra`, op for op, without building a z3 term per
element (issue 11). Not yet the verifier's default: the sweep and the prover still work
on z3 terms; this algebra is checked against XLA by the op suite through `term_z3`.

Elements: FLOAT is `FF(v, k)`, a real polynomial term and an IEEE class (an int, or an int
term only where the class depends on the inputs); INT a Python int or an int term; BOOL a
Python bool or a Boolean term. Constants fold as terms are built; the IEEE class of sums
and products of finite values is FIN without any term."""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from tv_mlir.algebra.base import (
    FINITE_UFS,
    POSITIVE_OF_POSITIVE_UFS,
    POSITIVE_UFS,
    UNINTERPRETED,
    Kind,
    dot_by_sums,
    int_range,
    known_positions,
    reduce_by_sums,
    scalar_array,
    type_range,
    vec,
    wrap_int,
)
from tv_mlir.algebra.intervals import interval, wrap
from tv_mlir.algebra.term import BOOL, DEFER, DEFERRED, INT, REAL, Bool, Term, TermStore
from tv_mlir.ir import TensorType

FIN, POS, NEG, NAN = 0, 1, 2, 3  # IEEE classes of a float element (as in `symbolic`)

Cls = int | Term  # an IEEE class: known, or an int term


POSITIVE_CUT_PREFIX = "cpos"  # cut points standing for a known-positive term
NONNEGATIVE_CUT_PREFIX = "cnn"  # ... for a term known >= 0 (a square)

POS_SIGN, NONNEG_SIGN = 2, 1  # what is known of a term's sign (0: nothing)


def known_positive(v: Term, depth: int = 8) -> bool:
    """v > 0 for all values of its free constants, by construction (`known_sign`)."""
    return known_sign(v, depth) == POS_SIGN


def known_sign(v: Term, depth: int = 8) -> int:
    """POS_SIGN when v > 0 and NONNEG_SIGN when v >= 0 for all values of its free
    constants, by construction: a sum of monomials with positive coefficients, each a
    product of positive atoms (exp/logistic of anything, positive cut points, reciprocals
    and selects of positive terms), non-negative atoms (cut points of squares) and even
    powers of any atom; positive when one monomial is: a softmax denominator, or RMSNorm's
    mean(x^2) + eps under its rsqrt (its squares cut apart by the sweep)."""
    s = v.store
    k = s.constant(v)
    if k is not None:
        return POS_SIGN if k > 0 else NONNEG_SIGN if k == 0 else 0
    if depth == 0 or v.kind != "poly":
        return 0
    # Asked of every new real cut point, and again of the same subterms from their users.
    memo: dict[tuple[int, int], int] | None = s.caches.get("known_sign")
    if memo is None:  # not setdefault: that makes an empty dict on every call
        memo = s.caches["known_sign"] = {}
    hit = memo.get((v.id, depth))
    if hit is None:
        hit = _poly_sign(v, depth)
        if hit == 0 and v.sort == REAL and _lower_bound(v) > 0:
            hit = POS_SIGN
        memo[(v.id, depth)] = hit
    return hit


def _lower_bound(v: Term) -> Fraction | float:
    """A lower bound of a real polynomial linear in atoms of known range (`_atom_range`),
    else -inf: Adam's bias correction 1 - beta^t is at least 1 - beta > 0 once the step
    count t >= 1 (an --assume bound on the optimizer's count), which no sum of positive
    monomials shows."""
    return _bounds(v)[0]


def _bounds(v: Term) -> tuple[Fraction | float, Fraction | float]:
    """Lower and upper bounds of a real polynomial linear in atoms of known range."""
    # Asked of every real cut point's definition: ints until a coefficient is a Fraction
    # (making Fractions of zeros was most of the cost), and out at the first atom of
    # unknown range, which most definitions have.
    lo: Fraction | int | float = 0
    hi: Fraction | int | float = 0
    nodes = v.store.nodes
    for mono, coeff in v.data:
        if not mono:
            lo, hi = lo + coeff, hi + coeff
            continue
        if len(mono) != 1 or mono[0][1] != 1:
            return -math.inf, math.inf
        a_lo, a_hi = _atom_range(nodes[mono[0][0]])
        if a_lo == -math.inf and a_hi == math.inf:
            return -math.inf, math.inf
        if coeff > 0:
            lo, hi = lo + coeff * a_lo, hi + coeff * a_hi
        else:
            lo, hi = lo + coeff * a_hi, hi + coeff * a_lo
        if lo == -math.inf and hi == math.inf:
            break
    return lo, hi


REAL_RANGES = "real_ranges"  # store cache: real cut variable's atom id -> its definition's bounds
RANGE_MONOMIALS = 4  # definitions this short are bounded at their cut (most are long sums)


SELECT_CLASSES = True  # a select's branch classes decided by its condition (the switch tests flip)
CLASS_DEFS = "class_defs"  # store cache: an IEEE class cut variable's atom id -> its definition
CLASS_DEPTH = 4  # class cut variables read through, nested, to decide a select's class
# Nodes one `_cls_where` may visit before it leaves the class as it is. A reduce-max over a
# row whose classes depend on the inputs (cosine similarities: x * rsqrt(sum x^2) is NaN at
# x = 0) narrows each running max's class under each step's comparison, and the class it
# walks is the whole chain so far read through its cut variables: the work grew ~1.4x per
# element (16 per row: no verdict in 100 s). The narrowing only sharpens a class; leaving
# it is the select's class over both branches, which is what it is without the condition.
CLASS_WHERE_NODES = 400


# A division whose class depends on its operands' values (a divisor that may be 0, an
# operand of a symbolic class), and an uninterpreted function of an operand of a symbolic
# class, get their class as one node (`TermStore.deferred`) built into the case split's term
# only when something reads it (the solver, an evaluation, a select's narrowing, a
# substitution, a case split). The default of `FastAlgebra.defer_classes`, which the tests
# flip; docs/architecture.md, round 11. On since stop 47: the expansion is the eager class
# term object for object (tests/test_fast_deferred_classes.py), and the whole suite passes.
DEFER_CLASSES = True
DIV_CLASS = "div_class"  # the DEFER rule: the class of a / b over (a.v, a.k, b.v, b.k)


def _div_class_rule(store: TermStore, name: str, args: tuple[Term, ...]) -> Cls:
    """The class a non-deferring algebra's `f_div` gives a / b: the node stands for exactly
    the eager case split over the same operand terms (a known class is an int there)."""
    av, ak, bv, bk = args
    eager = FastAlgebra(store=store, defer_classes=False)
    return eager.f_div(FF(av, _cls_of(ak)), FF(bv, _cls_of(bk))).k


UF_CLASS = "uf_class."  # DEFER rules "uf_class.<name>": the class of an uninterpreted function


def _uf_class_rule(store: TermStore, name: str, args: tuple[Term, ...]) -> Cls:
    """The class a non-deferring algebra's `uf` gives the function `name` (its rule's name
    past UF_CLASS) at operands (v0, k0, v1, k1, ...)."""
    eager = FastAlgebra(store=store, defer_classes=False)
    xs = [FF(args[i], _cls_of(args[i + 1])) for i in range(0, len(args), 2)]
    return eager._uf_apply(name.removeprefix(UF_CLASS), xs).k


def _cls_of(k: Term) -> Cls:
    c = k.const
    return int(c) if c is not None else k


SUM_CLASSES = "sum_classes"  # store cache: a sum's class term id -> (its operand class terms, literal classes)


def sum_class(s: TermStore, ks: Sequence[Cls]) -> Cls:
    """The IEEE class of a sum of floats of classes ks, in one flat form whatever the
    association: NaN when an operand is NaN or both infinities occur, else +inf when one
    occurs, else -inf when one occurs, else finite. That is a function of which classes
    occur, so a sum of sums has the class of the sum of all their operands: an operand
    that is itself such a form (`SUM_CLASSES`) is read as its operands. Why: a pairwise
    fold nests the case split per add, and a partitioned program sums per-device partial
    sums (an all-reduce) where the reference sums the elements in one reduce; the two
    nestings are equal only by a proof, and every value computed from the sum is left
    unmerged with them (optax's adafactor: its block RMS of an update of an
    input-dependent class). Literal classes join as flags, finite operands drop out (as
    `f_add`'s finite operand rule does: one symbolic operand is its own class term)."""
    cache = s.caches.setdefault(SUM_CLASSES, {})
    terms: dict[int, Term] = {}
    flags: set[int] = set()
    for k in ks:
        if isinstance(k, int):
            if k != FIN:
                flags.add(k)
            continue
        hit = cache.get(k.id)
        if hit is None:
            terms[k.id] = k
        else:
            terms.update((t.id, t) for t in hit[0])
            flags |= hit[1]
    if NAN in flags or (POS in flags and NEG in flags):
        return NAN
    if not terms:
        return POS if POS in flags else NEG if NEG in flags else FIN
    if len(terms) == 1 and not flags:
        return next(iter(terms.values()))
    ops = [terms[i] for i in sorted(terms)]

    def eq(k: Term, c: int) -> Bool:
        return s.eq(k, s.int_(c))

    pos = s.or_(POS in flags, *[eq(k, POS) for k in ops])
    neg = s.or_(NEG in flags, *[eq(k, NEG) for k in ops])
    nan = s.or_(*[eq(k, NAN) for k in ops], s.and_(pos, neg))

    def ite(c: Bool, a: Cls, b: Cls) -> Cls:
        if c is True or c is False:
            return a if c else b
        if isinstance(a, int) and isinstance(b, int) and a == b:
            return a
        t = s.ite(c, s.int_(a) if isinstance(a, int) else a, s.int_(b) if isinstance(b, int) else b)
        v = s.constant(t)
        return int(v) if v is not None else t

    k = ite(nan, NAN, ite(pos, POS, ite(neg, NEG, FIN)))
    if not isinstance(k, int):
        cache[k.id] = (tuple(ops), frozenset(flags))
    return k


def note_class(var: Term, definition: Term) -> None:
    """Keep the definition of a cut variable that is an IEEE class, for `_cls_where`: a
    select decides its branches' classes through them (the sweep cuts every class of a
    symbolic IEEE class apart, so the comparisons that decide it are a cut or two away)."""
    if var.leaf is not None:
        var.store.caches.setdefault(CLASS_DEFS, {})[var.leaf.id] = definition


def note_condition(var: Term, definition: Term) -> None:
    """Keep the definition of a Boolean cut variable that is a comparison (or its
    negation), for `_cls_where`: a select's condition is a value the sweep cuts too."""
    d = definition.args[0] if definition.kind == "not" else definition
    if d.kind == "cmp":
        var.store.caches.setdefault(CONDITION_DEFS, {})[var.id] = definition


CONDITION_DEFS = "condition_defs"  # store cache: a Boolean cut variable's id -> its comparison


def note_real_range(var: Term, definition: Term) -> None:
    """Keep the bounds of a real cut variable's definition, so that polynomials over the
    variable are bounded as over the definition: the sweep cuts Adam's b^t apart from the
    1 - b^t its bias correction divides by."""
    if definition.kind != "poly" or len(definition.data) > RANGE_MONOMIALS or var.leaf is None:
        return
    lo, hi = _bounds(definition)
    if lo != -math.inf or hi != math.inf:
        var.store.caches.setdefault(REAL_RANGES, {})[var.leaf.id] = (lo, hi)


def _atom_range(atom: Term) -> tuple[Fraction | float, Fraction | float]:
    """Bounds of a real atom's values, (-inf, inf) where unknown: an int converted to a
    real (its integer range, from the store's bounds), and b^e for a constant 0 < b < 1 and
    e >= 1, which lies in (0, b] over the reals."""
    if atom.kind == "var":
        ranges = atom.store.caches.get(REAL_RANGES)
        hit = ranges.get(atom.id) if ranges is not None else None
        return hit if hit is not None else (-math.inf, math.inf)
    if atom.kind == "to_real":
        lo, hi = interval(atom.args[0])
        return (Fraction(lo) if lo != -math.inf else lo), (Fraction(hi) if hi != math.inf else hi)
    if atom.kind == "uf" and str(atom.data) == "power" and len(atom.args) == 2:
        b, e = atom.args
        if b.const is not None and 0 < b.const < 1 and e.kind == "poly" and _lower_bound(e) >= 1:
            return Fraction(0), b.const
    return -math.inf, math.inf


def _poly_sign(v: Term, depth: int) -> int:
    data = v.data
    # A coefficient <= 0 makes its monomial's sign 0 (`monomial_sign`), so the sum's: one
    # pass over the coefficients first (a difference, most cut points), before any atom's
    # sign is looked up. A Fraction's sign is its numerator's (its denominator is > 0).
    for _, c in data:
        if (c if type(c) is int else c.numerator) <= 0:
            return 0
    strict = False
    for mono, coeff in data:
        sign = monomial_sign(v.store, coeff, mono, depth)
        if sign == 0:
            return 0
        strict = strict or sign == POS_SIGN
    return POS_SIGN if strict else NONNEG_SIGN


def monomial_sign(s: TermStore, coeff: Fraction | int, mono: Iterable[tuple[int, int]], depth: int = 8) -> int:
    """The sign of coeff * prod(atom^e) over (atom id, e) pairs: POS_SIGN when every atom is
    positive, NONNEG_SIGN when the odd powers are of atoms of known sign, else 0 (also for
    coeff <= 0). Shared by `known_sign` and the cut layer's signs through definitions."""
    if (coeff if type(coeff) is int else coeff.numerator) <= 0:  # not Fraction's slow <=
        return 0
    nodes = s.nodes
    # The sign of a free constant or a function application that ignores its argument's
    # sign does not depend on the depth (`_atom_sign`): worked out once per atom, not once
    # per monomial it is in.
    leaf_signs: dict[int, int] | None = s.caches.get("leaf_sign")
    if leaf_signs is None:
        leaf_signs = s.caches["leaf_sign"] = {}
    positive = True
    for atom_id, e in mono:
        sign = leaf_signs.get(atom_id)
        if sign is None:
            atom = nodes[atom_id]
            sign = _atom_sign(atom, depth - 1)
            if atom.kind == "var" or (atom.kind == "uf" and str(atom.data) not in POSITIVE_OF_POSITIVE_UFS):
                leaf_signs[atom_id] = sign  # not one that reads its argument's sign
        if sign == POS_SIGN:
            continue
        if sign == 0 and e % 2:
            return 0  # an odd power of an atom of unknown sign
        positive = False  # >= 0, maybe 0
    return POS_SIGN if positive else NONNEG_SIGN


def _atom_sign(atom: Term, depth: int) -> int:
    if atom.kind == "uf":
        name = str(atom.data)
        if name in POSITIVE_UFS:
            return POS_SIGN
        if name in POSITIVE_OF_POSITIVE_UFS and atom.args and known_sign(atom.args[0], depth) == POS_SIGN:
            return POS_SIGN
        # sqrt's value counts only where its class is finite, that is at x >= 0.
        return NONNEG_SIGN if name == "sqrt" else 0
    if atom.kind == "var":
        name = str(atom.data)
        return POS_SIGN if name.startswith(POSITIVE_CUT_PREFIX + "!") else \
            NONNEG_SIGN if name.startswith(NONNEGATIVE_CUT_PREFIX + "!") else 0
    if atom.kind == "inv":
        return POS_SIGN if known_sign(atom.args[0], depth) == POS_SIGN else 0
    if atom.kind == "ite":
        c, x, y = atom.args
        return min(_branch_sign(c, x, True, depth), _branch_sign(c, y, False, depth))
    return 0


def _branch_sign(cond: Term, x: Term, when: bool, depth: int) -> int:
    """The sign of a select's branch x where the select takes it (its condition is
    `when`): x's own, or what the condition says of x. max(v, 0), LayerNorm's variance
    E[x^2] - E[x]^2 clipped at 0, is ITE(not(0 < v), 0, v): its v branch is taken only
    where v > 0, so the variance plus eps under the rsqrt is positive and the rsqrt
    finite, where the branches' own signs say nothing."""
    own = known_sign(x, depth)
    return own if own == POS_SIGN else max(own, _sign_where(cond, x, when))


def _sign_where(cond: Term, x: Term, when: bool) -> int:
    """The sign of x wherever `cond` is `when`, from a comparison of a multiple of x
    with 0 (CMP(op, d): d < 0 for lt0, d <= 0 for le0), through negations."""
    while cond.kind == "not":
        cond, when = cond.args[0], not when
    if cond.kind != "cmp" or cond.data not in ("lt0", "le0"):
        return 0
    ratio = _ratio(cond.args[0], x)  # d = ratio * x
    if ratio is None:
        return 0
    strict = cond.data == "lt0"
    if not when:  # d >= 0 (not d < 0) or d > 0 (not d <= 0)
        ratio, strict = -ratio, not strict
    # Here -d >= 0 (or > 0 when strict), with -d = -ratio * x.
    if ratio < 0:
        return POS_SIGN if strict else NONNEG_SIGN
    return 0


def _decides(cond: Term, when: bool, q: Term) -> bool | None:
    """The truth of comparison q wherever comparison `cond` is `when` (through
    negations), when both compare affine functions of one polynomial with 0: q's
    difference is r * d + k for cond's difference d, so cond's interval for d bounds it."""
    while cond.kind == "not":
        cond, when = cond.args[0], not when
    if cond.kind != "cmp" or cond is q:
        return when if cond is q else None
    d, e = cond.args[0], q.args[0]
    if d.kind != "poly" or e.kind != "poly" or not d.data or d.sort != e.sort:
        return None
    lead_m, lead_c = d.data[-1]
    if not lead_m:
        return None
    ce = next((c for m, c in e.data if m == lead_m), None)
    if ce is None:
        return None
    r = Fraction(ce) / Fraction(lead_c)
    rest = d.store.sub(e, d.store.scale(d, r))
    k = rest.const
    if k is None:
        return None
    # What cond says of d: an interval (lo, lo open, hi, hi open; None: unbounded), or
    # d != 0.
    zero = Fraction(0)
    op = cond.data
    if r == 0:
        return None
    lo: Fraction | None
    hi: Fraction | None
    if op == "eq0":
        if not when:  # d != 0: decides only q's "e == 0" for e = r * d
            return False if q.data == "eq0" and k == 0 else None
        lo, lo_open, hi, hi_open = zero, False, zero, False
    elif op == "lt0":
        lo, lo_open, hi, hi_open = (None, True, zero, True) if when else (zero, False, None, True)
    elif op == "le0":
        lo, lo_open, hi, hi_open = (None, True, zero, False) if when else (zero, True, None, True)
    else:
        return None
    if r < 0:  # e = r * d + k reverses the interval
        lo, lo_open, hi, hi_open = hi, hi_open, lo, lo_open
    elo = None if lo is None else r * lo + k
    ehi = None if hi is None else r * hi + k
    below = ehi is not None and (ehi < 0 or (ehi == 0 and hi_open))  # e < 0 throughout
    nonpos = ehi is not None and ehi <= 0
    above = elo is not None and (elo > 0 or (elo == 0 and lo_open))  # e > 0 throughout
    nonneg = elo is not None and elo >= 0
    if q.data == "lt0":
        return True if below else False if nonneg else None
    if q.data == "le0":
        return True if nonpos else False if above else None
    if q.data == "eq0":
        if below or above:
            return False
        return True if elo == 0 and ehi == 0 else None
    return None


def _ratio(d: Term, x: Term) -> Fraction | None:
    """r with d = r * x (polynomials of one sort), else None."""
    if d.kind != "poly" or x.kind != "poly" or len(d.data) != len(x.data) or not d.data:
        return None
    r: Fraction | None = None
    for (md, cd), (mx, cx) in zip(d.data, x.data):  # both sorted by monomial
        if md != mx:
            return None
        q = Fraction(cd) / Fraction(cx)
        if r is None:
            r = q
        elif q != r:
            return None
    return r


def exact_value(name: str, args: Sequence[Fraction | None]) -> Fraction | None:
    """The value of an uninterpreted function at constant arguments where it is rational
    and known exactly (cos 0 = 1, exp 0 = 1, sqrt 9/4 = 3/2, 2^-3 = 1/8, ...), else None.
    A program that multiplies by cos(0) and its sharded twin that multiplies by the
    literal 1.0 (or skips the product) then have the same terms."""
    if any(a is None for a in args):
        return None
    x = args[0]
    assert x is not None
    at_zero: dict[str, int | Fraction] = {
        "exponential": 1, "exponential_minus_one": 0, "tanh": 0, "logistic": Fraction(1, 2), "sine": 0,
        "cosine": 1, "tan": 0, "erf": 0, "log_plus_one": 0, "sqrt": 0, "cbrt": 0}
    if x == 0 and name in at_zero:
        return Fraction(at_zero[name])
    if name == "log" and x == 1:
        return Fraction(0)
    if name in ("sqrt", "rsqrt", "cbrt") and x > 0:
        k = 3 if name == "cbrt" else 2
        root = _exact_root(x, k)
        if root is not None:
            return 1 / root if name == "rsqrt" else root
    if name == "cbrt" and x < 0:
        root = _exact_root(-x, 3)
        return None if root is None else -root
    if name == "atan2" and x == 0 and args[1] is not None and args[1] > 0:
        return Fraction(0)
    if name == "power" and args[1] is not None and args[1].denominator == 1 and abs(args[1]) <= 64:
        e = int(args[1])
        if e >= 0 or x != 0:
            return x ** e
    return None


def _exact_root(x: Fraction, k: int) -> Fraction | None:
    """The positive rational k-th root of x > 0 when there is one."""
    def iroot(n: int) -> int | None:
        r = round(n ** (1.0 / k))
        for c in (r - 1, r, r + 1):
            if c >= 0 and c ** k == n:
                return c
        return None
    if x.numerator.bit_length() > 200 or x.denominator.bit_length() > 200:
        return None
    num, den = iroot(x.numerator), iroot(x.denominator)
    return None if num is None or den is None else Fraction(num, den)


@dataclass(eq=False, slots=True)
class FF:
    """A symbolic float: value (meaningful only when finite) and IEEE class. Slots: one
    per float element of every value (350 k on a 1-layer train step), each with a dict
    of its own otherwise. Never changed once made (nothing assigns to its fields), but
    not `frozen`: a frozen dataclass sets each field through `object.__setattr__`, which
    made its constructor 2.2x as slow (0.47 against 0.21 us); the constructor was 2.8% of
    the symbolic phase of llama_train_step (py-spy, round 11)."""

    v: Term
    k: Cls


@dataclass
class FastAlgebra:
    """One instance serves both programs of a query, so that they share terms and
    uninterpreted function symbols."""

    symbolic: bool = True
    store: TermStore = field(default_factory=TermStore)
    approximations: set[str] = field(default_factory=set)
    element_ops: int = 0  # scalar operations performed (see `_vec`, `dot`, `reduce_sum`)
    defer_classes: bool = field(default_factory=lambda: DEFER_CLASSES)

    def __post_init__(self) -> None:
        # The store can build the deferred classes it holds whichever algebra reads them.
        self.store.caches.setdefault(DEFERRED, {})[DIV_CLASS] = _div_class_rule

    def _vec(self, fn: Any, *arrays: np.ndarray) -> np.ndarray:
        """fn elementwise, counted: one element op per result element."""
        out = vec(fn, *arrays)
        self.element_ops += out.size
        return out

    # -- small helpers over the store -------------------------------------------
    def _int(self, x: int | Term) -> Term:
        return self.store.int_(x) if isinstance(x, int) else x

    def _cls_eq(self, k: Cls, c: int) -> Bool:
        if isinstance(k, int):
            return k == c
        return self.store.eq(k, self.store.int_(c))

    def _ite_cls(self, c: Bool, a: Cls, b: Cls) -> Cls:
        if c is True:
            return a
        if c is False:
            return b
        if isinstance(a, int) and isinstance(b, int) and a == b:
            return a
        t = self.store.ite(c, self._int(a), self._int(b))
        k = self.store.constant(t)
        return int(k) if k is not None else t

    def _ite_int(self, c: Bool, a: int | Term, b: int | Term) -> int | Term:
        return self._ite_cls(c, a, b)

    def fin(self, x: FF) -> Bool:
        return self._cls_eq(x.k, FIN)

    def nan(self, x: FF) -> Bool:
        return self._cls_eq(x.k, NAN)

    def inf(self, x: FF) -> Bool:
        return self.store.or_(self._cls_eq(x.k, POS), self._cls_eq(x.k, NEG))

    def zero(self, x: FF) -> Bool:
        return self.store.and_(self.fin(x), self._sign_test(x.v, "eq"))

    def negative(self, x: FF) -> Bool:
        return self.store.or_(self._cls_eq(x.k, NEG), self.store.and_(self.fin(x), self._sign_test(x.v, "lt")))

    def _sign_test(self, v: Term, op: str) -> Bool:
        """v == 0, v < 0, v > 0, v >= 0 (op "eq", "lt", "gt", "ge"), with the sign known by
        construction (`known_sign`)."""
        s = self.store
        zero = s.real(0)
        if op in ("lt", "eq") and self.known_positive(v):
            return False
        if op == "gt" and self.known_positive(v):
            return True
        if op == "ge" and known_sign(v) != 0:
            return True
        if op == "lt" and known_sign(v) != 0:
            return False
        return {"eq": s.eq(v, zero), "lt": s.lt(v, zero), "gt": s.lt(zero, v), "ge": s.le(zero, v)}[op]

    def known_positive(self, v: Term) -> bool:
        return known_positive(v)

    # -- float element operations ------------------------------------------------
    def f_const(self, x: float) -> FF:
        s = self.store
        if np.isnan(x):
            return FF(s.real(0), NAN)
        if np.isinf(x):
            return FF(s.real(0), POS if x > 0 else NEG)
        return FF(s.real(Fraction(float(x))), FIN)

    def f_select(self, c: Bool, a: FF, b: FF) -> FF:
        if isinstance(c, bool):
            return a if c else b
        ka, kb = a.k, b.k
        if SELECT_CLASSES and (not isinstance(ka, int) or not isinstance(kb, int)):
            # A branch's class counts only where the select takes it: clip_by_global_norm's
            # select(norm < 1, g, g / norm) takes g / norm only where norm >= 1, so never
            # at the norm's 0, and the clipped gradients are finite.
            ka, kb = self._cls_where(ka, c, True), self._cls_where(kb, c, False)
        return FF(self.store.ite(c, a.v, b.v, canonical=True), self._ite_cls(c, ka, kb))

    def _cls_where(self, k: Cls, cond: Term, when: bool) -> Cls:
        """Class k where `cond` is `when`: its comparisons that this decides folded."""
        if isinstance(k, int):
            return k
        s = self.store
        defs = s.caches.get(CLASS_DEFS) or {}
        conditions = s.caches.get(CONDITION_DEFS) or {}
        for _ in range(CLASS_DEPTH):  # a cut condition is its comparison
            seen = cond.args[0] if cond.kind == "not" else cond
            if seen.id not in conditions:
                break
            d = conditions[seen.id]
            cond = s.not_(d) if cond.kind == "not" else d  # type: ignore[assignment]
        t: Term = k
        visited = 0
        for _ in range(CLASS_DEPTH + 1):
            decided: dict[int, Term | bool] = {}
            cuts: dict[int, Term | bool] = {}
            for q in s.walk([t]):
                visited += 1
                if visited > CLASS_WHERE_NODES:
                    return k
                if q.kind == "cmp" and q.id not in decided:
                    v = _decides(cond, when, q)
                    if v is not None:
                        decided[q.id] = v
                elif q.id in defs:
                    cuts[q.id] = defs[q.id]  # a cut variable is its definition: an identity
                elif q.kind == DEFER:
                    cuts[q.id] = s.expand(q)  # a deferred class is its term: an identity too
            if decided:
                out = s.substitute(t, decided)
                assert isinstance(out, Term)
                t = out
                if t.const is not None:
                    return int(t.const)
            if not cuts:
                break
            out = s.substitute(t, cuts)
            assert isinstance(out, Term)
            t = out
        # Undecided: the class as it was (a cut variable, not its growing expansion).
        return k

    def f_neg(self, a: FF) -> FF:
        return FF(self.store.neg(a.v), self._negated_class(a.k))

    def _negated_class(self, k: Cls) -> Cls:
        """The class of -x for x of class k: the infinities swap."""
        if isinstance(k, int):
            return {POS: NEG, NEG: POS}.get(k, k)
        return self._ite_cls(self._cls_eq(k, POS), NEG, self._ite_cls(self._cls_eq(k, NEG), POS, k))

    # A finite operand leaves the other's class as it is: over the reals x + b (b finite) is
    # NaN, +inf, -inf or finite exactly when x is (`sum_class` drops finite operands, so one
    # symbolic operand is its own class term), and so is x * c for a literal c > 0 (c < 0
    # swaps the infinities). The class stays the other operand's own term instead of a case
    # split on it that only a proof shows equal to it, so x + 0.0 meets x: optax's Adam adds
    # eps_root = 0.0 to nu_hat, XLA folds that add away, and with nothing assumed of the
    # step count (a bias correction that may be 0) nu_hat's class depends on the inputs.

    def f_add(self, a: FF, b: FF) -> FF:
        s = self.store
        if isinstance(a.k, int) and isinstance(b.k, int) and a.k == FIN and b.k == FIN:
            return FF(s.add(a.v, b.v), FIN)
        return FF(s.add(a.v, b.v), sum_class(s, (a.k, b.k)))

    def f_mul(self, a: FF, b: FF) -> FF:
        s = self.store
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int):
            return FF(s.mul(a.v, b.v), FIN)
        for x, c in ((a, b), (b, a)):  # x times a literal: x's class, the infinities swapped for c < 0
            r = s.constant(c.v) if isinstance(c.k, int) and c.k == FIN else None
            if r is not None and r != 0:
                return FF(s.mul(a.v, b.v), x.k if r > 0 else self._negated_class(x.k))
        nan = s.or_(self.nan(a), self.nan(b), s.and_(self.inf(a), self.zero(b)), s.and_(self.inf(b), self.zero(a)))
        sign = s.xor(self.negative(a), self.negative(b))
        k = self._ite_cls(nan, NAN, self._ite_cls(s.or_(self.inf(a), self.inf(b)), self._ite_cls(sign, NEG, POS), FIN))
        return FF(s.mul(a.v, b.v), k)

    def f_div(self, a: FF, b: FF) -> FF:
        s = self.store
        rb = s.constant(b.v) if b.k == FIN and isinstance(b.k, int) else None
        if a.k == FIN and isinstance(a.k, int) and rb is not None and rb != 0:
            return FF(s.scale(a.v, 1 / rb), FIN)
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int) and self.known_positive(b.v):
            # What the case split below folds to (b > 0: neither NaN, infinity nor a zero
            # divisor), without building the zero and sign tests it then drops (a softmax
            # divides every element by a positive sum).
            return FF(s.div(a.v, b.v), FIN)
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int):
            # Two finite operands (an Adam step over a bias correction that may be 0): the
            # split below folds to this, after making per element the NaN, infinity and
            # sign tests it then drops. Only a zero divisor leaves the finite class; there
            # b's sign test is false, so a's sign alone decides the infinity's sign.
            zb = self._sign_test(b.v, "eq")
            if zb is not False and self.defer_classes:
                # Not FIN whatever a is (b may be 0): the split's node (`_div_class_rule`).
                return FF(s.div(a.v, b.v), self._deferred_div_class(a, b))
            k = self._ite_cls(zb, self._ite_cls(self._sign_test(a.v, "eq"), NAN,
                                                self._ite_cls(self._sign_test(a.v, "lt"), NEG, POS)), FIN)
            return FF(s.div(a.v, b.v), k)
        if self.defer_classes:
            # The value reads a's finiteness and b's infinity as the split below does; the
            # class is the split's node.
            fa, ib = self.fin(a), self.inf(b)
            v = s.ite(s.and_(fa, ib), s.real(0), s.div(a.v, b.v))
            return FF(v, self._deferred_div_class(a, b))
        # The full case split (an Adam step of an input-dependent class: 4,400 divisions of
        # the Llama training step). Each test is made once and reused, in the order the
        # split reads them, so the terms made are the ones the split as written makes (a
        # second call only looks its terms up again, which cost a third of the division).
        na, nb = self.nan(a), self.nan(b)
        ia, ib = self.inf(a), self.inf(b)
        both_inf = s.and_(ia, ib)
        za, zb = self.zero(a), self.zero(b)
        nan = s.or_(na, nb, both_inf, s.and_(za, zb))
        fa = self.fin(a)
        inf = s.or_(s.and_(ia, s.not_(ib)), s.and_(zb, fa, s.not_(za)))
        if inf is False:  # `_ite_cls(False, x, FIN)` is FIN whatever x: the signs are not read
            k = self._ite_cls(nan, NAN, FIN)
        else:
            sign = s.xor(self.negative(a), self.negative(b))
            k = self._ite_cls(nan, NAN, self._ite_cls(inf, self._ite_cls(sign, NEG, POS), FIN))
        v = s.ite(s.and_(fa, ib), s.real(0), s.div(a.v, b.v))
        return FF(v, k)

    def _deferred_div_class(self, a: FF, b: FF) -> Cls:
        """The class of a / b as one node over the operands' four terms (`_div_class_rule`)."""
        return self.store.deferred(DIV_CLASS, (a.v, self._int(a.k), b.v, self._int(b.k)))

    def _trunc_real(self, v: Term) -> Term:
        s = self.store
        r = s.constant(v)
        if r is not None:
            return s.real(int(r))  # int() truncates toward zero
        return s.ite(s.le(s.real(0), v), s.to_real(s.to_int(v)), s.neg(s.to_real(s.to_int(s.neg(v)))))

    def f_rem(self, a: FF, b: FF) -> FF:
        s = self.store
        nan = s.or_(self.nan(a), self.nan(b), self.inf(a), self.zero(b))
        fin_v = s.sub(a.v, s.mul(b.v, self._trunc_real(s.div(a.v, b.v))))
        v = s.ite(self.inf(b), a.v, fin_v)
        return FF(v, self._ite_cls(nan, NAN, self._ite_cls(self.inf(b), a.k, FIN)))

    def _cmp(self, x: Term, op: str, y: Term) -> Bool:
        s = self.store
        if op == "==":
            return s.eq(x, y)
        return s.lt(x, y)

    def ext_lt(self, a: FF, b: FF) -> Bool:
        """a < b on the extended reals, assuming neither is NaN."""
        s = self.store
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int):
            return s.lt(a.v, b.v)
        return s.or_(s.and_(self._cls_eq(a.k, NEG), s.not_(self._cls_eq(b.k, NEG))),
                     s.and_(self.fin(a), self._cls_eq(b.k, POS)),
                     s.and_(self.fin(a), self.fin(b), s.lt(a.v, b.v)))

    def ext_eq(self, a: FF, b: FF) -> Bool:
        s = self.store
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int):
            return s.eq(a.v, b.v)
        return s.or_(s.and_(self.fin(a), self.fin(b), s.eq(a.v, b.v)),
                     s.and_(self._cls_eq(a.k, POS), self._cls_eq(b.k, POS)),
                     s.and_(self._cls_eq(a.k, NEG), self._cls_eq(b.k, NEG)))

    def f_compare(self, direction: str, a: FF, b: FF, total: bool) -> Bool:
        s = self.store
        if direction in ("GT", "GE"):
            return self.f_compare("LT" if direction == "GT" else "LE", b, a, total)
        any_nan = s.or_(self.nan(a), self.nan(b))
        if total:
            lt = s.bite(any_nan, s.and_(self.nan(b), s.not_(self.nan(a))), self.ext_lt(a, b))
            eq = s.bite(any_nan, s.and_(self.nan(a), self.nan(b)), self.ext_eq(a, b))
        else:
            lt = s.and_(s.not_(any_nan), self.ext_lt(a, b))
            eq = s.and_(s.not_(any_nan), self.ext_eq(a, b))
        if direction == "LT":
            return lt
        if direction == "LE":
            return s.or_(lt, eq)
        if direction == "EQ":
            return eq
        if direction == "NE":
            return s.not_(eq)
        raise ValueError(direction)

    def f_max(self, a: FF, b: FF, is_max: bool) -> FF:
        # A canonical operand order, so that max(a, b) and max(b, a) are one term.
        ka = a.k if isinstance(a.k, int) else a.k.id
        kb = b.k if isinstance(b.k, int) else b.k.id
        if (a.v.id, ka) > (b.v.id, kb):
            a, b = b, a
        s = self.store
        a_wins = s.not_(self.ext_lt(a, b)) if is_max else s.not_(self.ext_lt(b, a))
        pick = self.f_select(a_wins, a, b)
        return self.f_select(s.or_(self.nan(a), self.nan(b)), FF(s.real(0), NAN), pick)

    def f_equal(self, a: FF, b: FF) -> Bool:
        """Same IEEE value: both NaN, same infinity, or equal finite reals."""
        s = self.store
        if a.k == FIN and b.k == FIN and isinstance(a.k, int) and isinstance(b.k, int):
            return s.eq(a.v, b.v)
        return s.or_(s.and_(self.fin(a), self.fin(b), s.eq(a.v, b.v)),
                     s.and_(s.not_(self.fin(a)), s.eq(self._int(a.k), self._int(b.k))))

    def _domain(self, name: str, vs: Sequence[Term], fresh: Term) -> Cls:
        """The IEEE class of an uninterpreted function's result on finite arguments."""
        s = self.store
        v = vs[0]
        zero = s.real(0)
        if name in ("exponential", "exponential_minus_one", "tanh", "logistic", "sine", "cosine", "erf", "cbrt",
                    "atan2") or name in FINITE_UFS:
            return FIN
        if name == "log":
            return self._ite_cls(self._sign_test(v, "gt"), FIN, self._ite_cls(s.eq(v, zero), NEG, NAN))
        if name == "log_plus_one":
            w = s.add(v, s.real(1))
            return self._ite_cls(self._sign_test(w, "gt"), FIN, self._ite_cls(s.eq(w, zero), NEG, NAN))
        if name == "sqrt":  # Adam's sqrt(v_hat): v >= 0 by construction from an input assumed >= 0
            return self._ite_cls(self._sign_test(v, "ge"), FIN, NAN)
        if name == "rsqrt":
            return self._ite_cls(self._sign_test(v, "gt"), FIN, self._ite_cls(s.eq(v, zero), POS, NAN))
        if name == "power":
            return self._ite_cls(self._sign_test(v, "gt"), FIN, fresh)
        return fresh  # tan: poles on the reals; leave the class open

    # -- ints ---------------------------------------------------------------------
    def _int_trunc_div(self, a: int | Term, b: int | Term) -> int | Term:
        if isinstance(a, int) and isinstance(b, int):
            if b == 0:
                return -1
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b > 0) else -q
        s = self.store
        ta, tb = self._int(a), self._int(b)
        # Euclidean div, then truncation toward zero from it; XLA's x / 0 == -1.
        quotient = s.ite(s.le(s.int_(0), ta), s.idiv(ta, tb), s.neg(s.idiv(s.neg(ta), tb)))
        return self._fold_int(s.ite(s.eq(tb, s.int_(0)), s.int_(-1), quotient))

    def _int_rem(self, a: int | Term, b: int | Term) -> int | Term:
        if isinstance(a, int) and isinstance(b, int):
            d = self._int_trunc_div(a, b)
            assert isinstance(d, int)
            return a if b == 0 else a - b * d
        s = self.store
        ta, tb = self._int(a), self._int(b)
        q = self._int(self._int_trunc_div(ta, tb))
        return self._fold_int(s.ite(s.eq(tb, s.int_(0)), ta, s.sub(ta, s.mul(tb, q))))

    def _fold_int(self, t: Term) -> int | Term:
        k = self.store.constant(t)
        return int(k) if k is not None else t

    def _int_binop(self, a: int | Term, b: int | Term, op: str) -> int | Term:
        if isinstance(a, int) and isinstance(b, int):
            return {"+": a + b, "-": a - b, "*": a * b}[op]
        s = self.store
        ta, tb = self._int(a), self._int(b)
        r = s.add(ta, tb) if op == "+" else s.sub(ta, tb) if op == "-" else s.mul(ta, tb)
        return self._fold_int(r)

    def _int_cmp(self, direction: str, a: int | Term, b: int | Term) -> Bool:
        if isinstance(a, int) and isinstance(b, int):
            return {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[direction]
        s = self.store
        ta, tb = self._int(a), self._int(b)
        return {"EQ": lambda: s.eq(ta, tb), "NE": lambda: s.not_(s.eq(ta, tb)), "LT": lambda: s.lt(ta, tb),
                "LE": lambda: s.le(ta, tb), "GT": lambda: s.lt(tb, ta), "GE": lambda: s.le(tb, ta)}[direction]()

    def _bool_cmp(self, direction: str, a: Bool, b: Bool) -> Bool:
        ia = self._ite_int(a, 1, 0) if not isinstance(a, bool) else int(a)
        ib = self._ite_int(b, 1, 0) if not isinstance(b, bool) else int(b)
        return self._int_cmp(direction, ia, ib)

    # -- the Algebra protocol: construction ---------------------------------------
    def constant(self, values: np.ndarray, kind: Kind) -> np.ndarray:
        values = np.asarray(values)
        if kind is Kind.FLOAT:
            # One FF per distinct value (FF is frozen, so elements may share it): a
            # broadcast constant has few values, and f_const costs microseconds each.
            flat = values.astype(np.float64).reshape(-1)
            uniq, inverse = np.unique(flat, return_inverse=True)
            made = np.empty(len(uniq), dtype=object)
            made[:] = [self.f_const(float(x)) for x in uniq.tolist()]
            return made[inverse].reshape(values.shape)
        if kind is Kind.BOOL:
            return vec(lambda x: bool(x), values)
        return vec(lambda x: int(x), values)

    def full(self, shape: Sequence[int], value: Any, kind: Kind) -> np.ndarray:
        out = np.empty(tuple(shape), dtype=object)
        item = self.f_const(float(value)) if kind is Kind.FLOAT else (bool(value) if kind is Kind.BOOL
                                                                       else int(value))
        out.fill(item)
        return out

    def inputs(self, name: str, shape: tuple[int, ...], kind: Kind,
               unsigned: bool = False, width: int = 64, ieee: bool = False,
               bounds: tuple[int, int] | tuple[float, float] | None = None,
               sign: int = 0) -> tuple[np.ndarray, list[Any]]:
        """Fresh symbols for a program input, and its domain constraints (Boolean terms): an
        integer input lies in its type's range, which the store also keeps as the symbol's
        bounds (the range analysis that leaves most index arithmetic unwrapped reads them).
        A float input is a finite real, or with `ieee` any IEEE value: its class is a free
        constant too (finite, +inf, -inf or NaN). A float input's `bounds` are its closed
        --assume range (assume.FloatRange: a finite real in it, `ieee` or not), its `sign`
        what is known of it (2: > 0, 1: >= 0)."""
        s = self.store
        out = np.empty(shape, dtype=object)
        constraints: list[Any] = []
        lo, hi = bounds if bounds is not None else type_range(width, not unsigned)  # --assume
        for idx in np.ndindex(*shape):
            label = f"{name}[{','.join(map(str, idx))}]" if shape else name
            if kind is Kind.FLOAT:
                if bounds is not None:
                    # A float range (`assume.resolve`): its ends as exact constants.
                    named = {POS_SIGN: f"{POSITIVE_CUT_PREFIX}!", NONNEG_SIGN: f"{NONNEGATIVE_CUT_PREFIX}!"}
                    v = s.var(named.get(sign, "") + label, REAL)
                    constraints += [s.lt(s.real(0), v)] if sign == POS_SIGN else \
                        [s.le(s.real(0), v)] if sign == NONNEG_SIGN else []
                    if math.isfinite(lo) and not (sign and lo <= 0):  # 0:inf: the sign says it
                        constraints.append(s.le(s.real(Fraction(lo)), v))
                    if math.isfinite(hi):
                        constraints.append(s.le(v, s.real(Fraction(hi))))
                    out[idx] = FF(v, FIN)
                elif ieee:
                    k = s.var(f"{label}!class", INT)
                    constraints += [s.le(s.int_(FIN), k), s.le(k, s.int_(NAN))]
                    assert k.leaf is not None
                    s.bounds[k.leaf.id] = (FIN, NAN)
                    out[idx] = FF(s.var(label, REAL), k)
                elif sign:
                    # The sign-carrying names make the sign known by construction
                    # (`known_sign`): x / d with d > 0 is finite without a case split.
                    prefix = POSITIVE_CUT_PREFIX if sign == POS_SIGN else NONNEGATIVE_CUT_PREFIX
                    v = s.var(f"{prefix}!{label}", REAL)
                    constraints.append(s.lt(s.real(0), v) if sign == POS_SIGN else s.le(s.real(0), v))
                    out[idx] = FF(v, FIN)
                else:
                    out[idx] = FF(s.var(label, REAL), FIN)
            elif kind is Kind.BOOL:
                # Bounds of one value (a stage input the reference decides): that constant.
                out[idx] = bool(bounds[0]) if bounds is not None and bounds[0] == bounds[1] else s.var(label, BOOL)
            else:
                x = s.var(label, INT)
                out[idx] = x
                ilo, ihi = int(lo), int(hi)  # an integer input's bounds are integers
                constraints += [s.le(s.int_(ilo), x), s.le(x, s.int_(ihi))]
                assert x.leaf is not None
                s.bounds[x.leaf.id] = (ilo, ihi)
        return out, constraints

    def wrap(self, a: np.ndarray, t: TensorType) -> np.ndarray:
        """Integer results reduced into the range of their type (see `intervals`)."""
        width, signed = t.bit_width, not t.is_unsigned

        def w(x: int | Term) -> int | Term:
            if isinstance(x, int):
                return wrap_int(x, width, signed)
            return self._fold_int(wrap(x, width, signed))
        return vec(w, a)

    # -- arithmetic ---------------------------------------------------------------
    def add(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(self.f_add, a, b)
        if kind is Kind.BOOL:
            return self._vec(self.store.or_, a, b)
        return self._vec(lambda x, y: self._int_binop(x, y, "+"), a, b)

    def sub(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(lambda x, y: self.f_add(x, self.f_neg(y)), a, b)
        return self._vec(lambda x, y: self._int_binop(x, y, "-"), a, b)

    def mul(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(self.f_mul, a, b)
        if kind is Kind.BOOL:
            return self._vec(self.store.and_, a, b)
        return self._vec(lambda x, y: self._int_binop(x, y, "*"), a, b)

    def div(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(self.f_div, a, b)
        return self._vec(self._int_trunc_div, a, b)

    def rem(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(self.f_rem, a, b)
        return self._vec(self._int_rem, a, b)

    def neg(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(self.f_neg, a)
        return self._vec(lambda x: -x if isinstance(x, int) else self._fold_int(self.store.neg(x)), a)

    def abs(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        s = self.store
        if kind is Kind.FLOAT:
            return self._vec(lambda x: self.f_select(self.negative(x), self.f_neg(x), x), a)
        return self._vec(lambda x: abs(x) if isinstance(x, int) else s.ite(s.lt(x, s.int_(0)), s.neg(x), x), a)

    def sign(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        s = self.store
        if kind is Kind.FLOAT:
            def f(x: FF) -> FF:
                k = self._ite_cls(self.nan(x), NAN, FIN)
                v = s.ite(self.negative(x), s.real(-1), s.ite(self.zero(x), s.real(0), s.real(1)))
                return FF(v, k)
            return self._vec(f, a)

        def g(x: int | Term) -> int | Term:
            if isinstance(x, int):
                return (x > 0) - (x < 0)
            zero = s.int_(0)
            return s.ite(s.lt(zero, x), s.int_(1), s.ite(s.lt(x, zero), s.int_(-1), zero))
        return self._vec(g, a)

    def max(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return self._minmax(a, b, kind, True)

    def min(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return self._minmax(a, b, kind, False)

    def _minmax(self, a: np.ndarray, b: np.ndarray, kind: Kind, is_max: bool) -> np.ndarray:
        s = self.store
        if kind is Kind.FLOAT:
            return self._vec(lambda x, y: self.f_max(x, y, is_max), a, b)
        if kind is Kind.BOOL:
            return self._vec(s.or_ if is_max else s.and_, a, b)

        def pick(x: int | Term, y: int | Term) -> int | Term:
            if not isinstance(x, int) and not isinstance(y, int) and x.id > y.id:
                x, y = y, x
            return self._ite_int(self._int_cmp("GE" if is_max else "LE", x, y), x, y)
        return self._vec(pick, a, b)

    def _rounding(self, a: np.ndarray, fn: Callable[[Term], Term]) -> np.ndarray:
        s = self.store

        def r(x: FF) -> FF:
            if x.k == FIN and isinstance(x.k, int):
                return FF(fn(x.v), x.k)
            return FF(s.ite(self.fin(x), fn(x.v), x.v), x.k)
        return self._vec(r, a)

    def floor(self, a: np.ndarray) -> np.ndarray:
        return self._rounding(a, self.store.floor)

    def ceil(self, a: np.ndarray) -> np.ndarray:
        s = self.store
        return self._rounding(a, lambda v: s.neg(s.floor(s.neg(v))))

    def round_even(self, a: np.ndarray) -> np.ndarray:
        s = self.store

        def f(v: Term) -> Term:
            r = s.constant(v)
            if r is not None:
                return s.real(round(r))  # Python rounds half to even
            fl = s.to_int(v)
            d = s.sub(v, s.to_real(fl))
            half = s.real(Fraction(1, 2))
            odd = s.not_(s.eq(s.imod(fl, s.int_(2)), s.int_(0)))
            up = s.or_(s.lt(half, d), s.and_(s.eq(d, half), odd))
            return s.to_real(s.ite(up, s.add(fl, s.int_(1)), fl))
        return self._rounding(a, f)

    def round_afz(self, a: np.ndarray) -> np.ndarray:
        s = self.store
        half = s.real(Fraction(1, 2))

        def f(v: Term) -> Term:
            return s.ite(s.le(s.real(0), v), s.floor(s.add(v, half)), s.neg(s.floor(s.add(s.neg(v), half))))
        return self._rounding(a, f)

    def is_finite(self, a: np.ndarray) -> np.ndarray:
        return self._vec(self.fin, a)

    def compare(self, direction: str, a: np.ndarray, b: np.ndarray, kind: Kind, total_order: bool) -> np.ndarray:
        if kind is Kind.FLOAT:
            if total_order:
                return self._vec(lambda x, y: self._total_compare(direction, x, y), a, b)
            return self._vec(lambda x, y: self.f_compare(direction, x, y, False), a, b)
        if kind is Kind.BOOL:
            return self._vec(lambda x, y: self._bool_cmp(direction, x, y), a, b)
        return self._vec(lambda x, y: self._int_cmp(direction, x, y), a, b)

    def select(self, pred: np.ndarray, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        s = self.store
        if kind is Kind.FLOAT:
            return self._vec(self.f_select, pred, a, b)
        if kind is Kind.BOOL:
            return self._vec(s.bite, pred, a, b)
        return self._vec(lambda c, x, y: self._fold_ite_int(c, x, y), pred, a, b)

    def _fold_ite_int(self, c: Bool, x: int | Term, y: int | Term) -> int | Term:
        if isinstance(c, bool):
            return x if c else y
        return self._fold_int(self.store.ite(c, self._int(x), self._int(y), canonical=True))

    def logic(self, op: str, a: np.ndarray, b: np.ndarray | None, t: TensorType) -> np.ndarray:
        s = self.store
        if t.is_bool:
            if op == "not":
                return self._vec(s.not_, a)
            assert b is not None, f"{op} takes two operands"
            return self._vec({"and": s.and_, "or": s.or_, "xor": s.xor}[op], a, b)
        width, signed = t.bit_width, not t.is_unsigned

        def g(*xs: int | Term) -> int | Term:
            return self._fold_int(s.bits(op, width, signed, [self._int(x) for x in xs]))
        if op == "not":
            return self._vec(g, a)
        assert b is not None, f"{op} takes two operands"
        return self._vec(g, a, b)

    def convert(self, a: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray:
        s = self.store
        if src.is_float:
            if dst.is_float:
                return a
            if dst.is_bool:
                return self._vec(lambda x: s.or_(s.not_(self.fin(x)), s.not_(s.eq(x.v, s.real(0)))), a)
            lo, hi = int_range(dst)

            def to_int(x: FF) -> int | Term:
                r = s.constant(x.v) if x.k == FIN and isinstance(x.k, int) else None
                if r is not None:
                    return max(lo, min(hi, int(r)))
                t = s.to_int(x.v)
                # XLA truncates toward zero and saturates at the target type's range.
                trunc = s.ite(s.le(s.real(0), x.v), t, s.neg(s.to_int(s.neg(x.v))))
                trunc = s.ite(s.lt(s.int_(hi), trunc), s.int_(hi), s.ite(s.lt(trunc, s.int_(lo)), s.int_(lo), trunc))
                if x.k == FIN and isinstance(x.k, int):
                    return self._fold_int(trunc)
                out = s.ite(self._cls_eq(x.k, NAN), s.int_(0),
                            s.ite(self._cls_eq(x.k, POS), s.int_(hi), s.ite(self._cls_eq(x.k, NEG), s.int_(lo), trunc)))
                return self._fold_int(out)
            return self._vec(to_int, a)
        if src.is_bool:
            if dst.is_float:
                return self._vec(lambda x: FF(s.real(int(x)) if isinstance(x, bool) else s.ite(x, s.real(1), s.real(0)),
                                         FIN), a)
            if dst.is_bool:
                return a
            return self._vec(lambda x: self._ite_int(x, 1, 0), a)
        if dst.is_float:
            return self._vec(lambda x: FF(s.real(x) if isinstance(x, int) else s.to_real(x), FIN), a)
        if dst.is_bool:
            return self._vec(lambda x: x != 0 if isinstance(x, int) else s.not_(s.eq(x, s.int_(0))), a)
        return a

    def _total_compare(self, direction: str, x: FF, y: FF) -> Bool:
        """TOTALORDER; with a NaN operand an uninterpreted predicate (see `symbolic`)."""
        s = self.store
        any_nan = s.or_(self.nan(x), self.nan(y))
        ordered = self.f_compare(direction, x, y, False)
        if any_nan is False:
            return ordered
        self.approximations.add("totalorder-nan")
        zero = s.real(0)
        args = [self._int(x.k), s.ite(self.fin(x), x.v, zero), self._int(y.k), s.ite(self.fin(y), y.v, zero)]
        return s.bite(any_nan, s.uf(f"totalorder_nan.{direction}", args, BOOL), ordered)

    # -- uninterpreted functions ----------------------------------------------------
    def uf(self, name: str, args: Sequence[np.ndarray]) -> np.ndarray:
        arity = UNINTERPRETED[name]
        assert len(args) == arity
        self.approximations.add(name)

        def apply(*xs: FF) -> FF:
            return self._uf_apply(name, xs)

        return self._vec(apply, *args)

    def _uf_apply(self, name: str, xs: Sequence[FF]) -> FF:
        s = self.store
        vs = [x.v for x in xs]
        if all(x.k == FIN and isinstance(x.k, int) for x in xs):
            exact = exact_value(name, [s.constant(v) for v in vs])
            if exact is not None:
                return FF(s.real(exact), FIN)
            fresh = s.uf(f"{name}.domain_class", vs, INT)
            return FF(s.uf(name, vs), self._domain(name, vs, fresh))
        zero = s.real(0)
        all_fin = s.and_(*[self.fin(x) for x in xs])
        norm = [s.ite(self.fin(x), x.v, zero) for x in xs]
        ks = [self._int(x.k) for x in xs]
        v = s.ite(all_fin, s.uf(name, norm), s.uf(f"{name}.special", norm + ks))
        if self.defer_classes:
            # An operand of a symbolic class (Adam's sqrt of a bias-corrected nu): the class
            # is the node of the split below over the operands (`_uf_class_rule`).
            rule = UF_CLASS + name
            s.caches.setdefault(DEFERRED, {})[rule] = _uf_class_rule
            return FF(v, s.deferred(rule, tuple(t for x in xs for t in (x.v, self._int(x.k)))))
        dom = self._domain(name, norm, s.uf(f"{name}.domain_class", norm, INT))
        k = self._ite_cls(all_fin, dom, s.uf(f"{name}.class", norm + ks, INT))
        return FF(v, k)

    # -- contractions ---------------------------------------------------------------
    def dot(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        """(B, M, K) x (B, N, K) -> (B, M, N). Rows and columns of finite floats (the usual
        case) multiply and sum their value polynomials directly: the same terms as the
        elementwise `mul` and `_sum`, without an object array per product."""
        if kind is not Kind.FLOAT:
            return dot_by_sums(a, b, kind, self.mul, self._sum)
        s = self.store
        B, M, K = a.shape
        N = b.shape[1]
        self.element_ops += B * M * N * max(2 * K - 1, 0)  # K products and K - 1 sums per result
        out = np.empty((B, M, N), dtype=object)
        for bi in range(B):
            rows = [list(a[bi, m]) for m in range(M)]
            cols = [list(b[bi, n]) for n in range(N)]
            finite_rows = [all(type(x.k) is int and x.k == FIN for x in r) for r in rows]
            finite_cols = [all(type(y.k) is int and y.k == FIN for y in c) for c in cols]
            # The value terms once per row and column, not once per product.
            row_vs = [[x.v for x in r] for r in rows]
            col_vs = [[y.v for y in c] for c in cols]
            for m, row in enumerate(rows):
                for n, col in enumerate(cols):
                    if finite_rows[m] and finite_cols[n]:
                        out[bi, m, n] = FF(s.sum_of_products(zip(row_vs[m], col_vs[n]), REAL), FIN)
                    else:
                        out[bi, m, n] = self._sum([self.f_mul(x, y) for x, y in zip(row, col)], kind)
        return out

    def reduce_sum(self, a: np.ndarray, axes: tuple[int, ...], kind: Kind) -> np.ndarray:
        out = reduce_by_sums(a, axes, kind, self._sum)
        self.element_ops += max(a.size - out.size, 0)  # n - 1 sums per result of n elements
        return out

    def _sum(self, items: list[Any], kind: Kind) -> Any:
        s = self.store
        if kind is Kind.FLOAT:
            if all(x.k == FIN and isinstance(x.k, int) for x in items):
                return FF(s.sum([x.v for x in items], REAL), FIN)
            # The values' sum as one polynomial, the classes' in one flat form (`sum_class`).
            return FF(s.sum([x.v for x in items], REAL), sum_class(s, [x.k for x in items]))
        if kind is Kind.BOOL:
            return s.or_(*items)
        if all(isinstance(x, int) for x in items):
            return sum(items)
        return self._fold_int(s.sum([self._int(x) for x in items], INT))

    def canonical(self, arr: np.ndarray) -> np.ndarray:
        return arr  # terms are in normal form as they are built

    def content_key(self, arr: Any) -> tuple[Any, ...] | None:
        """Terms are hash-consed, so equal ids are equal terms: the key lists each
        element's value id and class (an int, or a class term's id), Python values as
        themselves with their type (True and 1 are different elements)."""
        keys = self.element_keys(arr)
        return None if keys is None else (arr.shape, *keys)

    def element_keys(self, arr: Any) -> list[Any] | None:
        """`content_key`'s per-element keys, as a list (no shape)."""
        if not isinstance(arr, np.ndarray) or arr.dtype != object:
            return None
        flat = arr.reshape(-1).tolist()
        # Most values are floats of a known class: their keys in one comprehension (a
        # key is never None, so a None marks an element the general loop below keys).
        keys: list[Any] = [(x.v.id, x.k) if type(x) is FF and type(x.k) is int else None for x in flat]
        if None not in keys:
            return keys
        keys = []
        put = keys.append
        for x in flat:
            tx = type(x)
            if tx is FF:
                k = x.k
                put((x.v.id, k if type(k) is int else ("cls", k.id)))
            elif tx is Term:
                put(("t", x.id))
            elif tx is bool or tx is int:
                put((tx, x))
            else:
                return None
        return keys

    def index_value(self, x: Any) -> int | None:
        if isinstance(x, int):
            return x
        k = self.store.constant(x) if isinstance(x, Term) else None
        return int(k) if k is not None else None

    def positions(self, s_: Any, hi: int, clamp: bool) -> list[tuple[int, Any]]:
        v = self.index_value(s_)
        if v is not None:
            return known_positions(v, hi, clamp)
        if hi < 0:
            return []
        s = self.store

        def at(p: int) -> Bool:
            return s.eq(s_, s.int_(p))
        if hi == 0:
            return [(0, True if clamp else at(0))]
        if clamp:
            return [(0, s.le(s_, s.int_(0)))] + [(p, at(p)) for p in range(1, hi)] + [(hi, s.le(s.int_(hi), s_))]
        return [(p, at(p)) for p in range(hi + 1)]

    def choose(self, options: Sequence[tuple[Any, Any]], kind: Kind) -> Any:
        # One select per option past the last (a gather's or a scatter's chain over the
        # positions an index may take), counted like an elementwise select's result.
        self.element_ops += len(options) - 1
        acc = options[-1][1]
        for cond, val in reversed(options[:-1]):
            if kind is Kind.FLOAT:
                acc = self.f_select(cond, val, acc)
            elif kind is Kind.BOOL:
                acc = self.store.bite(cond, val, acc)
            else:
                acc = self._fold_ite_int(cond, val, acc)
        return acc

    def all_of(self, conds: Sequence[Any]) -> Any:
        return self.store.and_(*conds)

    def constant_value(self, x: Any, kind: Kind) -> float | int | bool | None:
        if kind is Kind.FLOAT:
            if x.k == FIN and isinstance(x.k, int):
                r = self.store.constant(x.v)
                return None if r is None else float(r)
            return {POS: float("inf"), NEG: float("-inf"), NAN: float("nan")}.get(x.k) \
                if isinstance(x.k, int) else None
        if isinstance(x, (bool, int)):
            return x
        return self.index_value(x)

    def scalar(self, x: Any) -> np.ndarray:
        return scalar_array(x)

    def element_equal(self, a: Any, b: Any, kind: Kind) -> Any:
        if kind is Kind.FLOAT:
            return self.f_equal(a, b)
        if kind is Kind.BOOL:
            return self.store.not_(self.store.xor(a, b))
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return self.store.eq(self._int(a), self._int(b))
