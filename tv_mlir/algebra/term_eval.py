"""Exact evaluation of `term.Term`s when every variable has a value (pure Python, no z3).

Reals are `Fraction`s, ints `int`s, Booleans `bool`s. Selects (ITE, BITE) evaluate only
the branch their condition takes, so an undefined value (1/0) in the other branch does not
matter, as it does not in SMT-LIB. Values the term language leaves open raise: INV of 0 and
IDIV/IMOD by 0 `ZeroDivisionError`, uninterpreted functions `EvalError` unless the caller
gives them an interpretation (`Funcs`). The walk is iterative: deep terms do not meet
Python's recursion limit."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from fractions import Fraction

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
    bitwise,
)

Value = Fraction | int | bool
# An interpretation of the uninterpreted functions: (term, its arguments' values) -> its
# value, of the term's sort. It must be a function of (name, argument sorts, sort, argument
# values), as z3's translation makes one function per (name, signature).
Funcs = Callable[[Term, tuple[Value, ...]], Value]


class EvalError(ValueError):
    """A term whose value the assignment does not fix (an uninterpreted function, a free
    variable the environment does not name)."""


def evaluate(t: Term | bool, env: Mapping[str, Fraction | int | bool], funcs: Funcs | None = None) -> Value:
    """The exact value of `t` with every variable named in `env` (and the uninterpreted
    functions interpreted by `funcs`, when given)."""
    if isinstance(t, bool):
        return t
    memo: dict[int, Value] = {}
    stack: list[Term] = [t]
    while stack:
        node = stack[-1]
        if node.id in memo:
            stack.pop()
            continue
        if node.kind in (ITE, BITE):
            c = node.args[0]
            if c.id not in memo:
                stack.append(c)
                continue
            branch = node.args[1] if memo[c.id] else node.args[2]
            if branch.id not in memo:
                stack.append(branch)
                continue
            memo[node.id] = memo[branch.id]
            stack.pop()
            continue
        missing = [a for a in node.args if a.id not in memo]
        if missing:
            stack.extend(missing)
            continue
        memo[node.id] = _value(node, memo, env, funcs)
        stack.pop()
    return memo[t.id]


def _value(t: Term, memo: dict[int, Value], env: Mapping[str, Fraction | int | bool],
           funcs: Funcs | None = None) -> Value:
    k = t.kind
    args = [memo[a.id] for a in t.args]
    if k == POLY:
        acc = Fraction(0)
        for mono, c in t.data:
            term = Fraction(c)
            for atom_id, e in mono:
                term *= Fraction(memo[atom_id]) ** e
            acc += term
        return _of_sort(t.sort, acc)
    if k in (VAR, BVAR):
        if t.data not in env:
            raise EvalError(f"no value for {t.data!r}")
        v = env[t.data]
        if t.sort == BOOL:
            if not isinstance(v, bool):
                raise EvalError(f"{t.data!r} is Boolean, given {v!r}")
            return v
        return _of_sort(t.sort, Fraction(v))
    if k == DEFER:  # a class built only when read: the value of the term it stands for
        return evaluate(t.store.expand(t), env, funcs)
    if k in (UF, BUF):
        if funcs is None:
            raise EvalError(f"uninterpreted function {t.data!r} has no value")
        return funcs(t, tuple(args))
    if k == INV:
        x = Fraction(args[0])
        if x == 0:
            raise ZeroDivisionError("1/0 is left open")
        return Fraction(1) / x
    if k == FLOOR:
        return Fraction(math.floor(Fraction(args[0])))
    if k == TO_REAL:
        return Fraction(args[0])
    if k == TO_INT:
        return math.floor(Fraction(args[0]))
    if k in (IDIV, IMOD):
        a, b = int(args[0]), int(args[1])
        if b == 0:
            raise ZeroDivisionError("integer division by 0 is left open")
        q = a // b if b > 0 else -(a // -b)  # Euclidean: 0 <= a - b*q < |b|
        return q if k == IDIV else a - b * q
    if k == PROD:
        acc = Fraction(1)
        for v in args:
            acc *= Fraction(v)
        return _of_sort(t.sort, acc)
    if k == BITS:
        op, width, signed = t.data
        return bitwise(op, width, signed, [int(v) for v in args])
    if k == AND:
        return all(args)
    if k == OR:
        return any(args)
    if k == NOT:
        return not args[0]
    if k == CMP:
        p = Fraction(args[0])
        if t.data == "lt0":
            return p < 0
        if t.data == "le0":
            return p <= 0
        if t.data == "eq0":
            return p == 0
        raise ValueError(f"unknown comparison {t.data!r}")
    raise ValueError(f"unknown term kind {k!r}")


def _of_sort(sort: str, v: Fraction) -> Value:
    if sort == REAL:
        return v
    if sort == INT:
        if v.denominator != 1:
            raise EvalError(f"int term with the non-integer value {v}")
        return v.numerator
    raise ValueError(f"not a numeric sort: {sort!r}")
