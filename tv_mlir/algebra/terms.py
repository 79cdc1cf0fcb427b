"""The term layer under the prover: what the sweep, the driver and the witness search do
with the symbolic algebra's elements (take them apart, cut them, substitute, walk them,
build the formulas a solver is asked about, read values back).

Two representations are served, told apart by type: z3 terms (`SymbolicAlgebra`: INT and
BOOL elements are z3 terms, a float an `SF`) and the project's own hash-consed terms
(`FastAlgebra`: `term.Term`, a float an `FF`); a Python bool/int is a folded element in
both. Callers hold elements and ids only. Formulas for the solver are z3 in both cases
(`formula`, `negation`, `any_of`, `differs_from`): own terms are translated once per
store, with a cache. Several z3 walks use z3's C API: the Python wrappers built per node
(ExprRef.children()) dominated run time."""
from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import z3
from z3 import z3core as _C

from tv_mlir.algebra import fast, intervals
from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.fast import FF
from tv_mlir.algebra.piecewise import int_range
from tv_mlir.algebra.symbolic import FIN, NAN, NEG, POS, POSITIVE_CUT_PREFIX, SF, Simplifier, known_positive, lift_any
from tv_mlir.algebra.term import BOOL, BVAR, DEFER, INT, REAL, VAR, Term, TermStore
from tv_mlir.algebra.term import TermBudget as TermBudget  # re-exported: callers catch it here
from tv_mlir.algebra.term_z3 import Z3Translator

FLOATS = (SF, FF)

Binding = tuple[Any, Any]  # (an input's free constant, the literal it takes)


# ---------------------------------------------------------------------------
# Elements and their terms


def element_terms(x: Any) -> list[Any]:
    """The terms of an element: a float's value and (when symbolic) class, or the term."""
    if isinstance(x, FLOATS):
        return [x.v] + ([] if isinstance(x.k, int) else [x.k])
    return [] if isinstance(x, (bool, int)) else [x]


def with_terms(x: Any, terms: list[Any]) -> Any:
    """x with its terms replaced by `terms` (in the order `element_terms` lists them)."""
    if isinstance(x, FLOATS):
        return type(x)(terms[0], x.k if isinstance(x.k, int) else terms[1])
    return x if isinstance(x, (bool, int)) else terms[0]


def is_folded(x: Any) -> bool:
    """A Python value: nothing symbolic left."""
    return isinstance(x, (bool, int))


def is_float(x: Any) -> bool:
    return isinstance(x, FLOATS)


def float_class(x: Any) -> Any:
    """A float element's IEEE class: FIN/POS/NEG/NAN, or a term."""
    return x.k


def finite_float(x: Any) -> bool:
    """A float element whose IEEE class is statically finite."""
    return isinstance(x, FLOATS) and type(x.k) is int and x.k == FIN


def symbolic_class(x: Any) -> bool:
    """A float element whose IEEE class is a term."""
    return isinstance(x, FLOATS) and not isinstance(x.k, int)


def identical(a: Any, b: Any) -> bool:
    """The same term (so the same value), without any reasoning."""
    if isinstance(a, FF) and isinstance(b, FF):
        return a.v is b.v and (a.k == b.k if isinstance(a.k, int) and isinstance(b.k, int) else a.k is b.k)
    if isinstance(a, Term) or isinstance(b, Term):
        return a is b
    if isinstance(a, SF) and isinstance(b, SF):
        return bool(a.v.eq(b.v)) and (a.k == b.k if isinstance(a.k, int) and isinstance(b.k, int)
                                      else (not isinstance(a.k, int) and not isinstance(b.k, int)
                                            and bool(a.k.eq(b.k))))
    if isinstance(a, (bool, int)) or isinstance(b, (bool, int)):
        return type(a) is type(b) and a == b
    return bool(a.eq(b))


def element_id(x: Any) -> Any:
    """An id for an element's value term (hash-consed: equal terms, equal ids)."""
    t = element_terms(x)
    return term_id(t[0]) if t else ("python", type(x).__name__, x)


def term_id(t: Any) -> int:
    """A term's id. An own free constant is a polynomial `1 * atom`: its id is the atom's,
    the id under which other terms mention it (and under which `scan` reports it)."""
    if type(t) is Term:
        leaf = t.leaf
        return leaf.id if leaf is not None else t.id
    return int(t.get_id())


def is_compound(t: Any) -> bool:
    """An application with arguments (not an input, a cut variable or a literal)."""
    if type(t) is Term:
        return t.leaf is None and t.const is None
    return bool(t.num_args() > 0)


def cut_key(t: Any) -> int | None:
    """`term_id` of a compound term (`is_compound`), None for an atom: one call on the
    path every element of every op result takes."""
    if type(t) is Term:
        return t.id if t.leaf is None and t.const is None else None
    return int(t.get_id()) if t.num_args() > 0 else None


# ---------------------------------------------------------------------------
# Cutting and substituting


def fresh_cut(t: Any, definition: Callable[[Any], Any | None] | None = None) -> Any | None:
    """A fresh constant to stand for the compound term t, or None when t is an atom (an
    input, a cut variable or a literal): those need no cut. Known-positive terms get
    constants the algebra knows positive (a softmax denominator stays nonzero). The
    constant is wrapped in t's own Python class: z3.FreshConst's generic wrapping is slow.
    `definition` (a cut variable -> its defining term) lets a product of cut variables be
    signed through their one-monomial definitions (`_sign_through_cuts`)."""
    if isinstance(t, Term):
        if not is_compound(t):
            return None
        sign = fast.known_sign(t) if t.sort == REAL else 0
        if sign == 0 and t.sort == REAL and definition is not None:
            sign = _sign_through_cuts(t, definition)
        prefix = {fast.POS_SIGN: fast.POSITIVE_CUT_PREFIX, fast.NONNEG_SIGN: fast.NONNEGATIVE_CUT_PREFIX}.get(sign, "c")
        return t.store.fresh(prefix, t.sort)
    ctx = t.ctx
    a = t.as_ast()
    if _C.Z3_get_app_num_args(ctx.ref(), a) == 0:
        return None
    prefix = POSITIVE_CUT_PREFIX if isinstance(t, z3.ArithRef) and known_positive(t) else "c"
    raw = _C.Z3_mk_fresh_const(ctx.ref(), prefix, _C.Z3_get_sort(ctx.ref(), a))
    return t.__class__(raw, ctx)


def _sign_through_cuts(t: Term, definition: Callable[[Any], Any | None]) -> int:
    """The sign of a one-monomial product of cut variables with their one-monomial
    definitions put in: `g * (c * g)`, the square in Adam's `(1 - b2) * g * g` written as
    two multiplies (each cut apart by the sweep), is c * g^2, non-negative for c > 0. Only
    one-monomial definitions are put in: the expansion is then one monomial too, built
    without interning anything (every product of two activations comes through here)."""
    if len(t.data) != 1:
        return 0
    (mono, coeff), = t.data
    if len(mono) < 2:
        return 0
    nodes = t.store.nodes
    acc: dict[int, int] = {}
    for atom_id, e in mono:
        d = definition(nodes[atom_id])
        if isinstance(d, Term) and d.kind == "poly" and len(d.data) == 1 and d.data[0][0]:
            dm, dc = d.data[0]
            coeff = coeff * dc ** e
            for a, de in dm:
                acc[a] = acc.get(a, 0) + de * e
        else:
            acc[atom_id] = acc.get(atom_id, 0) + e
    return fast.monomial_sign(t.store, coeff, acc.items())


def record_range(var: Any, definition_of: Any, definition: Any) -> None:
    """Note the bounds of an integer cut variable's definition (own core), so that
    comparisons they decide fold as they are built (an index clamped into range is in
    range: the NaN fill of a gather never happens)."""
    if isinstance(var, Term) and var.sort == REAL and var.leaf is not None and isinstance(definition_of, Term):
        fast.note_real_range(var, definition_of)
        return
    if isinstance(var, Term) and var.sort == BOOL and isinstance(definition_of, Term):
        fast.note_condition(var, definition_of)
        return
    if not isinstance(var, Term) or var.sort != INT or var.leaf is None:
        return
    if isinstance(definition_of, Term):
        intervals.note_cut(var, definition_of)
    # The case split walks the whole definition at every cut; a definition whose range
    # analysis (linear, memoised per store) is already narrow gains little from it: every
    # IEEE class term (0..3; with --inputs ieee every float's class is an integer cut),
    # a flag. Such bounds are not recorded either: the solver's queries leave cut points
    # free without their bounds, so folding more comparisons by them only invites models
    # that the definitions rule out (pairs/argmax_forms then got a spurious witness). They
    # are kept as `ranges`, which only range analysis and canonical guards read.
    lo, hi = intervals.interval(definition_of)
    if 0 <= lo and hi <= 3 and isinstance(definition_of, Term):  # an IEEE class or a flag (`fast.note_class`)
        fast.note_class(var, definition_of)
    if hi - lo <= NARROW_RANGE:
        var.store.ranges[var.leaf.id] = (int(lo), int(hi))
        return
    rng = int_range(definition_of, definition)
    if rng is not None and rng != (-math.inf, math.inf):
        var.store.bounds[var.leaf.id] = rng
    elif WIDE_RANGES and math.isfinite(lo) and math.isfinite(hi):
        # No case split, but the linear analysis's bounds hold all the same: kept as a range
        # (read by range analysis only, like the narrow ones), so that a sum of such cut
        # points stays unwrapped where it cannot leave its type. An int8 x int8 -> int32
        # dot's per-device partial sums (65,280 wide) were cut without it, and their
        # int32 all-reduce became a remainder no merge with the reference's dot could see.
        var.store.ranges[var.leaf.id] = (int(lo), int(hi))


# A cut point whose definition's linear range is wide and finite, with no case split to
# narrow it, keeps that range (record_range). A switch for the tests that show it matters.
WIDE_RANGES = True
NARROW_RANGE = 4096  # a range this narrow is not worth the case split's walk (see record_range)


def substitute(t: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """t with each pair's first term replaced by its second. z3.substitute checks sorts
    per pair, which costs more than substituting; ours are a variable and its definition,
    or an input and a value of its sort. Substitution rebuilds the application t is, so
    the result has t's Python class."""
    if not pairs:
        return t
    if isinstance(t, Term):
        return t.store.substitute(t, {term_id(f): v for f, v in pairs})
    n = len(pairs)
    src, dst = (z3.Ast * n)(), (z3.Ast * n)()
    for i, (f, v) in enumerate(pairs):
        src[i] = f.as_ast()
        dst[i] = v.as_ast()
    raw = _C.Z3_substitute(t.ctx.ref(), t.as_ast(), n, src, dst)
    if t.num_args() == 0:  # a constant replaced by a value: let z3 pick the wrapper
        return z3.z3._to_expr_ref(raw, t.ctx)
    return t.__class__(raw, t.ctx)


def substitute_all(ts: list[Any], pairs: list[tuple[Any, Any]], memo: dict[int, Any] | None = None) -> list[Any]:
    """Each of ts with the same pairs substituted (`substitute`); own terms share one memo,
    so a subterm common to several of them (a float's value and class, both sides of a
    local proof) is rebuilt once. A memo passed in must have been filled with the same
    pairs (own terms only: it maps term ids to their substituted forms)."""
    own = [t for t in ts if isinstance(t, Term)]
    if not pairs or not own:
        return [substitute(t, pairs) for t in ts]
    store = own[0].store
    mapping = {term_id(f): v for f, v in pairs}
    memo = {} if memo is None else memo
    return [store.substitute(t, mapping, memo) if isinstance(t, Term) else substitute(t, pairs) for t in ts]


def scan(t: Any, stop: Container[int], check_uf: bool) -> tuple[frozenset[int], frozenset[int], bool]:
    """The ids in `stop` that t mentions (the walk does not enter them), the ids of its
    other free constants (program inputs), and whether it applies an uninterpreted
    function (looked for only when check_uf)."""
    if isinstance(t, Term):
        return _own_scan(t, stop)
    ctx = t.ctx.ref()
    vs: set[int] = set()
    leaves: set[int] = set()
    uf = False
    seen: set[int] = set()
    stack = [t.as_ast()]
    while stack:
        a = stack.pop()
        i = _C.Z3_get_ast_id(ctx, a)
        if i in seen:
            continue
        seen.add(i)
        if i in stop:
            vs.add(i)
            continue
        if _C.Z3_get_ast_kind(ctx, a) != _C.Z3_APP_AST:
            continue  # numerals
        n = _C.Z3_get_app_num_args(ctx, a)
        if n == 0 or check_uf:
            is_uf = _C.Z3_get_decl_kind(ctx, _C.Z3_get_app_decl(ctx, a)) == z3.Z3_OP_UNINTERPRETED
            if n == 0:
                if is_uf:
                    leaves.add(i)
                continue
            uf = uf or is_uf
        stack.extend(_C.Z3_get_app_arg(ctx, a, k) for k in range(n))
    return frozenset(vs), frozenset(leaves), uf


def _own_scan(t: Term, stop: Container[int]) -> tuple[frozenset[int], frozenset[int], bool]:
    vs: set[int] = set()
    leaves: set[int] = set()
    uf = False
    seen: set[int] = set()
    stack = [t]
    while stack:
        x = stack.pop()
        if x.id in seen:
            continue
        seen.add(x.id)
        if x.kind in (VAR, BVAR):
            (vs if x.id in stop else leaves).add(x.id)
            continue
        if x.kind in ("uf", "buf") or (x.kind == DEFER and str(x.data).startswith(fast.UF_CLASS)):
            uf = True  # a deferred class of a function applies it (and its class functions)
        stack.extend(x.args)
    return frozenset(vs), frozenset(leaves), uf


# ---------------------------------------------------------------------------
# Formulas


def value_equality(x: Any, y: Any) -> Any:
    """x == y for two real value terms, built with the C API: the algebra's general IEEE
    equality inspects its operands through slow wrappers."""
    if isinstance(x, Term):
        return x.store.eq(x, y)
    return z3.BoolRef(_C.Z3_mk_eq(x.ctx.ref(), x.as_ast(), y.as_ast()), x.ctx)


def class_equality(ka: Any, kb: Any) -> Any:
    """Two IEEE classes (ints or terms) are equal."""
    if isinstance(ka, Term) or isinstance(kb, Term):
        store = (ka if isinstance(ka, Term) else kb).store
        return store.eq(store.int_(ka) if isinstance(ka, int) else ka, store.int_(kb) if isinstance(kb, int) else kb)
    if isinstance(ka, int):
        return z3.IntVal(ka) == kb
    return ka == (z3.IntVal(kb) if isinstance(kb, int) else kb)


def class_term(k: Any, like: Any) -> Any | None:
    """An IEEE class as an own int term (a known class as a constant of `like`'s store);
    None for the z3 core."""
    if isinstance(k, Term):
        return k
    if isinstance(like, Term):
        return like.store.int_(k)
    return None


@contextmanager
def term_budget(elements: Iterable[Any], extra: int) -> Iterator[None]:
    """At most `extra` more own term size inside the block (`TermBudget` past it), in the
    store of whichever of the elements has own terms; the z3 core has no budget."""
    store = next((t.store for x in elements for t in element_terms(x) if isinstance(t, Term)), None)
    if store is None:
        yield
        return
    with store.budget(extra):
        yield


def work_size(pairs: Sequence[tuple[Any, Any]]) -> int:
    """A deterministic measure of symbolic work done so far, for budgets that must not
    depend on the machine's load: the own store's size (nodes and monomials built); for
    the z3 core, which has no such count, 0 (its budgets count calls instead)."""
    store = next((t.store for pair in pairs for x in pair for t in element_terms(x) if isinstance(t, Term)), None)
    return 0 if store is None else store.size


def formula(eq: Any) -> Any:
    """A condition the algebra built (a folded bool or a term) as a solver formula."""
    if isinstance(eq, Term):
        return _translator(eq.store).to_z3(eq)
    return lift_any(eq)


def _translator(store: TermStore) -> Z3Translator:
    """One translator per store (its cache is what makes translation once per term)."""
    tr = store.caches.get("z3")
    if tr is None:
        tr = store.caches["z3"] = Z3Translator(store)
    return tr


def negation(eq: Any) -> Any:
    return z3.Not(formula(eq))


def any_of(formulas: Iterable[Any]) -> Any:
    fs = list(formulas)
    return z3.Or(*fs) if fs else z3.BoolVal(False)


def sweep_simplifier(blowup: int) -> Simplifier:
    return Simplifier(blowup, arith_lhs=True)


def simplifies_true(eq: Any, simplify: Simplifier) -> bool:
    if isinstance(eq, bool):
        return eq
    if isinstance(eq, Term):
        return False  # own terms are in normal form: a true condition has folded already
    return bool(z3.is_true(simplify(eq)))


def simplifies_false(eq: Any) -> bool:
    if isinstance(eq, bool):
        return not eq
    if isinstance(eq, Term):
        return False
    return bool(z3.is_false(z3.simplify(lift_any(eq))))


def simplify(t: Any) -> Any:
    if isinstance(t, (Term, bool)):
        return t  # own terms are in normal form; a folded own condition is a bool
    return z3.simplify(t)


# ---------------------------------------------------------------------------
# Inputs and values


def input_bindings(sym: Any, value: Any, kind: Kind) -> list[Binding]:
    """An input element's free constants and the literals of a concrete value: the value,
    and for a float input whose IEEE class is free (`--inputs ieee`) the class as well (the
    value of a non-finite one is bound to 0: it means nothing there)."""
    if kind is Kind.FLOAT:
        v = float(value)
        cls = FIN if math.isfinite(v) else NAN if math.isnan(v) else POS if v > 0 else NEG
        real = Fraction(v) if cls == FIN else Fraction(0)
        own = isinstance(sym, FF)
        out: list[Binding] = [(sym.v, sym.v.store.real(real) if own else z3.RealVal(real))]
        if not isinstance(sym.k, int):
            out.append((sym.k, sym.k.store.int_(cls) if own else z3.IntVal(cls)))
        elif cls != sym.k:
            raise ValueError(f"input value {value} outside the input domain (class {sym.k})")
        return out
    if isinstance(sym, Term):
        return [(sym, (bool(value) if kind is Kind.BOOL else sym.store.int_(int(value))))]
    if isinstance(sym, bool):  # an input bounded to one value (a decided stage input): no free constant
        if sym != bool(value):
            raise ValueError(f"input value {value} outside the input domain ({sym})")
        return []
    if kind is Kind.BOOL:
        return [(sym, z3.BoolVal(bool(value)))]
    return [(sym, z3.IntVal(int(value)))]


def differs_from(sym: Any, value: Any, kind: Kind) -> Any:
    """The input element takes another value than `value`."""
    differ = []
    for term, literal_ in input_bindings(sym, value, kind):
        if isinstance(term, Term):
            store = term.store
            same = (store.eq(term, literal_) if not isinstance(literal_, bool) else
                    (term if literal_ else store.not_(term)))
            differ.append(z3.Not(formula(same)))
        else:
            differ.append(term != literal_)
    if not differ:  # an input element that is a constant takes no other value
        return z3.BoolVal(False)
    return differ[0] if len(differ) == 1 else z3.Or(*differ)


def number(v: Any) -> Any:
    """A literal as a Python number or bool."""
    if isinstance(v, bool):
        return v
    if isinstance(v, Term):
        k = v.store.constant(v)
        if k is None:
            raise ValueError(f"not a value: {v}")
        return _python_number(k)
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        return _python_number(Fraction(v.numerator_as_long(), v.denominator_as_long()))
    if z3.is_algebraic_value(v):
        return float(Fraction(v.approx(30).as_fraction()))
    raise ValueError(f"not a value: {v}")


def _python_number(f: Fraction) -> int | float:
    """f as an int when integral, else a float; a real past float64's range (a solver's
    model may pick one) as its nearest integer, which says as much of it."""
    if f.denominator == 1:
        return int(f)
    try:
        return float(f)
    except OverflowError:
        return round(f)


def literal(v: Any) -> Any:
    """Int and Bool literals as Python values, the form the symbolic algebras fold."""
    if isinstance(v, bool):
        return v
    if isinstance(v, Term):
        k = v.store.constant(v) if v.sort == INT else None
        return int(k) if k is not None else v
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    return v


def _identity(t: Any) -> Any:
    return t


def element_value(x: Any, kind: Kind, value_of: Any = _identity) -> Any:
    """An element as a report value: a number, a bool, or "nan"/"inf"/"-inf" for a float
    whose IEEE class is not finite. value_of turns a term into a literal (a model's
    evaluation, or the identity for terms that are literals already). A model reads z3
    terms: own terms are translated first."""
    if value_of is not _identity:
        read = value_of
        value_of = lambda t: read(formula(t)) if isinstance(t, Term) else read(t)  # noqa: E731
    if kind is Kind.FLOAT:
        k = x.k if isinstance(x.k, int) else number(value_of(x.k))
        if k != FIN:
            return {NAN: "nan", POS: "inf", NEG: "-inf"}.get(k, "non-finite")
        return number(value_of(x.v))
    return x if isinstance(x, (bool, int)) else number(value_of(lift_any(x)))
