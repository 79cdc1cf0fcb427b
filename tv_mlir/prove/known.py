"""What the term store knows of its free constants, as hypotheses for local proofs.

Why: the own core builds terms in a normal form that already reads facts of free
constants: a cut point named `cpos!` stands for a term known positive (`fast.known_sign`),
an IEEE class cut point lies in 0..3 (`terms.record_range`: `TermStore.ranges`), an index
has known bounds (`TermStore.bounds`), a short real definition its real range
(`fast.REAL_RANGES`). A local proof's solver call left those constants free with nothing
known of them, so a pair whose terms agree only where the facts hold (the class of
`x * exp(s)` against the class of x, which agree when exp(s) > 0 and the class is one of
0..3) was never proved: CLIP's loss without an epsilon had 272 such class equalities
(docs/classes.md).

Why the hypotheses are sound: each is a fact about the value its constant stands for. A
cut point is its definition, and the facts are read off that definition when the point is
made (its sign, its range), from facts of older constants only, so by induction on the cut
order every cut point's value satisfies them. An input's facts are its domain (its type's
range, an `--assume`, a sign the caller gave it), the very constraints the verdict's own
queries carry. A formula valid wherever the facts hold therefore holds at the values the
constants take, which is all a local proof needs (`local`'s module docstring).

Facts are read once per constant: they are set when it is made or cut, before any term
mentions it (`instances`' signatures rely on the same)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from tv_mlir.algebra import fast
from tv_mlir.algebra.term import INT, REAL, VAR, Term

Number = int | Fraction


@dataclass(frozen=True)
class Bound:
    """lo <= var <= hi (lo < var when lo_open), None for no bound on that side."""

    var: Term  # the free constant as a polynomial `1 * atom` (what other terms mention)
    name: str  # its name (the environment's key in `falsify`)
    sort: str  # REAL or INT
    lo: Number | None
    hi: Number | None
    lo_open: bool = False

    def holds(self, value: Number) -> bool:
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return self.hi is None or value <= self.hi


@dataclass
class Known:
    """The facts of one store's free constants, read once per constant (module docstring)."""

    _memo: dict[int, Bound | None] = field(default_factory=dict)  # atom id -> its bound

    def bounds(self, formula: Term | bool) -> list[Bound]:
        """The bounds of the free constants `formula` mentions (none for a folded one)."""
        if not isinstance(formula, Term):
            return []
        out: list[Bound] = []
        memo = self._memo
        for t in formula.store.walk([formula]):
            if t.kind != VAR:
                continue
            if t.id in memo:
                b = memo[t.id]
            else:
                b = memo[t.id] = _bound(t)
            if b is not None:
                out.append(b)
        return out


def _bound(atom: Term) -> Bound | None:
    """The facts the store keeps of one free constant, as one interval (their
    intersection), None when nothing is known."""
    store = atom.store
    lo: Number | None = None
    hi: Number | None = None
    lo_open = False

    def meet(a: float | Number, b: float | Number) -> None:
        nonlocal lo, hi, lo_open
        if a != -math.inf and (lo is None or a >= lo):
            lo_open = lo_open and a == lo
            lo = Fraction(a) if atom.sort == REAL else int(a)
        if b != math.inf and (hi is None or b < hi):
            hi = Fraction(b) if atom.sort == REAL else int(b)

    if atom.sort == REAL:
        sign = fast.known_sign(store.var(str(atom.data), REAL))
        if sign:
            meet(0, math.inf)
            lo_open = lo_open or (sign == fast.POS_SIGN and lo == 0)
        real_range = (store.caches.get(fast.REAL_RANGES) or {}).get(atom.id)
        if real_range is not None:
            meet(*real_range)
    elif atom.sort == INT:
        for rng in (store.bounds.get(atom.id), store.ranges.get(atom.id)):
            if rng is not None:
                meet(*rng)
    else:
        return None
    if lo is None and hi is None:
        return None
    return Bound(store.var(str(atom.data), atom.sort), str(atom.data), atom.sort, lo, hi, lo_open)
