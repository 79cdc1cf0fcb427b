"""A cheap refutation before a local solver call: the formula evaluated exactly at a few
assignments of its free constants.

Why: a pair whose fingerprints meet on every random run but which is not equal (device 0's
partial embedding gather against the whole gather: the runs' token ids all fell in device
0's rows) goes to the solver's batch, which then spends its timeout (0.5 s in the sweep, 2 s
for an output) failing to find the model, and asks each formula alone again. Evaluating
the formula at a handful of points finds most such models in about a millisecond.

Why it changes no proof: the local solver call (`solve.prove_batch`) asks whether the
formula is valid, every free constant (cut point, input) and uninterpreted function left
free, with no constraint beside the bounds the store knows of some constants (`known`:
the formula's hypotheses, `solve.assuming`). An assignment of the free constants inside
those bounds, with an interpretation of the uninterpreted functions, under which the
formula evaluates to False is a model of the hypotheses and the formula's negation, so the
solver can never prove that formula: leaving it out of the call only skips a call that
could not succeed for it. Bounded constants are drawn inside their bounds (and checked
there: a value outside would refute only the formula without its hypotheses). The evaluation
(`term_eval.evaluate`) is exact (Fractions, ints, Booleans) and follows SMT-LIB's meaning of
each kind; wherever SMT-LIB leaves a value open (1/0, integer division by 0) it raises,
and that assignment is not used. Functions are interpreted by a table per attempt, so
equal arguments give equal values (it is a function). A refutation sends a pair only to
"not proved", never to "proved": no choice of values here can make a wrong merge."""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tv_mlir.algebra import term_eval
from tv_mlir.algebra.term import BOOL, BVAR, INT, POLY, VAR, Term
from tv_mlir.prove.known import Bound

ATTEMPTS = 4  # assignments tried per formula
# Larger formulas go to the solver as they are: four exact evaluations of a formula cost
# ~10-20 us a node (Fractions), so this bounds a refutation that fails at ~0.1-0.2 s, a
# fraction of the sweep's 0.5 s solver timeout it tries to spare.
MAX_NODES = 5_000
REFUTE = True  # the switch the tests flip
NARROW_INTS = 16  # an int constant bounded this narrowly takes any value of its range
# Real values: small dyadic rationals, so that sums of a few cancel exactly now and then
# (which is how a valid identity evaluates) and products stay short.
_REAL_NUMERATORS = range(-24, 25)
_REAL_DENOMINATORS = (1, 2, 4)


@dataclass
class _Interpretation:
    """A random function per (name, argument sorts, sort): a table, so that equal
    arguments give equal values."""

    rng: random.Random
    table: dict[tuple[Any, ...], term_eval.Value] = field(default_factory=dict)

    def __call__(self, t: Term, args: tuple[term_eval.Value, ...]) -> term_eval.Value:
        key = (t.data, tuple(a.sort for a in t.args), t.sort, args)
        v = self.table.get(key)
        if v is None:
            v = self.table[key] = _random_value(self.rng, t.sort, [0, 1])
        return v


def _random_value(rng: random.Random, sort: str, ints: list[int]) -> term_eval.Value:
    if sort == BOOL:
        return rng.random() < 0.5
    if sort == INT:
        return rng.choice(ints)
    return Fraction(rng.choice(_REAL_NUMERATORS), rng.choice(_REAL_DENOMINATORS))


@dataclass(frozen=True)
class Refutation:
    """Where a formula is False: its free constants' values by name, and the values the
    uninterpreted functions took there ((name, argument sorts, sort, arguments) -> value)."""

    env: dict[str, term_eval.Value]
    funcs: dict[tuple[Any, ...], term_eval.Value]


def _bounded_value(rng: random.Random, b: Bound, ints: list[int]) -> term_eval.Value | None:
    """A value inside b: an int of a narrow range (an IEEE class, 0..3: the refuting class is
    often NaN, far from the formula's literals) or near the formula's literals (else one
    of its ends), reals drawn as usual and moved inside; None if none is found."""
    if b.sort == INT:
        if b.lo is not None and b.hi is not None and b.hi - b.lo <= NARROW_INTS:
            return rng.randint(int(b.lo), int(b.hi))
        inside = [x for x in ints if b.holds(x)] or [int(x) for x in (b.lo, b.hi) if x is not None and b.holds(x)]
        return rng.choice(inside) if inside else None
    x = _random_value(rng, b.sort, ints)
    assert isinstance(x, Fraction)
    if not b.holds(x):
        step = abs(x) or Fraction(1, 2)
        if b.lo is not None and b.hi is not None:
            x = b.lo + (b.hi - b.lo) * Fraction(rng.randrange(1, 5), 4)
        elif b.lo is not None:
            x = b.lo + step
        elif b.hi is not None:
            x = b.hi - step
    return x if b.holds(x) else None


def refuted(formula: Any, bounds: Sequence[Bound] = ()) -> bool:
    """True when the formula evaluates to False at some assignment tried, inside the bounds
    of its constants (module docstring): the solver cannot prove it under them. False says
    nothing."""
    return refutation(formula, bounds) is not None


def refutation(formula: Any, bounds: Sequence[Bound] = ()) -> Refutation | None:
    """An assignment inside `bounds` where the formula evaluates to False, if one of the
    few tried is."""
    if not REFUTE or type(formula) is not Term:
        return None
    store = formula.store
    leaves: dict[str, str] = {}
    literals: set[int] = {0}
    nodes = 0
    for t in store.walk([formula]):
        nodes += 1
        if nodes > MAX_NODES:
            return None
        if t.kind in (VAR, BVAR):
            if leaves.setdefault(t.data, t.sort) != t.sort:
                return None  # one name of two sorts: two constants to z3, one to the environment
        elif t.kind == POLY and t.sort == INT:
            literals.update(int(c) for m, c in t.data if not m)
    # Integers near the formula's literals: index tests compare a cut point with constants
    # (id - 16 == 0), which values drawn from a wide range would never meet.
    ints = sorted({x + d for x in literals for d in (-1, 0, 1)} | {-x for x in literals})
    rng = random.Random(formula.id)  # deterministic: a sweep's merges must not vary run to run
    bounded = {b.name: b for b in bounds if leaves.get(b.name) == b.sort}
    for _ in range(ATTEMPTS):
        env = {name: _random_value(rng, sort, ints) for name, sort in leaves.items()}
        inside = True
        for name, b in bounded.items():
            v = _bounded_value(rng, b, ints)
            if v is None:
                inside = False
                break
            env[name] = v
        if not inside:
            return None  # a bound no value drawn meets: nothing is refuted
        funcs = _Interpretation(rng)
        try:
            value = term_eval.evaluate(formula, env, funcs)
        except (term_eval.EvalError, ZeroDivisionError):
            continue  # a value SMT-LIB leaves open: this assignment says nothing
        if value is False:
            return Refutation(env, funcs.table)
    return None
