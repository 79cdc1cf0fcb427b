"""Regrouped sums: two finite floats are equal when their value terms, with every cut
variable that occurs alone in a monomial (degree 1, no other factor) replaced by its
polynomial definition, recursively, are the same polynomial.

Why: the other program's tensor-parallel all-reduce adds per-device partial sums, each cut
apart as its own variable, where the reference cut the same sum at other places (a sum of
two dots, each its own variable, against per-device sums of both dots' parts). One level of
definitions (`CutStore._sum_of_partials`) then meets no reference variable, and every such
element went to a local proof.

Argument (exact over the reals, DESIGN.md "What equivalent means"): a cut variable is its
definition, so replacing it by its definition is an identity; scaling a definition's
monomials by the coefficient and adding them into the others is what the polynomial normal
form does anyway (addition and multiplication by a rational are associative, commutative
and distributive over the reals; coefficients are exact ints and Fractions). So each side's
expansion is a polynomial equal to its value term, and two equal polynomials (the same
monomials with the same exact coefficients) are equal for every value of their atoms.
Only the value part of a float is compared, so both floats must be of the statically
finite class: the value of a float that may be an infinity or NaN says nothing about it
(an inf summand makes the sum's class input-dependent or known non-finite, and such pairs
are left to the local proofs, which compare classes as `fast.sum_class` builds them).
Monomials with products, selects and functions stay atoms: they are compared as they are.
A miss costs only a local proof."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tv_mlir.algebra import terms as T
from tv_mlir.algebra.term import POLY, REAL, Coeff, Monomial, Term
from tv_mlir.prove.cuts import CutStore

REGROUP = True  # the switch the tests flip
REGROUP_MONOMIALS = 4096  # an expansion larger than this is not compared (left to local proofs)
REGROUP_DEPTH = 200  # nested definitions put in, at most (a recursion bound)

Poly = dict[Monomial, Coeff]


@dataclass
class Regrouper:
    """Compares elements by their linear expansions through cut definitions (see the
    module docstring); expansions are kept by term id for the whole run: the reference's
    sums are met by many elements (every device's copy of an all-reduce)."""

    store: CutStore
    tried: int = 0
    closed: int = 0
    _expanded: dict[int, Poly | None] = field(default_factory=dict)

    def equal(self, a: Any, b: Any) -> bool:
        """Whether a == b by the rule; False says nothing."""
        if not (T.finite_float(a) and T.finite_float(b)):
            return False
        va, vb = a.v, b.v
        if type(va) is not Term or type(vb) is not Term or va.sort != REAL or vb.sort != REAL:
            return False
        self.tried += 1
        ea = self._expand(va, 0)
        if ea is None:
            return False
        eb = self._expand(vb, 0)
        if eb is None or ea != eb:
            return False
        self.closed += 1
        return True

    def _expand(self, t: Term, depth: int) -> Poly | None:
        """t's polynomial with every lone cut variable of a real polynomial definition put
        in, recursively; None when not a polynomial, too deep or too large."""
        if t.kind != POLY:
            return None
        if t.id in self._expanded:
            return self._expanded[t.id]
        if depth > REGROUP_DEPTH:
            return None
        cuts = self.store.cuts_by_id
        acc: Poly = {}
        for m, c in t.data:
            cut = cuts.get(m[0][0]) if len(m) == 1 and m[0][1] == 1 else None
            d = None if cut is None else cut.term
            if d is None or type(d) is not Term or d.kind != POLY or d.sort != REAL:
                acc[m] = acc.get(m, 0) + c  # a product, an input, a select: an atom as it is
                continue
            sub = self._expand(d, depth + 1)
            if sub is None:
                return self._give_up(t)
            for dm, dc in sub.items():
                acc[dm] = acc.get(dm, 0) + c * dc
            if len(acc) > REGROUP_MONOMIALS:
                return self._give_up(t)
        out = {m: c for m, c in acc.items() if c}
        self._expanded[t.id] = out
        return out

    def _give_up(self, t: Term) -> Poly | None:
        self._expanded[t.id] = None
        return None
