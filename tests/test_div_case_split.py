"""The general case split of a float division (algebra/fast.py `f_div`) makes each class
test once and skips the sign tests where no infinity can come out: the terms it returns
must be the very terms of the split as written (`_split_as_written` below, the code before
the change). The operands cover every class form: literal classes, symbolic classes (a
quotient by a divisor that may be 0, whose class is a term), known-positive and zero
divisors, under --inputs ieee (every input's class a term)."""
from __future__ import annotations

import itertools
from typing import Any

from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FF, FIN, NAN, NEG, POS, FastAlgebra
from tv_mlir.algebra.term import REAL


def _split_as_written(alg: FastAlgebra, a: FF, b: FF) -> FF:
    """The general path of `f_div` before each test was made once (the specification)."""
    s = alg.store
    nan = s.or_(alg.nan(a), alg.nan(b), s.and_(alg.inf(a), alg.inf(b)), s.and_(alg.zero(a), alg.zero(b)))
    inf = s.or_(s.and_(alg.inf(a), s.not_(alg.inf(b))),
                s.and_(alg.zero(b), alg.fin(a), s.not_(alg.zero(a))))
    sign = s.xor(alg.negative(a), alg.negative(b))
    k = alg._ite_cls(nan, NAN, alg._ite_cls(inf, alg._ite_cls(sign, NEG, POS), FIN))
    v = s.ite(s.and_(alg.fin(a), alg.inf(b)), s.real(0), s.div(a.v, b.v))
    return FF(v, k)


def _operands(alg: FastAlgebra) -> list[FF]:
    s = alg.store
    x, _ = alg.inputs("x", (1,), Kind.FLOAT)
    y, _ = alg.inputs("y", (1,), Kind.FLOAT, ieee=True)  # a class term of its own
    z, _ = alg.inputs("z", (1,), Kind.FLOAT, ieee=True)
    d, _ = alg.inputs("d", (1,), Kind.FLOAT)
    quotient = alg.div(x, d, Kind.FLOAT)[0]  # d may be 0: a class term built by the split
    assert not isinstance(quotient.k, int)
    positive = FF(s.fresh("cpos", REAL), y[0].k)  # a known-positive value of a symbolic class
    ops = [x[0], y[0], z[0], d[0], quotient, positive, alg.f_const(0.0), alg.f_const(-2.5),
           alg.f_const(float("inf")), alg.f_const(float("-inf")), alg.f_const(float("nan"))]
    ops.append(alg.f_add(y[0], z[0]))  # a sum of two symbolic classes (`sum_class`)
    return ops


def _same(p: Any, q: Any) -> bool:
    return p is q if not isinstance(p, (bool, int)) else type(p) is type(q) and p == q


def test_the_general_split_makes_the_split_as_written() -> None:
    alg = FastAlgebra(defer_classes=False)
    ops = _operands(alg)
    general = 0
    for a, b in itertools.product(ops, ops):
        if isinstance(a.k, int) and isinstance(b.k, int):
            continue  # the fast paths above the split: not this test's
        general += 1
        want = _split_as_written(alg, a, b)
        got = alg.f_div(a, b)
        assert _same(got.v, want.v) and _same(got.k, want.k), (a, b)
    assert general > 50


def _signs_always_skipped(alg: FastAlgebra, a: FF, b: FF) -> FF:
    """A loosened split: the sign tests skipped whether or not an infinity can come out."""
    s = alg.store
    ia, ib = alg.inf(a), alg.inf(b)
    za, zb = alg.zero(a), alg.zero(b)
    nan = s.or_(alg.nan(a), alg.nan(b), s.and_(ia, ib), s.and_(za, zb))
    k = alg._ite_cls(nan, NAN, FIN)
    return FF(s.ite(s.and_(alg.fin(a), ib), s.real(0), s.div(a.v, b.v)), k)


def test_a_loosened_split_fails_the_comparison() -> None:
    """The comparison above can fail: skipping the signs where an infinity can come out
    (a finite nonzero a over a b that may be 0) gives other class terms."""
    alg = FastAlgebra(defer_classes=False)
    ops = _operands(alg)
    differs = 0
    for a, b in itertools.product(ops, ops):
        if isinstance(a.k, int) and isinstance(b.k, int):
            continue
        want = _split_as_written(alg, a, b)
        got = _signs_always_skipped(alg, a, b)
        differs += not (_same(got.v, want.v) and _same(got.k, want.k))
    assert differs > 10
