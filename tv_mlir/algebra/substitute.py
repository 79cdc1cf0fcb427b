"""Integer input atoms pinned to values in own terms, and the terms simplified again: the
term layer of a proof by cases (`prove.cases`, docs/cases.md).

Substitution alone (`TermStore.substitute`) rebuilds through the constructors, so a mask
`pos < len` folds to a bool once `len` is a literal and the selects under it pick their
branch. What it does not redo is what the symbolic algebra decided while the programs ran
from the signs it knows by construction (`fast.known_sign`: a sum of exponentials is > 0):
the IEEE class of `num / den` stays `If(den == 0, NaN, ...)` where den is now a sum of
exps. So after the substitution every real comparison whose difference has a known sign
is replaced by its truth value, and the terms are rebuilt again, until none is left.

Why this is an identity of the terms as functions of their free constants: a comparison
`d < 0` (`<= 0`, `== 0`) of a real polynomial d is replaced by False (or True) only when
`known_sign` shows d > 0 (>= 0), or -d > 0 (>= 0), for every value of d's free constants,
the same fact the algebra decides the same comparison by while a program runs; the
rebuild is the store's own. So each result equals the term it came from wherever the
pinned atoms take their values."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from tv_mlir.algebra.fast import NONNEG_SIGN, POS_SIGN, known_sign
from tv_mlir.algebra.term import CMP, REAL, Bool, Term, TermStore

# Rounds of sign decisions after the substitution: each round rebuilds what the last one
# decided, which may leave new comparisons of a known sign (a class select folded, its sum
# of exps now bare). The terms are small where this is asked; past it the terms are left
# as they are (sound: only less simplified).
MAX_ROUNDS = 8

Value = Term | Bool


def pinned(store: TermStore, terms: Sequence[Value], values: Mapping[int, int]) -> list[Value]:
    """`terms` with each integer atom whose id `values` names replaced by that value, and
    real comparisons of a known sign decided (module docstring). One memo for all terms:
    a float element's value and class share most of their subterms."""
    mapping: dict[int, Term | bool] = {atom: store.int_(v) for atom, v in values.items()}
    memo: dict[int, object] = {}
    out = [store.substitute(t, mapping, memo) if isinstance(t, Term) else t for t in terms]
    for _ in range(MAX_ROUNDS):
        decided = _decided(store, [t for t in out if isinstance(t, Term)])
        if not decided:
            break
        memo = {}
        out = [store.substitute(t, dict(decided), memo) if isinstance(t, Term) else t for t in out]
    return out


def _decided(store: TermStore, roots: list[Term]) -> dict[int, Term | bool]:
    """The real comparisons under the roots that a known sign decides, id -> truth value."""
    out: dict[int, Term | bool] = {}
    for t in store.walk(roots):
        if t.kind == CMP and t.args[0].sort == REAL:
            truth = decide(store, t.data, t.args[0])
            if truth is not None:
                out[t.id] = truth
    return out


def decide(store: TermStore, op: str, d: Term) -> bool | None:
    """The truth of `d op 0` (op "lt0", "le0" or "eq0") for every value of d's free
    constants, when `known_sign` of d or of -d shows it; else None."""
    sign = known_sign(d)
    if sign == POS_SIGN:  # d > 0
        return False
    if sign == NONNEG_SIGN and op == "lt0":  # d >= 0
        return False
    sign = known_sign(store.neg(d))
    if sign == POS_SIGN:  # d < 0
        return op != "eq0"
    if sign == NONNEG_SIGN and op == "le0":  # d <= 0
        return True
    return None
