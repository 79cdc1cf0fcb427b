"""Translation of `term.Term`s to z3 expressions (issue 11): once per query, with a cache.

Every kind is translated by its meaning in `term`: a polynomial as the sum of its
coefficients times products of atom powers, INV(x) as z3's 1/x (its value at x == 0 is
unspecified in SMT-LIB, as ours is), FLOOR as ToReal(ToInt(x)), IDIV/IMOD as SMT-LIB's
Euclidean div/mod, BITS through bit-vectors of the op's width. The walk is iterative
(`TermStore.walk`, children first), so deep terms do not meet Python's recursion limit."""
from __future__ import annotations

from fractions import Fraction
from typing import Any

import z3

from tv_mlir.algebra.term import (
    AND,
    BITE,
    BITS,
    BOOL,
    BUF,
    BVAR,
    CMP,
    DEFER,
    FLOOR,
    IDIV,
    IMOD,
    INT,
    INV,
    ITE,
    NOT,
    OR,
    POLY,
    PROD,
    REAL,
    TO_INT,
    TO_REAL,
    UF,
    VAR,
    Term,
    TermStore,
)


class Z3Translator:
    """Translates the terms of one `TermStore`; the cache maps term ids to z3 expressions,
    so a term shared by many queries is translated once."""

    def __init__(self, store: TermStore) -> None:
        self.store = store
        self.cache: dict[int, Any] = {}
        self._funcs: dict[tuple[str, tuple[str, ...], str], Any] = {}
        # A monomial's product (its atoms are ids of this store: their sort is fixed).
        self._monos: dict[Any, Any] = {}
        self._consts: dict[tuple[str, Fraction | int], Any] = {}

    # -- sorts and constants ---------------------------------------------------
    @staticmethod
    def sort(sort: str) -> Any:
        if sort == REAL:
            return z3.RealSort()
        if sort == INT:
            return z3.IntSort()
        if sort == BOOL:
            return z3.BoolSort()
        raise ValueError(f"unknown sort {sort!r}")

    @staticmethod
    def _const(sort: str, c: Fraction | int) -> Any:
        c = Fraction(c)
        if sort == INT:
            if c.denominator != 1:
                raise ValueError(f"int polynomial with a non-integer coefficient {c}")
            return z3.IntVal(c.numerator)
        return z3.RealVal(c)

    def _coefficient(self, sort: str, c: Fraction | int) -> Any:
        """`_const`, once per value: z3.RealVal goes through the number's text."""
        key = (sort, c)
        z = self._consts.get(key)
        if z is None:
            z = self._consts[key] = self._const(sort, c)
        return z

    def function(self, name: str, arg_sorts: tuple[str, ...], sort: str) -> Any:
        """The z3 function of an uninterpreted name, made once per (name, signature)."""
        key = (name, arg_sorts, sort)
        f = self._funcs.get(key)
        if f is None:
            f = z3.Function(name, *[self.sort(s) for s in arg_sorts], self.sort(sort))
            self._funcs[key] = f
        return f

    # -- translation -------------------------------------------------------------
    def to_z3(self, t: Term | bool) -> Any:
        if isinstance(t, bool):
            return z3.BoolVal(t)
        cache = self.cache
        if t.id not in cache:
            for node in self.store.walk([t]):
                if node.id not in cache:
                    cache[node.id] = self._node(node)
        return cache[t.id]

    def _node(self, t: Term) -> Any:
        k = t.kind
        args = [self.cache[a.id] for a in t.args]
        if k == POLY:
            return self._poly(t)
        if k == VAR:
            return z3.Real(t.data) if t.sort == REAL else z3.Int(t.data)
        if k == BVAR:
            return z3.Bool(t.data)
        if k in (ITE, BITE):
            return z3.If(args[0], args[1], args[2])
        if k in (UF, BUF):
            f = self.function(t.data, tuple(a.sort for a in t.args), t.sort)
            return f(*args)
        if k == DEFER:  # a class built only when read: the solver reads the term it stands for
            return self.to_z3(self.store.expand(t))
        if k == INV:
            return z3.RealVal(1) / args[0]
        if k == FLOOR:
            return z3.ToReal(z3.ToInt(args[0]))
        if k == TO_REAL:
            return z3.ToReal(args[0])
        if k == TO_INT:
            return z3.ToInt(args[0])
        if k == IDIV:
            return args[0] / args[1]
        if k == IMOD:
            return args[0] % args[1]
        if k == PROD:
            return _product(args, t.sort)
        if k == BITS:
            op, width, signed = t.data
            bvs = [z3.Int2BV(a, width) for a in args]
            if op == "not":
                r = ~bvs[0]
            elif op == "and":
                r = bvs[0] & bvs[1]
            elif op == "or":
                r = bvs[0] | bvs[1]
            elif op == "xor":
                r = bvs[0] ^ bvs[1]
            else:
                raise ValueError(f"unknown bitwise op {op!r}")
            return z3.BV2Int(r, is_signed=signed)
        if k == AND:
            return z3.And(*args)
        if k == OR:
            return z3.Or(*args)
        if k == NOT:
            return z3.Not(args[0])
        if k == CMP:
            p = args[0]
            zero = self._const(t.args[0].sort, Fraction(0))
            if t.data == "lt0":
                return p < zero
            if t.data == "le0":
                return p <= zero
            if t.data == "eq0":
                return p == zero
            raise ValueError(f"unknown comparison {t.data!r}")
        raise ValueError(f"unknown term kind {k!r}")

    def _poly(self, t: Term) -> Any:
        if any(a.sort != t.sort for a in t.args):  # not seen; z3.Sum/Product coerce the sorts
            return self._poly_coerced(t)
        # One sort throughout, so z3's C constructors take the terms as they are: the
        # Python API's Sum/Product re-derive and coerce every argument's sort, which was
        # most of a local proof's time on large sums (the FSDP step's clipped gradients).
        # A monomial seen in another polynomial (a sum and that sum plus a term) is reused.
        cref = z3.main_ctx().ref()
        monos = self._monos
        summands: list[Any] = []
        for mono, c in t.data:
            if not mono:
                summands.append(self._coefficient(t.sort, c))
                continue
            m = monos.get(mono)
            if m is None:
                factors = [self.cache[atom_id] for atom_id, e in mono for _ in range(e)]
                m = monos[mono] = factors[0] if len(factors) == 1 else _mk(z3.Z3_mk_mul, cref, factors)
            summands.append(m if c == 1 else _mk(z3.Z3_mk_mul, cref, [self._coefficient(t.sort, c), m]))
        if not summands:
            return self._const(t.sort, Fraction(0))
        if len(summands) == 1:
            return summands[0]
        return _mk(z3.Z3_mk_add, cref, summands)

    def _poly_coerced(self, t: Term) -> Any:
        summands: list[Any] = []
        for mono, c in t.data:
            factors: list[Any] = []
            for atom_id, e in mono:
                factors.extend([self.cache[atom_id]] * e)
            if not factors:
                summands.append(self._const(t.sort, c))
            elif c == 1:
                summands.append(_product(factors, t.sort))
            else:
                summands.append(_product([self._const(t.sort, c), *factors], t.sort))
        if not summands:
            return self._const(t.sort, Fraction(0))
        if len(summands) == 1:
            return summands[0]
        return z3.Sum(*summands)


def _mk(constructor: Any, cref: Any, args: list[Any]) -> Any:
    """z3's n-ary arithmetic constructor (Z3_mk_add / Z3_mk_mul) over arguments of one
    arithmetic sort, wrapped as the Python API wraps it (ArithRef keeps a reference)."""
    arr = (z3.Ast * len(args))(*[a.as_ast() for a in args])
    return z3.ArithRef(constructor(cref, len(args), arr), args[0].ctx)


def _product(factors: list[Any], sort: str) -> Any:
    if not factors:
        return z3.IntVal(1) if sort == INT else z3.RealVal(1)
    if len(factors) == 1:
        return factors[0]
    return z3.Product(*factors)
