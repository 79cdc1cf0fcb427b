"""Exact symbolic evaluation over z3.

Elements of a FLOAT tensor are `SF(value, cls)`: a z3 Real plus the IEEE class of the
element (finite, +inf, -inf, NaN). Inputs are finite reals; non-finite values enter through
constants (the -inf init of a max reduction), division by zero and the domain of partial
functions (log 0, sqrt of a negative), and are propagated by IEEE rules so that `x / y * y`
differs from `x` exactly at `y == 0`. Signed zeros and NaN payloads are not modelled.

INT elements are Python ints or z3 Ints (mathematical integers), BOOL elements Python bools
or z3 Bools. Python values fold statically, which keeps index arithmetic, loop counters
and the class of most floats out of the solver entirely."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import z3

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
from tv_mlir.ir import TensorType

FIN, POS, NEG, NAN = 0, 1, 2, 3  # IEEE classes of a float element

# ---------------------------------------------------------------------------
# Folding combinators: Python values stay Python, z3 terms only when needed.


def _is_py(x: Any) -> bool:
    return isinstance(x, (bool, int, Fraction))


def lift_bool(x: Any) -> z3.BoolRef:
    return z3.BoolVal(x) if isinstance(x, bool) else x


def lift_int(x: Any) -> z3.ArithRef:
    return z3.IntVal(x) if isinstance(x, int) else x


def If(c: Any, a: Any, b: Any) -> Any:
    if isinstance(c, bool):
        return a if c else b
    if z3.is_true(c):
        return a
    if z3.is_false(c):
        return b
    if _is_py(a) and _is_py(b) and type(a) is type(b) and a == b:
        return a
    if not _is_py(a) and not _is_py(b) and a.eq(b):
        return a
    if isinstance(a, bool) or isinstance(b, bool):
        return z3.If(c, lift_bool(a), lift_bool(b))
    if isinstance(a, int) and isinstance(b, int):
        return z3.If(c, z3.IntVal(a), z3.IntVal(b))
    return z3.If(c, a, b)


def Or(*xs: Any) -> Any:
    rest = []
    for x in xs:
        if x is True:
            return True
        if x is False:
            continue
        rest.append(x)
    if not rest:
        return False
    return rest[0] if len(rest) == 1 else z3.Or(*rest)


def And(*xs: Any) -> Any:
    rest = []
    for x in xs:
        if x is False:
            return False
        if x is True:
            continue
        rest.append(x)
    if not rest:
        return True
    return rest[0] if len(rest) == 1 else z3.And(*rest)


def Not(x: Any) -> Any:
    return (not x) if isinstance(x, bool) else z3.Not(x)


def Xor(a: Any, b: Any) -> Any:
    if isinstance(a, bool) and isinstance(b, bool):
        return a != b
    if isinstance(a, bool):
        return Not(b) if a else b
    if isinstance(b, bool):
        return Not(a) if b else a
    return z3.Xor(a, b)


def Eq(a: Any, b: Any) -> Any:
    if _is_py(a) and _is_py(b):
        return a == b
    return lift_any(a) == lift_any(b)


def lift_any(x: Any) -> Any:
    if isinstance(x, bool):
        return z3.BoolVal(x)
    if isinstance(x, int):
        return z3.IntVal(x)
    return x


def _rational(v: z3.ArithRef) -> Fraction | None:
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    return None


def _real(x: Any) -> z3.ArithRef:
    if isinstance(x, (int, Fraction)):
        return z3.RealVal(x)
    return x


class Simplifier:
    """z3's simplifier in sum-of-monomials form with its parameter object built once:
    z3.simplify(t, som=True, ...) builds one per call, which costs as much as simplifying
    the one-op-deep terms this runs on for every element of every op."""

    def __init__(self, blowup: int, arith_lhs: bool = False) -> None:
        self.params = z3.ParamsRef()
        self.params.set("som", True)
        self.params.set("som_blowup", blowup)
        if arith_lhs:
            self.params.set("arith_lhs", True)

    def __call__(self, t: z3.ExprRef) -> z3.ExprRef:
        raw = z3.z3core.Z3_simplify_ex(t.ctx.ref(), t.as_ast(), self.params.params)
        return z3.z3._to_expr_ref(raw, t.ctx)


@dataclass(frozen=True, eq=False)
class SF:
    """A symbolic float: value (meaningful only when finite) and IEEE class."""

    v: z3.ArithRef
    k: Any  # int (FIN/POS/NEG/NAN) or z3 Int term

    @property
    def fin(self) -> Any:
        return Eq(self.k, FIN)

    @property
    def nan(self) -> Any:
        return Eq(self.k, NAN)

    @property
    def inf(self) -> Any:
        return Or(Eq(self.k, POS), Eq(self.k, NEG))

    @property
    def zero(self) -> Any:
        return And(self.fin, _fold_cmp(self.v, "==", 0))

    @property
    def negative(self) -> Any:
        return Or(Eq(self.k, NEG), And(self.fin, _fold_cmp(self.v, "<", 0)))


def _fold_cmp(v: z3.ArithRef, op: str, c: Any) -> Any:
    r = _rational(v)
    if r is not None and _is_py(c):
        return {"==": r == c, "<": r < c, "<=": r <= c, ">": r > c, ">=": r >= c}[op]
    if _is_py(c) and c == 0 and known_positive(v):
        return op in (">", ">=")
    return {"==": v == c, "<": v < c, "<=": v <= c, ">": v > c, ">=": v >= c}[op]


# The name prefix the sweep gives cut variables that stand for a known-positive term.
POSITIVE_CUT_PREFIX = "cpos"
_POSITIVE_OPS = frozenset({z3.Z3_OP_ADD, z3.Z3_OP_MUL, z3.Z3_OP_DIV})


def known_positive(v: Any, depth: int = 8) -> bool:
    """v > 0 for all values of its free constants, by construction: positive literals,
    exp/logistic of anything, positive cut variables, and sums, products, quotients and
    selects of those. A softmax denominator is such a sum; knowing it is not 0 keeps the
    IEEE class of every softmax output statically finite. Walks with z3's C API: this
    runs for every cut variable and every comparison with 0."""
    if not isinstance(v, z3.ArithRef):
        return False
    return _positive_ast(v.ctx.ref(), v.as_ast(), depth)


def _positive_ast(c: Any, a: Any, depth: int) -> bool:
    C = z3.z3core
    if C.Z3_get_ast_kind(c, a) == z3.Z3_NUMERAL_AST:
        return _numeral_positive(C.Z3_get_numeral_string(c, a))
    if depth == 0 or C.Z3_get_ast_kind(c, a) != z3.Z3_APP_AST:
        return False
    decl = C.Z3_get_app_decl(c, a)
    kind = C.Z3_get_decl_kind(c, decl)
    n = C.Z3_get_app_num_args(c, a)
    if kind == z3.Z3_OP_UNINTERPRETED:
        name = C.Z3_get_symbol_string(c, C.Z3_get_decl_name(c, decl))
        if n == 0:
            return name.startswith(POSITIVE_CUT_PREFIX + "!")
        if name in POSITIVE_OF_POSITIVE_UFS:  # as the own core's `fast._atom_sign`
            return _positive_ast(c, C.Z3_get_app_arg(c, a, 0), depth - 1)
        return name in POSITIVE_UFS
    if kind in _POSITIVE_OPS:
        return all(_positive_ast(c, C.Z3_get_app_arg(c, a, i), depth - 1) for i in range(n))
    if kind == z3.Z3_OP_ITE:
        return _positive_ast(c, C.Z3_get_app_arg(c, a, 1), depth - 1) and \
            _positive_ast(c, C.Z3_get_app_arg(c, a, 2), depth - 1)
    if kind == z3.Z3_OP_TO_REAL:
        return _positive_ast(c, C.Z3_get_app_arg(c, a, 0), depth - 1)
    return False


def _numeral_positive(text: str) -> bool:
    """A z3 numeral's text (`3`, `3/4`, `-2`, `0`, `2.5`) is > 0."""
    try:
        return Fraction(text) > 0
    except ValueError:
        return False


ZERO = z3.RealVal(0)


def sf_const(x: float) -> SF:
    if np.isnan(x):
        return SF(ZERO, NAN)
    if np.isinf(x):
        return SF(ZERO, POS if x > 0 else NEG)
    return SF(z3.RealVal(Fraction(float(x))), FIN)


def sf_select(c: Any, a: SF, b: SF) -> SF:
    if isinstance(c, bool):
        return a if c else b
    return SF(If(c, a.v, b.v), If(c, a.k, b.k))


def sf_neg(a: SF) -> SF:
    k = a.k if a.k in (FIN, NAN) else If(Eq(a.k, POS), NEG, If(Eq(a.k, NEG), POS, a.k))
    return SF(-a.v, k)


def sf_add(a: SF, b: SF) -> SF:
    if a.k == FIN and b.k == FIN:
        if _rational(a.v) == 0:
            return b
        if _rational(b.v) == 0:
            return a
        return SF(a.v + b.v, FIN)
    nan = Or(a.nan, b.nan, And(Eq(a.k, POS), Eq(b.k, NEG)), And(Eq(a.k, NEG), Eq(b.k, POS)))
    k = If(nan, NAN, If(Or(Eq(a.k, POS), Eq(b.k, POS)), POS, If(Or(Eq(a.k, NEG), Eq(b.k, NEG)), NEG, FIN)))
    return SF(a.v + b.v, k)


def sf_mul(a: SF, b: SF) -> SF:
    if a.k == FIN and b.k == FIN:
        ra, rb = _rational(a.v), _rational(b.v)
        if ra == 1 or rb == 0:
            return b
        if rb == 1 or ra == 0:
            return a
        return SF(a.v * b.v, FIN)
    nan = Or(a.nan, b.nan, And(a.inf, b.zero), And(b.inf, a.zero))
    k = If(nan, NAN, If(Or(a.inf, b.inf), If(Xor(a.negative, b.negative), NEG, POS), FIN))
    return SF(a.v * b.v, k)


def sf_div(a: SF, b: SF) -> SF:
    rb = _rational(b.v) if b.k == FIN else None
    if a.k == FIN and rb is not None and rb != 0:
        return SF(a.v / b.v, FIN)
    nan = Or(a.nan, b.nan, And(a.inf, b.inf), And(a.zero, b.zero))
    inf = Or(And(a.inf, Not(b.inf)), And(b.zero, a.fin, Not(a.zero)))
    k = If(nan, NAN, If(inf, If(Xor(a.negative, b.negative), NEG, POS), FIN))
    v = If(And(a.fin, b.inf), ZERO, a.v / b.v)
    return SF(v, k)


def _trunc_real(v: z3.ArithRef) -> z3.ArithRef:
    r = _rational(v)
    if r is not None:
        return z3.RealVal(int(r))  # int() truncates toward zero
    return z3.If(v >= 0, z3.ToReal(z3.ToInt(v)), -z3.ToReal(z3.ToInt(-v)))


def _floor_real(v: z3.ArithRef) -> z3.ArithRef:
    r = _rational(v)
    if r is not None:
        return z3.RealVal(r.__floor__())
    return z3.ToReal(z3.ToInt(v))


def sf_rem(a: SF, b: SF) -> SF:
    nan = Or(a.nan, b.nan, a.inf, b.zero)
    fin_v = a.v - b.v * _trunc_real(a.v / b.v)
    v = If(b.inf, a.v, fin_v)
    return SF(v, If(nan, NAN, If(b.inf, a.k, FIN)))


def ext_lt(a: SF, b: SF) -> Any:
    """a < b on the extended reals, assuming neither is NaN."""
    if a.k == FIN and b.k == FIN:
        return _cmp(a.v, "<", b.v)
    return Or(And(Eq(a.k, NEG), Not(Eq(b.k, NEG))), And(a.fin, Eq(b.k, POS)),
              And(a.fin, b.fin, _cmp(a.v, "<", b.v)))


def ext_eq(a: SF, b: SF) -> Any:
    if a.k == FIN and b.k == FIN:
        return _cmp(a.v, "==", b.v)
    return Or(And(a.fin, b.fin, _cmp(a.v, "==", b.v)), And(Eq(a.k, POS), Eq(b.k, POS)), And(Eq(a.k, NEG), Eq(b.k, NEG)))


def _cmp(x: z3.ArithRef, op: str, y: z3.ArithRef) -> Any:
    rx, ry = _rational(x), _rational(y)
    if rx is not None and ry is not None:
        return {"<": rx < ry, "==": rx == ry}[op]
    if op == "==" and x.eq(y):
        return True
    return x < y if op == "<" else x == y


def sf_compare(direction: str, a: SF, b: SF, total: bool) -> Any:
    if direction in ("GT", "GE"):
        return sf_compare("LT" if direction == "GT" else "LE", b, a, total)
    any_nan = Or(a.nan, b.nan)
    if total:
        # NaN sorts above +inf and equals itself.
        lt = If(any_nan, And(b.nan, Not(a.nan)), ext_lt(a, b))
        eq = If(any_nan, And(a.nan, b.nan), ext_eq(a, b))
    else:
        lt = And(Not(any_nan), ext_lt(a, b))
        eq = And(Not(any_nan), ext_eq(a, b))
    if direction == "LT":
        return lt
    if direction == "LE":
        return Or(lt, eq)
    if direction == "EQ":
        return eq
    if direction == "NE":
        return Not(eq)
    raise ValueError(direction)


def _order(a: SF, b: SF) -> tuple[SF, SF]:
    """A canonical operand order for commutative ops, so that max(a, b) and max(b, a) build
    the identical term (z3 terms are hash-consed; ids are stable within a context)."""
    ka = a.k if isinstance(a.k, int) else a.k.get_id()
    kb = b.k if isinstance(b.k, int) else b.k.get_id()
    return (a, b) if (a.v.get_id(), ka) <= (b.v.get_id(), kb) else (b, a)


def sf_max(a: SF, b: SF, is_max: bool) -> SF:
    a, b = _order(a, b)
    a_wins = Not(ext_lt(a, b)) if is_max else Not(ext_lt(b, a))
    pick = sf_select(a_wins, a, b)
    nan = Or(a.nan, b.nan)
    return sf_select(nan, SF(ZERO, NAN), pick)


def sf_equal(a: SF, b: SF) -> Any:
    """Same IEEE value: both NaN, same infinity, or equal finite reals."""
    if a.k == FIN and b.k == FIN:
        return _cmp(a.v, "==", b.v)
    return Or(And(a.fin, b.fin, _cmp(a.v, "==", b.v)), And(Not(a.fin), Eq(a.k, b.k)))


# Domain of each uninterpreted function on finite reals: the IEEE class of the result.
def _domain(name: str, vs: Sequence[z3.ArithRef], fresh_kind: Any) -> Any:
    v = vs[0]
    if name in ("exponential", "exponential_minus_one", "tanh", "logistic", "sine", "cosine", "erf", "cbrt", "atan2") \
            or name in FINITE_UFS:
        return FIN
    if name == "log":
        return If(_fold_cmp(v, ">", 0), FIN, If(_fold_cmp(v, "==", 0), NEG, NAN))
    if name == "log_plus_one":
        return If(_fold_cmp(v, ">", -1), FIN, If(_fold_cmp(v, "==", -1), NEG, NAN))
    if name == "sqrt":
        return If(_fold_cmp(v, ">=", 0), FIN, NAN)
    if name == "rsqrt":
        return If(_fold_cmp(v, ">", 0), FIN, If(_fold_cmp(v, "==", 0), POS, NAN))
    if name == "power":
        return If(_fold_cmp(v, ">", 0), FIN, fresh_kind)
    return fresh_kind  # tan: poles on the reals; leave the class open


# ---------------------------------------------------------------------------


def _int_trunc_div(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            return -1
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b > 0) else -q
    a, b = lift_int(a), lift_int(b)
    # SMT-LIB div is Euclidean; truncation toward zero from it, and XLA's x / 0 == -1.
    q = z3.If(a >= 0, a / b, -((-a) / b))
    return z3.If(b == 0, z3.IntVal(-1), q)


def _int_rem(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return a if b == 0 else a - b * _int_trunc_div(a, b)
    a, b = lift_int(a), lift_int(b)
    return z3.If(b == 0, a, a - b * _int_trunc_div(a, b))


_Z3_INTERVAL_DEPTH = 64  # deeper integer terms are taken as unbounded (a wrap, not a wrong range)


def _z3_interval(e: Any, bounds: dict[int, tuple[int, int]], memo: dict[int, tuple[Any, tuple[float, float]]],
                 depth: int = 0) -> tuple[float, float]:
    """Bounds of a z3 integer term from the bounds of its free constants (their types).
    The memo holds the term with its bounds: an AST id is reused once its AST is freed."""
    if isinstance(e, int):
        return e, e
    key = e.get_id()
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    out: tuple[float, float] = (-math.inf, math.inf)
    if z3.is_int_value(e):
        v = e.as_long()
        out = (v, v)
    elif z3.is_const(e):
        out = bounds.get(key, out)
    elif depth < _Z3_INTERVAL_DEPTH:
        kids = [_z3_interval(c, bounds, memo, depth + 1) for c in e.children()]
        k = e.decl().kind()
        if k == z3.Z3_OP_ADD:
            out = (sum(lo for lo, _ in kids), sum(hi for _, hi in kids))
        elif k == z3.Z3_OP_SUB:
            out = (kids[0][0] - sum(hi for _, hi in kids[1:]), kids[0][1] - sum(lo for lo, _ in kids[1:]))
        elif k == z3.Z3_OP_UMINUS:
            out = (-kids[0][1], -kids[0][0])
        elif k == z3.Z3_OP_MUL:
            acc: tuple[float, float] = (1, 1)
            for lo, hi in kids:
                ends = [0 if x == 0 or y == 0 else x * y for x in acc for y in (lo, hi)]
                acc = (min(ends), max(ends))
            out = acc
        elif k == z3.Z3_OP_ITE:
            out = (min(kids[1][0], kids[2][0]), max(kids[1][1], kids[2][1]))
        elif k == z3.Z3_OP_MOD and kids[1][0] == kids[1][1] and kids[1][0] > 0:
            out = (0, kids[1][0] - 1)
    memo[key] = (e, out)
    return out


def _int_binop(a: Any, b: Any, op: str) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op == "*" and ((isinstance(a, int) and a == 0) or (isinstance(b, int) and b == 0)):
        return 0
    if op == "+" and isinstance(b, int) and b == 0:
        return a
    if op in "+-" and isinstance(a, int) and a == 0:
        return b if op == "+" else -b
    a, b = lift_int(a), lift_int(b)
    return {"+": a + b, "-": a - b, "*": a * b}[op]


def _int_cmp(direction: str, a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[direction]
    a, b = lift_int(a), lift_int(b)
    return {"EQ": a == b, "NE": a != b, "LT": a < b, "LE": a <= b, "GT": a > b, "GE": a >= b}[direction]


def _bool_cmp(direction: str, a: Any, b: Any) -> Any:
    ia = If(a, 1, 0) if not isinstance(a, bool) else int(a)
    ib = If(b, 1, 0) if not isinstance(b, bool) else int(b)
    return _int_cmp(direction, ia, ib)






@dataclass
class SymbolicAlgebra:
    """z3 evaluation. One instance serves both programs of a query so that they share the
    uninterpreted function symbols."""

    symbolic: bool = True
    approximations: set[str] = field(default_factory=set)
    _funcs: dict[str, z3.FuncDeclRef] = field(default_factory=dict)
    _canon: dict[int, Any] = field(default_factory=dict)
    # No blow-up limit: with cut points the terms are one op deep, and a limited expansion
    # leaves equal polynomials in different forms.
    _simplify: Simplifier = field(default_factory=lambda: Simplifier(1_000_000))
    _keep: list[Any] = field(default_factory=list)
    element_ops: int = 0  # scalar operations performed (see `_vec`, `dot`, `reduce_sum`)
    _int_bounds: dict[int, tuple[int, int]] = field(default_factory=dict)  # input AST id -> its type's range
    _int_memo: dict[int, tuple[Any, tuple[float, float]]] = field(default_factory=dict)

    def _vec(self, fn: Any, *arrays: np.ndarray) -> np.ndarray:
        """fn elementwise, counted: one element op per result element."""
        out = vec(fn, *arrays)
        self.element_ops += out.size
        return out

    # -- construction -------------------------------------------------------
    def constant(self, values: np.ndarray, kind: Kind) -> np.ndarray:
        values = np.asarray(values)
        if kind is Kind.FLOAT:
            return vec(lambda x: sf_const(float(x)), values.astype(np.float64))
        if kind is Kind.BOOL:
            return vec(lambda x: bool(x), values)
        return vec(lambda x: int(x), values)

    def full(self, shape: Sequence[int], value: Any, kind: Kind) -> np.ndarray:
        out = np.empty(tuple(shape), dtype=object)
        item = sf_const(float(value)) if kind is Kind.FLOAT else (bool(value) if kind is Kind.BOOL else int(value))
        out.fill(item)
        return out

    def inputs(self, name: str, shape: tuple[int, ...], kind: Kind,
               unsigned: bool = False, width: int = 64, ieee: bool = False,
               bounds: tuple[int, int] | tuple[float, float] | None = None,
               sign: int = 0) -> tuple[np.ndarray, list[Any]]:
        """Fresh symbols for a program input; returns the array and its domain constraints
        (an integer input lies in its type's range; a float input is finite unless `ieee`,
        where its IEEE class is free too; a float input with `bounds`, its closed --assume
        range assume.FloatRange, is a finite real in it, `ieee` or not)."""
        out = np.empty(shape, dtype=object)
        constraints: list[Any] = []
        lo, hi = bounds if bounds is not None else type_range(width, not unsigned)  # --assume
        for idx in np.ndindex(*shape):
            label = f"{name}[{','.join(map(str, idx))}]" if shape else name
            if kind is Kind.FLOAT and bounds is not None:
                v = z3.Real(label)
                # Exact ends: the float the user wrote, as the random runs and `within` read it.
                constraints += [v >= z3.RealVal(Fraction(lo))] if math.isfinite(lo) and not (sign and lo <= 0) else []
                constraints += [v <= z3.RealVal(Fraction(hi))] if math.isfinite(hi) else []
                if sign:
                    constraints.append(v > 0 if sign == 2 else v >= 0)
                out[idx] = SF(v, FIN)
            elif kind is Kind.FLOAT:
                if ieee:
                    k = z3.Int(f"{label}!class")
                    constraints += [k >= FIN, k <= NAN]
                    out[idx] = SF(z3.Real(label), k)
                else:
                    v = z3.Real(label)
                    if sign:  # known > 0 (2) or >= 0 (1): a stage's cut value, or --assume NAME=0:inf
                        constraints.append(v > 0 if sign == 2 else v >= 0)
                    out[idx] = SF(v, FIN)
            elif kind is Kind.BOOL:
                # Bounds of one value (a stage input the reference decides): that constant.
                out[idx] = bool(bounds[0]) if bounds is not None and bounds[0] == bounds[1] else z3.Bool(label)
            else:
                x = out[idx] = z3.Int(label)
                constraints += [x >= lo, x <= hi]
                self._int_bounds[x.get_id()] = (int(lo), int(hi))  # an integer input's: integers
                self._keep.append(x)  # the bounds are keyed by the AST id: keep it alive
        return out, constraints

    def wrap(self, a: np.ndarray, t: TensorType) -> np.ndarray:
        """Integer results reduced into the range of their type, as XLA computes them: the
        value itself where its range (from the inputs' types) shows it stays in the type,
        else lo + (x - lo) mod 2**width."""
        lo, hi = int_range(t)
        period = 1 << t.bit_width

        def w(x: Any) -> Any:
            if isinstance(x, int):
                return wrap_int(x, t.bit_width, not t.is_unsigned)
            low, high = _z3_interval(x, self._int_bounds, self._int_memo)
            if lo <= low and high <= hi:
                return x
            return lo + (x - lo) % period
        return vec(w, a)

    # -- arithmetic ---------------------------------------------------------
    def add(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_add, a, b)
        if kind is Kind.BOOL:
            return self._vec(Or, a, b)
        return self._vec(lambda x, y: _int_binop(x, y, "+"), a, b)

    def sub(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(lambda x, y: sf_add(x, sf_neg(y)), a, b)
        return self._vec(lambda x, y: _int_binop(x, y, "-"), a, b)

    def mul(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_mul, a, b)
        if kind is Kind.BOOL:
            return self._vec(And, a, b)
        return self._vec(lambda x, y: _int_binop(x, y, "*"), a, b)

    def div(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_div, a, b)
        return self._vec(_int_trunc_div, a, b)

    def rem(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_rem, a, b)
        return self._vec(_int_rem, a, b)

    def neg(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_neg, a)
        return self._vec(lambda x: -x, a)

    def abs(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(lambda x: sf_select(x.negative, sf_neg(x), x), a)
        return self._vec(lambda x: abs(x) if isinstance(x, int) else z3.If(x < 0, -x, x), a)

    def sign(self, a: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            def f(x: SF) -> SF:
                s = If(x.nan, NAN, FIN)
                v = If(x.negative, z3.RealVal(-1), If(x.zero, ZERO, z3.RealVal(1)))
                return SF(_real(v), s)
            return self._vec(f, a)
        return self._vec(lambda x: (x > 0) - (x < 0) if isinstance(x, int) else z3.If(x > 0, 1, z3.If(x < 0, -1, 0)), a)

    def max(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return self._minmax(a, b, kind, True)

    def min(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        return self._minmax(a, b, kind, False)

    def _minmax(self, a: np.ndarray, b: np.ndarray, kind: Kind, is_max: bool) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(lambda x, y: sf_max(x, y, is_max), a, b)
        if kind is Kind.BOOL:
            return self._vec(Or if is_max else And, a, b)
        def pick(x: Any, y: Any) -> Any:
            if not isinstance(x, int) and not isinstance(y, int) and x.get_id() > y.get_id():
                x, y = y, x
            return If(_int_cmp("GE" if is_max else "LE", x, y), x, y)
        return self._vec(pick, a, b)

    def _rounding(self, a: np.ndarray, fn: Callable[[Any], Any]) -> np.ndarray:
        return self._vec(lambda x: SF(fn(x.v), x.k) if x.k == FIN else SF(If(x.fin, fn(x.v), x.v), x.k), a)

    def floor(self, a: np.ndarray) -> np.ndarray:
        return self._rounding(a, _floor_real)

    def ceil(self, a: np.ndarray) -> np.ndarray:
        return self._rounding(a, lambda v: -_floor_real(-v))

    def round_even(self, a: np.ndarray) -> np.ndarray:
        def f(v: Any) -> Any:
            r = _rational(v)
            if r is not None:
                return z3.RealVal(round(r))  # Python rounds half to even
            fl = z3.ToInt(v)
            d = v - z3.ToReal(fl)
            half = z3.RealVal(Fraction(1, 2))
            up = z3.Or(d > half, z3.And(d == half, fl % 2 != 0))
            return z3.ToReal(z3.If(up, fl + 1, fl))
        return self._rounding(a, f)

    def round_afz(self, a: np.ndarray) -> np.ndarray:
        def f(v: Any) -> Any:
            return If(_fold_cmp(v, ">=", 0), _floor_real(v + Fraction(1, 2)), -_floor_real(-v + Fraction(1, 2)))
        return self._rounding(a, f)

    def is_finite(self, a: np.ndarray) -> np.ndarray:
        return self._vec(lambda x: x.fin, a)

    def compare(self, direction: str, a: np.ndarray, b: np.ndarray, kind: Kind, total_order: bool) -> np.ndarray:
        if kind is Kind.FLOAT:
            if total_order:
                return self._vec(lambda x, y: self._total_compare(direction, x, y), a, b)
            return self._vec(lambda x, y: sf_compare(direction, x, y, False), a, b)
        if kind is Kind.BOOL:
            return self._vec(lambda x, y: _bool_cmp(direction, x, y), a, b)
        return self._vec(lambda x, y: _int_cmp(direction, x, y), a, b)

    def select(self, pred: np.ndarray, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        if kind is Kind.FLOAT:
            return self._vec(sf_select, pred, a, b)
        return self._vec(If, pred, a, b)

    def logic(self, op: str, a: np.ndarray, b: np.ndarray | None, t: TensorType) -> np.ndarray:
        if t.is_bool:
            if op == "not":
                return self._vec(Not, a)
            assert b is not None, f"{op} takes two operands"
            return self._vec({"and": And, "or": Or, "xor": Xor}[op], a, b)
        width = t.bit_width
        signed = not t.is_unsigned

        def bv(x: Any) -> Any:
            return z3.Int2BV(lift_int(x), width)

        def back(x: Any) -> Any:
            return z3.BV2Int(x, is_signed=signed)

        def fold(fn_py: Callable[..., Any], fn_bv: Callable[..., Any]) -> Callable[..., Any]:
            def g(*xs: Any) -> Any:
                if all(isinstance(x, int) for x in xs):
                    r = fn_py(*xs) & ((1 << width) - 1)
                    return r - (1 << width) if signed and r >= 1 << (width - 1) else r
                return back(fn_bv(*[bv(x) for x in xs]))
            return g

        if op == "not":
            return self._vec(fold(lambda x: ~x, lambda x: ~x), a)
        assert b is not None, f"{op} takes two operands"
        py = {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}[op]
        return self._vec(fold(py, py), a, b)

    def convert(self, a: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray:
        if src.is_float:
            if dst.is_float:
                return a
            if dst.is_bool:
                return self._vec(lambda x: Or(Not(x.fin), Not(_cmp(x.v, "==", ZERO))), a)
            lo, hi = int_range(dst)

            def to_int(x: SF) -> Any:
                r = _rational(x.v) if x.k == FIN else None
                if r is not None:
                    return max(lo, min(hi, int(r)))
                t = z3.ToInt(x.v)
                # XLA truncates toward zero and saturates at the target type's range.
                trunc = z3.If(x.v >= 0, t, -z3.ToInt(-x.v))
                trunc = z3.If(trunc > hi, z3.IntVal(hi), z3.If(trunc < lo, z3.IntVal(lo), trunc))
                if x.k == FIN:
                    return trunc
                return If(Eq(x.k, NAN), 0, If(Eq(x.k, POS), hi, If(Eq(x.k, NEG), lo, trunc)))
            return self._vec(to_int, a)
        if src.is_bool:
            if dst.is_float:
                def as_real(x: Any) -> Any:
                    return _real(If(x, Fraction(1), Fraction(0))) if isinstance(x, bool) else \
                        z3.If(x, z3.RealVal(1), ZERO)
                return self._vec(lambda x: SF(as_real(x), FIN), a)
            if dst.is_bool:
                return a
            return self._vec(lambda x: If(x, 1, 0), a)
        # integer source
        if dst.is_float:
            return self._vec(lambda x: SF(z3.RealVal(x) if isinstance(x, int) else z3.ToReal(x), FIN), a)
        if dst.is_bool:
            return self._vec(lambda x: Not(Eq(x, 0)), a)
        return a

    def _total_compare(self, direction: str, x: SF, y: SF) -> Any:
        """TOTALORDER. Without NaNs it is the float order (signed zeros are not modelled).
        A NaN's place depends on its sign bit (-NaN below -inf, +NaN above +inf), and
        invalid operations produce either sign depending on the platform (x86: 0/0 is -NaN).
        The model does not track it, so with a NaN operand the outcome is an uninterpreted
        predicate of the operands: proofs that need it fail instead of guessing."""
        any_nan = Or(x.nan, y.nan)
        ordered = sf_compare(direction, x, y, False)
        if any_nan is False:
            return ordered
        self.approximations.add("totalorder-nan")
        R, I = z3.RealSort(), z3.IntSort()
        f = self._fn(f"totalorder_nan.{direction}", [I, R, I, R], z3.BoolSort())
        args = [lift_int(x.k), If(x.fin, x.v, ZERO), lift_int(y.k), If(y.fin, y.v, ZERO)]
        return If(any_nan, f(*args), ordered)

    # -- uninterpreted functions -------------------------------------------
    def _fn(self, name: str, domain: list[z3.SortRef], rng: z3.SortRef) -> z3.FuncDeclRef:
        if name not in self._funcs:
            self._funcs[name] = z3.Function(name, *domain, rng)
        return self._funcs[name]

    def uf(self, name: str, args: Sequence[np.ndarray]) -> np.ndarray:
        arity = UNINTERPRETED[name]
        self.approximations.add(name)
        R, I = z3.RealSort(), z3.IntSort()
        f = self._fn(name, [R] * arity, R)
        g = self._fn(f"{name}.special", [R] * arity + [I] * arity, R)
        kf = self._fn(f"{name}.class", [R] * arity + [I] * arity, I)
        dk = self._fn(f"{name}.domain_class", [R] * arity, I)

        def apply(*xs: SF) -> SF:
            vs = [x.v for x in xs]
            if all(x.k == FIN for x in xs):
                return SF(f(*vs), _domain(name, vs, dk(*vs)))
            all_fin = And(*[x.fin for x in xs])
            norm = [If(x.fin, x.v, ZERO) for x in xs]
            ks = [lift_int(x.k) for x in xs]
            v = If(all_fin, f(*norm), g(*norm, *ks))
            k = If(all_fin, _domain(name, norm, dk(*norm)), kf(*norm, *ks))
            return SF(v, k)

        return self._vec(apply, *args)

    # -- contractions -------------------------------------------------------
    def dot(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        # The products count themselves (through `mul`); the K - 1 sums per result here.
        self.element_ops += a.shape[0] * a.shape[1] * b.shape[1] * max(a.shape[2] - 1, 0)
        return dot_by_sums(a, b, kind, self.mul, self._sum)

    def reduce_sum(self, a: np.ndarray, axes: tuple[int, ...], kind: Kind) -> np.ndarray:
        out = reduce_by_sums(a, axes, kind, self._sum)
        self.element_ops += max(a.size - out.size, 0)  # n - 1 sums per result of n elements
        return out

    def _sum(self, items: list[Any], kind: Kind) -> Any:
        if kind is Kind.FLOAT:
            if all(x.k == FIN for x in items):
                vs = [x.v for x in items if _rational(x.v) != 0]
                return SF(z3.Sum(*vs) if len(vs) > 1 else (vs[0] if vs else ZERO), FIN)
            acc = items[0]
            for x in items[1:]:
                acc = sf_add(acc, x)
            return acc
        if kind is Kind.BOOL:
            return Or(*items)
        if all(isinstance(x, int) for x in items):
            return sum(items)
        return z3.Sum(*[lift_int(x) for x in items])

    def content_key(self, arr: Any) -> None:
        return None  # z3 terms: the reference core is kept as it was

    def element_keys(self, arr: Any) -> None:
        return None

    def canonical(self, arr: np.ndarray) -> np.ndarray:
        """Normal forms (sum of monomials, simplified conditions) for every element, so that
        values computed in different but algebraically equal ways become the identical term."""
        if arr.dtype != object:
            return arr
        out = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(*arr.shape):
            out[idx] = self._canon_elem(arr[idx])
        return out

    def _canon_elem(self, x: Any) -> Any:
        if isinstance(x, SF):
            v, k = self._canon_term(x.v), (x.k if isinstance(x.k, int) else self._canon_term(x.k))
            if isinstance(k, z3.ArithRef) and z3.is_int_value(k):
                k = k.as_long()
            return x if (v is x.v and k is x.k) else SF(v, k)
        if isinstance(x, (bool, int)):
            return x
        y = self._canon_term(x)
        if z3.is_int_value(y):
            return y.as_long()
        if z3.is_true(y) or z3.is_false(y):
            return bool(z3.is_true(y))
        return y

    def _canon_term(self, t: Any) -> Any:
        key = t.get_id()
        hit = self._canon.get(key)
        if hit is None:
            hit = self._simplify(t)
            self._canon[key] = hit
            self._canon[hit.get_id()] = hit
            self._keep.append(t)  # keeps the id from being reused
        return hit

    def index_value(self, x: Any) -> int | None:
        if isinstance(x, int):
            return x
        if z3.is_int_value(x):
            return x.as_long()
        return None

    def positions(self, s: Any, hi: int, clamp: bool) -> list[tuple[int, Any]]:
        v = self.index_value(s)
        if v is not None:
            return known_positions(v, hi, clamp)
        if hi < 0:
            return []
        if hi == 0:
            return [(0, True if clamp else s == 0)]
        if clamp:
            return [(0, s <= 0)] + [(p, s == p) for p in range(1, hi)] + [(hi, s >= hi)]
        return [(p, s == p) for p in range(hi + 1)]

    def choose(self, options: Sequence[tuple[Any, Any]], kind: Kind) -> Any:
        self.element_ops += len(options) - 1  # one select per option past the last (as `fast`)
        acc = options[-1][1]
        for cond, val in reversed(options[:-1]):
            acc = sf_select(cond, val, acc) if kind is Kind.FLOAT else If(cond, val, acc)
        return acc

    def all_of(self, conds: Sequence[Any]) -> Any:
        return And(*conds)

    def constant_value(self, x: Any, kind: Kind) -> float | int | bool | None:
        if kind is Kind.FLOAT:
            if x.k == FIN:
                r = _rational(x.v)
                return None if r is None else float(r)
            return {POS: float("inf"), NEG: float("-inf"), NAN: float("nan")}.get(x.k) if isinstance(x.k, int) else None
        if isinstance(x, (bool, int)):
            return x
        x = z3.simplify(x)
        if z3.is_true(x) or z3.is_false(x):
            return z3.is_true(x)
        if z3.is_int_value(x):
            return x.as_long()
        return None

    def scalar(self, x: Any) -> np.ndarray:
        return scalar_array(x)

    def element_equal(self, a: Any, b: Any, kind: Kind) -> Any:
        if kind is Kind.FLOAT:
            return sf_equal(a, b)
        return Eq(a, b)
