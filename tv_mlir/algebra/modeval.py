"""A one-point refutation of the indicator-form check (`checks._own_indicator_zero`).

Why: that check reads every real select ITE(c, x, y) as i*x + (1 - i)*y and expands the
difference of two terms into a polynomial, which costs seconds when the difference is
not zero (the products of indicator sums blow up), and most differences it is given are
not zero (66 of 66 in the 1-layer flax train step, 66 s of its 130). Evaluating the
same difference at one point of a prime field costs one pass over the terms.

Why a non-zero value refutes it: the check succeeds when, after putting indicators in
(some levels deep), the difference is the zero polynomial over its atoms. The value
here is the value of that polynomial at one assignment of its atoms: polynomials are
evaluated as they are (a ring homomorphism from the rationals to the field, where no
denominator is a multiple of the prime), a select as i*x + (1 - i)*y with i the value of
its condition, and every other atom by a value that depends only on its kind, data and
its arguments' values (equal atoms after normalisation get equal values; reciprocals,
unexpanded products and integer-to-real conversions by their true values, so
simplifications the store makes on them keep the value). A zero polynomial is zero at
every assignment, so a non-zero value means the check would fail. Only where the store
simplifies Boolean structure after the indicators go in (a condition that folds to a
constant) can the value disagree with a check that would succeed; that loses a proof,
never makes one: this refutation only ever skips the check.

Conditions are valued in the field too: a comparison, Boolean variable or Boolean
function by a hash of its data and arguments' values; not, and, or and Boolean selects
as the polynomials of their indicators (1 - c, a*b, ...)."""
from __future__ import annotations

import hashlib
from fractions import Fraction

from tv_mlir.algebra.term import AND, BITE, INV, ITE, NOT, OR, POLY, PROD, TO_REAL, Term

PRIME = (1 << 61) - 1  # a Mersenne prime: values are Python ints below 2**61


class NoValue(Exception):
    """A coefficient's denominator is a multiple of the prime: no value at this point."""


def differs(a: Term, b: Term, salt: bytes = b"") -> bool:
    """True when a - b, with every real select as an indicator polynomial, is not zero at
    this module's point (so it is not the zero polynomial); False when it is zero there or
    has no value."""
    try:
        values = _values([a, b], salt)
    except NoValue:
        return False
    return values[a.id] != values[b.id]


def _values(roots: list[Term], salt: bytes) -> dict[int, int]:
    store = roots[0].store
    out: dict[int, int] = {}
    for t in store.walk(roots):
        out[t.id] = _value(t, out, salt)
    return out


def _value(t: Term, v: dict[int, int], salt: bytes) -> int:
    k = t.kind
    p = PRIME
    if k == POLY:
        total = 0
        for mono, c in t.data:
            term = _coeff(c)
            for atom, e in mono:
                term = term * pow(v[atom], e, p) % p
            total += term
        return total % p
    args = [v[a.id] for a in t.args]
    if k == ITE or k == BITE:
        c, x, y = args
        return (c * x + (1 - c) * y) % p
    if k == NOT:
        return (1 - args[0]) % p
    if k == AND or k == PROD:
        return _product(args)
    if k == OR:
        return (1 - _product([1 - x for x in args])) % p
    if k == TO_REAL:
        return args[0]
    if k == INV and args[0] != 0:
        return pow(args[0], -1, p)
    return _hash(salt, k, t.sort, repr(t.data), args)


def _product(xs: list[int]) -> int:
    acc = 1
    for x in xs:
        acc = acc * x % PRIME
    return acc


def _coeff(c: int | Fraction) -> int:
    if type(c) is int:
        return c % PRIME
    num, den = c.numerator, c.denominator
    if den % PRIME == 0:
        raise NoValue
    return num * pow(den, -1, PRIME) % PRIME


def _hash(salt: bytes, kind: str, sort: str, data: str, args: list[int]) -> int:
    h = hashlib.blake2b(salt + f"{kind}|{sort}|{data}|{args}".encode(), digest_size=8)
    return int.from_bytes(h.digest(), "little") % PRIME
