"""Proof by cases over integer input elements of a small assumed range (docs/cases.md).

An output the solver leaves unknown (a timeout, or a model through an approximated op that
XLA does not reproduce) may still be equal for every value of a small-ranged integer
input: a softmax under a length mask `where(pos < len, s, -inf)` split into blocks needs
`exp(s - m_j) * exp(m_j - M) = exp(s - M)` only where the block max `m_j` is finite, and
which blocks those are is decided by `len` alone. With `len` a literal the masks fold, the
selects pick their branches, the classes fold by the signs the algebra knows
(`algebra.substitute`), and the exps combine: the elements become the same term.

Atoms are input *elements* (`lens[1]`, not `lens`), and each open element is asked over the
atoms its own terms contain, so two rows that each read their own length are two case
splits of 16 values, not one of 256. A group of elements whose atoms' ranges multiply past
`BUDGET` is not enumerated (it stays unknown). Inputs without an integer bound (no
`--assume`) have no atoms: nothing is enumerated for them."""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.algebra import periodic
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.base import Kind
from tv_mlir.algebra.checks import difference_is_zero
from tv_mlir.algebra.substitute import pinned
from tv_mlir.algebra.term import BVAR, VAR, Term, TermStore
from tv_mlir.assume import FloatRange, Resolved
from tv_mlir.prove.solve import Model, Query, solve_local

# Cases one group of elements may take: the product of its atoms' range sizes. A range one
# value larger is not enumerated. Each case costs a substitution (milliseconds on the
# reproducers) and, where that does not close it, a solver query.
BUDGET = 64
# Seconds of the solver per case (within the query's timeout, which all cases share): a case
# the substitution leaves open is rarely closed by the solver where the whole query was not
# (flash_decode_sp's lengths 5-16 time out either way), and an output that stays unknown
# should not cost the whole timeout again.
CASE_TIMEOUT_S = 5.0
# Integer inputs of a wide range read only through a residue are enumerated over the
# residues (`periodic_atoms`). A switch so the tests can show what it closes.
PERIODIC = True


@dataclass(frozen=True)
class Atom:
    """An integer input element with a small assumed range [lo, hi] (closed: `assume.resolve`
    gives an integer input's half-open --assume bound as its closed bounds)."""

    name: str  # "lens[1]", as a counterexample names it
    id: int  # the free constant's atom id (what terms mention)
    sym: Term  # the input element (its polynomial)
    lo: int
    hi: int
    at: tuple[int, tuple[int, ...]] = (0, ())  # (input, element index): where a run pins it

    @property
    def size(self) -> int:
        return self.hi - self.lo + 1


@dataclass
class Cases:
    """What the case split of one output's open elements found."""

    status: str  # "proved", "refuted" (a model of one case), "open" (not enumerated or not closed)
    detail: str = ""
    cases: int = 0  # cases proved
    model: Model | None = None  # for "refuted": a model with the atoms at the case's values
    pairs: list[int] = field(default_factory=list)  # for "refuted": the open pairs of that case


def small_atoms(inputs: Sequence[np.ndarray], names: Sequence[str], bounds: Sequence[Resolved],
                budget: int | None = None) -> dict[int, Atom]:
    """The integer input elements (own terms) whose closed bounds hold at most `budget`
    (default `BUDGET`) values, by atom id. A float range and an unbounded input give none."""
    budget = BUDGET if budget is None else budget
    out: dict[int, Atom] = {}
    for k, (arr, name, b) in enumerate(zip(inputs, names, bounds)):
        if b is None or isinstance(b, FloatRange):
            continue
        lo, hi = int(b[0]), int(b[1])
        if hi - lo + 1 > budget:
            continue
        for idx in np.ndindex(*arr.shape):
            sym = arr[idx]
            if not isinstance(sym, Term) or sym.sort != "int" or sym.leaf is None:
                continue  # a folded element (bounds of one value) or a Boolean: nothing to enumerate
            label = f"{name}[{','.join(map(str, idx))}]" if arr.shape else name
            out[sym.leaf.id] = Atom(label, sym.leaf.id, sym, lo, hi, (k, idx))
    return out


def periodic_atoms(inputs: Sequence[np.ndarray], names: Sequence[str], terms: Sequence[Any],
                   exclude: Mapping[int, Atom], budget: int | None = None) -> dict[int, Atom]:
    """Integer input elements that `terms` read only through their residue mod some M <=
    `budget` (`algebra.periodic`), by atom id, each as an Atom over M consecutive values of
    its range (from 0 where the range allows): every residue once, so a case split over
    them covers every value of the range (docs/cases.md, "Periodic atoms"). The range is
    the store's bounds of the input (its --assume bounds, else its type's); elements in
    `exclude` (the small atoms) and elements whose range is not larger than M are left out."""
    budget = BUDGET if budget is None else budget
    own = [t for t in terms if isinstance(t, Term)]
    if not own or not PERIODIC:
        return {}
    store: TermStore = own[0].store
    # The period argument reads the terms as functions of the inputs alone: a free constant
    # that is no input element (a cut point left unexpanded) could hide a bare read of x.
    leaves = {t.leaf.id for arr in inputs for x in np.asarray(arr, dtype=object).reshape(-1)
              for t in T.element_terms(x) if isinstance(t, Term) and t.leaf is not None}
    nodes = list(store.walk(own))
    if any(t.kind in (VAR, BVAR) and t.id not in leaves for t in nodes):
        return {}
    # One walk per candidate input below: only those some residue divides (not every token
    # of an embedding's ids, each a walk of the whole terms).
    candidates = periodic.dividends(nodes)
    out: dict[int, Atom] = {}
    for k, (arr, name) in enumerate(zip(inputs, names)):
        for idx in np.ndindex(*arr.shape):
            sym = arr[idx]
            if not isinstance(sym, Term) or sym.sort != "int" or sym.leaf is None or sym.leaf.id in exclude \
                    or sym.leaf.id not in candidates:
                continue
            rng = store.bounds.get(sym.leaf.id)
            if rng is None or not all(math.isfinite(b) for b in rng):
                continue
            lo, hi = int(rng[0]), int(rng[1])
            m = periodic.period(store, own, sym.leaf, budget)
            if m is None or m <= 1 or hi - lo + 1 <= m:
                continue  # not read through a residue, not read at all, or no fewer cases
            start = min(max(lo, 0), hi - m + 1)
            label = f"{name}[{','.join(map(str, idx))}]" if arr.shape else name
            out[sym.leaf.id] = Atom(f"{label} (mod {m})", sym.leaf.id, sym, start, start + m - 1, (k, idx))
    return out


def atoms_in(terms: Sequence[Any], atoms: Mapping[int, Atom]) -> tuple[Atom, ...]:
    """The atoms the terms contain, in id order."""
    own = [t for t in terms if isinstance(t, Term)]
    if not own or not atoms:
        return ()
    found = {t.id for t in own[0].store.walk(own) if t.kind == VAR and t.id in atoms}
    return tuple(atoms[i] for i in sorted(found))


def assignments(atoms: Sequence[Atom]) -> Iterator[tuple[int, ...]]:
    """Every tuple of values of the atoms, each over its whole closed range lo..hi."""
    return itertools.product(*(range(a.lo, a.hi + 1) for a in atoms))


def prove_by_cases(pairs: Sequence[tuple[Any, Any, Kind]], alg: Any, atoms: Mapping[int, Atom],
                   constraints: Sequence[Any], timeout_s: float, refine: bool = True,
                   budget: int | None = None) -> Cases:
    """Whether the element pairs (fully expanded: terms over the inputs) are equal for every
    value of the atoms they contain, case by case. Pairs are grouped by their atoms; a
    group past `budget` cases, or a pair with no atom, leaves the whole answer open. A case
    the substitution does not close goes to the solver with the inputs' `constraints` and
    the atoms pinned; its model, if any, is the answer ("refuted": a candidate to replay)."""
    budget = BUDGET if budget is None else budget
    groups: dict[tuple[Atom, ...], list[int]] = {}
    for j, (a, b, _) in enumerate(pairs):
        groups.setdefault(atoms_in(T.element_terms(a) + T.element_terms(b), atoms), []).append(j)
    if () in groups:
        return Cases("open", "no integer input of a small --assume range in some element's terms")
    for group in groups:
        n = math.prod(a.size for a in group)
        if n > budget:
            names = ", ".join(f"{a.name} in [{a.lo}, {a.hi + 1})" for a in group)
            return Cases("open", f"{n} cases over {names}: past the budget of {budget}")
    deadline = time.monotonic() + timeout_s
    proved = 0
    for group, members in groups.items():
        for values in assignments(group):
            left = min(CASE_TIMEOUT_S, deadline - time.monotonic())
            found = _case(pairs, members, alg, group, values, constraints, left, refine)
            if found is not None:
                found.cases = proved
                return found
            proved += 1
    return Cases("proved", f"{proved} cases over {', '.join(a.name for g in groups for a in g)}", proved)


def _case(pairs: Sequence[tuple[Any, Any, Kind]], members: list[int], alg: Any, group: tuple[Atom, ...],
          values: tuple[int, ...], constraints: Sequence[Any], timeout_s: float, refine: bool) -> Cases | None:
    """None when the group's pairs are equal with its atoms at `values`; else what is known."""
    store: TermStore = group[0].sym.store
    where = ", ".join(f"{a.name} = {v}" for a, v in zip(group, values))
    pins = {a.id: v for a, v in zip(group, values)}
    open_: list[tuple[int, Any]] = []
    for j in members:
        a, b, kind = pairs[j]
        ta, tb = T.element_terms(a), T.element_terms(b)
        new = pinned(store, ta + tb, pins)
        a2, b2 = T.with_terms(a, new[:len(ta)]), T.with_terms(b, new[len(ta):])
        if T.identical(a2, b2):
            continue
        if kind is Kind.FLOAT and T.finite_float(a2) and T.finite_float(b2) and \
                difference_is_zero(T.element_terms(a2)[0], T.element_terms(b2)[0]):
            continue
        eq = alg.element_equal(a2, b2, kind)
        if eq is True:
            continue
        open_.append((j, eq))
    if not open_:
        return None
    if timeout_s <= 0:
        return Cases("open", f"by cases: out of time at {where}")
    # The pins as constraints rather than substituted: the model then gives the atoms their
    # case's values, which the counterexample reads from the input symbols.
    pin_formulas = [T.formula(store.eq(a.sym, store.int_(v))) for a, v in zip(group, values)]
    q = Query(-1, T.any_of(T.negation(eq) for _, eq in open_), [*constraints, *pin_formulas], refine=refine)
    outcome = solve_local(q, timeout_s)
    if outcome.status == "unsat":
        return None
    if outcome.status == "sat" and outcome.model is not None:
        return Cases("refuted", f"by cases: the solver's model at {where}", model=outcome.model,
                     pairs=[j for j, _ in open_])
    return Cases("open", f"by cases: {where} not proved ({outcome.reason or 'unknown'})")
