"""The term layer under the prover: what the sweep, the driver and the witness search do
with the symbolic algebra's elements (take them apart, cut them, substitute, walk them,
build the formulas a solver is asked about, read values back).

An element is a Python bool/int (folded), a z3 term (INT and BOOL), or an `SF` (a float:
a real value term and an IEEE class, an int or a term). Everything that knows z3's
representation lives here and in `symbolic`; callers hold elements and ids only, so a
different term representation replaces this module, not its callers. Several walks use
z3's C API: the Python wrappers built per node (ExprRef.children()) dominated run time."""
from __future__ import annotations

from collections.abc import Container, Iterable
from fractions import Fraction
from typing import Any

import z3
from z3 import z3core as _C

from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.symbolic import FIN, NAN, NEG, POS, POSITIVE_CUT_PREFIX, SF, Simplifier, known_positive, lift_any

Binding = tuple[Any, Any]  # (an input's free constant, the literal it takes)


# ---------------------------------------------------------------------------
# Elements and their terms


def element_terms(x: Any) -> list[Any]:
    """The terms of an element: a float's value and (when symbolic) class, or the term."""
    if isinstance(x, SF):
        return [x.v] + ([] if isinstance(x.k, int) else [x.k])
    return [] if isinstance(x, (bool, int)) else [x]


def with_terms(x: Any, terms: list[Any]) -> Any:
    """x with its terms replaced by `terms` (in the order `element_terms` lists them)."""
    if isinstance(x, SF):
        return SF(terms[0], x.k if isinstance(x.k, int) else terms[1])
    return x if isinstance(x, (bool, int)) else terms[0]


def is_folded(x: Any) -> bool:
    """A Python value: nothing symbolic left."""
    return isinstance(x, (bool, int))


def is_float(x: Any) -> bool:
    return isinstance(x, SF)


def float_class(x: Any) -> Any:
    """A float element's IEEE class: FIN/POS/NEG/NAN, or a term."""
    return x.k


def finite_float(x: Any) -> bool:
    """A float element whose IEEE class is statically finite."""
    return isinstance(x, SF) and type(x.k) is int and x.k == FIN


def symbolic_class(x: Any) -> bool:
    """A float element whose IEEE class is a term."""
    return isinstance(x, SF) and not isinstance(x.k, int)


def identical(a: Any, b: Any) -> bool:
    """The same term (so the same value), without any reasoning."""
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
    return t[0].get_id() if t else ("python", type(x).__name__, x)


def term_id(t: Any) -> int:
    return int(t.get_id())


def is_compound(t: Any) -> bool:
    """An application with arguments (not an input, a cut variable or a literal)."""
    return bool(t.num_args() > 0)


# ---------------------------------------------------------------------------
# Cutting and substituting


def fresh_cut(t: Any) -> Any | None:
    """A fresh constant to stand for the compound term t, or None when t is an atom (an
    input, a cut variable or a literal): those need no cut. Known-positive terms get
    constants the algebra knows positive (a softmax denominator stays nonzero). The
    constant is wrapped in t's own Python class: z3.FreshConst's generic wrapping is slow."""
    ctx = t.ctx
    a = t.as_ast()
    if _C.Z3_get_app_num_args(ctx.ref(), a) == 0:
        return None
    prefix = POSITIVE_CUT_PREFIX if isinstance(t, z3.ArithRef) and known_positive(t) else "c"
    raw = _C.Z3_mk_fresh_const(ctx.ref(), prefix, _C.Z3_get_sort(ctx.ref(), a))
    return t.__class__(raw, ctx)


def substitute(t: Any, pairs: list[tuple[Any, Any]]) -> Any:
    """t with each pair's first term replaced by its second. z3.substitute checks sorts
    per pair, which costs more than substituting; ours are a variable and its definition,
    or an input and a value of its sort. Substitution rebuilds the application t is, so
    the result has t's Python class."""
    if not pairs:
        return t
    n = len(pairs)
    src, dst = (z3.Ast * n)(), (z3.Ast * n)()
    for i, (f, v) in enumerate(pairs):
        src[i] = f.as_ast()
        dst[i] = v.as_ast()
    raw = _C.Z3_substitute(t.ctx.ref(), t.as_ast(), n, src, dst)
    if t.num_args() == 0:  # a constant replaced by a value: let z3 pick the wrapper
        return z3.z3._to_expr_ref(raw, t.ctx)
    return t.__class__(raw, t.ctx)


def scan(t: Any, stop: Container[int], check_uf: bool) -> tuple[frozenset[int], frozenset[int], bool]:
    """The ids in `stop` that t mentions (the walk does not enter them), the ids of its
    other free constants (program inputs), and whether it applies an uninterpreted
    function (looked for only when check_uf)."""
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


# ---------------------------------------------------------------------------
# Formulas


def value_equality(x: Any, y: Any) -> Any:
    """x == y for two real value terms, built with the C API: the algebra's general IEEE
    equality inspects its operands through slow wrappers."""
    return z3.BoolRef(_C.Z3_mk_eq(x.ctx.ref(), x.as_ast(), y.as_ast()), x.ctx)


def class_equality(ka: Any, kb: Any) -> Any:
    """Two IEEE classes (ints or terms) are equal."""
    if isinstance(ka, int):
        return z3.IntVal(ka) == kb
    return ka == (z3.IntVal(kb) if isinstance(kb, int) else kb)


def formula(eq: Any) -> Any:
    """An equality the algebra built (a folded bool or a term) as a solver formula."""
    return lift_any(eq)


def negation(eq: Any) -> Any:
    return z3.Not(lift_any(eq))


def any_of(formulas: Iterable[Any]) -> Any:
    fs = list(formulas)
    return z3.Or(*fs) if fs else z3.BoolVal(False)


def sweep_simplifier(blowup: int) -> Simplifier:
    return Simplifier(blowup, arith_lhs=True)


def simplifies_true(eq: Any, simplify: Simplifier) -> bool:
    if isinstance(eq, bool):
        return eq
    return bool(z3.is_true(simplify(eq)))


def simplifies_false(eq: Any) -> bool:
    if isinstance(eq, bool):
        return not eq
    return bool(z3.is_false(z3.simplify(lift_any(eq))))


def simplify(t: Any) -> Any:
    return z3.simplify(t)


# ---------------------------------------------------------------------------
# Inputs and values


def input_bindings(sym: Any, value: Any, kind: Kind) -> Binding:
    """An input element's free constant and the literal of a concrete value."""
    if kind is Kind.FLOAT:
        return sym.v, z3.RealVal(Fraction(float(value)))
    if kind is Kind.BOOL:
        return sym, z3.BoolVal(bool(value))
    return sym, z3.IntVal(int(value))


def differs_from(sym: Any, value: Any, kind: Kind) -> Any:
    """The input element takes another value than `value`."""
    term, literal_ = input_bindings(sym, value, kind)
    return term != literal_


def number(v: Any) -> Any:
    """A z3 literal as a Python number or bool."""
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_rational_value(v):
        f = Fraction(v.numerator_as_long(), v.denominator_as_long())
        return int(f) if f.denominator == 1 else float(f)
    if z3.is_algebraic_value(v):
        return float(Fraction(v.approx(30).as_fraction()))
    raise ValueError(f"not a value: {v}")


def literal(v: Any) -> Any:
    """z3 Int and Bool literals as Python values, the form the symbolic algebra folds."""
    if z3.is_int_value(v):
        return v.as_long()
    if z3.is_true(v) or z3.is_false(v):
        return bool(z3.is_true(v))
    return v


def element_value(x: Any, kind: Kind, value_of: Any = lambda t: t) -> Any:
    """An element as a report value: a number, a bool, or "nan"/"inf"/"-inf" for a float
    whose IEEE class is not finite. value_of turns a term into a literal (a model's
    evaluation, or the identity for terms that are literals already)."""
    if kind is Kind.FLOAT:
        k = x.k if isinstance(x.k, int) else number(value_of(x.k))
        if k != FIN:
            return {NAN: "nan", POS: "inf", NEG: "-inf"}.get(k, "non-finite")
        return number(value_of(x.v))
    return x if isinstance(x, (bool, int)) else number(value_of(lift_any(x)))
