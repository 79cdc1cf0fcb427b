"""Lemmas that refute a spurious model of a solver query: the laws of the uninterpreted
functions that the term layer folds with, given to the solver only where a model breaks them.

Why: the term layer knows some values of the approximated functions exactly
(`fast.exact_value`: exp 0 = 1, log 1 = 0, sqrt 9/4 = 3/2, ...) and folds them while the
programs run. The solver's function symbols know only congruence (equal arguments, equal
results). When one program's argument folds to the literal (exp(m - m) is exp(0), which is
1) and the other's is a term equal to it only for a reason the solver must find (exp(v0 - m)
where v0 is the first value of a top-k and m its max), the solver may pick exponential(0) =
1/3 and report a difference neither program has. The sweep makes this likely: it merges the
other program's top-k value with the reference's max (equal numbers), so the other side
subtracts m from m while the reference subtracts m from v0.

Each lemma is a true fact of the real function the symbol stands for (a value at a point,
or its sign), so a query proved with lemmas is proved over the reals; a model that
satisfies every lemma it was checked against is reported as before (and replayed, as every
counterexample through an approximation is). Lemmas are ground instances, added lazily:
a query whose first model already keeps the laws costs one walk over its applications."""
from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import z3

from tv_mlir.algebra.base import POSITIVE_OF_POSITIVE_UFS, POSITIVE_UFS, UNINTERPRETED
from tv_mlir.algebra.fast import exact_value

REFINE = True  # the switch the tests flip
MAX_ROUNDS = 16  # re-asks of one query; each adds at least one lemma the last model broke
# The re-asks of one query end at MIN_S seconds after its first check began, or FACTOR times
# its first check if that is longer (within its timeout): the masked split softmax's lemmas
# only move its model until the solver times out, and a query with a model must not cost its
# whole timeout where it cost one check before. A model kept then is the first one.
MIN_S = 1.0
FACTOR = 2.0


def applications(formulas: Sequence[Any]) -> list[Any]:
    """The applications of the real-valued approximated functions in the formulas, each once."""
    seen: set[int] = set()
    out: list[Any] = []
    stack = list(formulas)
    while stack:
        e = stack.pop()
        key = e.get_id()
        if key in seen:
            continue
        seen.add(key)
        if not z3.is_app(e):
            continue
        d = e.decl()
        if (d.kind() == z3.Z3_OP_UNINTERPRETED and e.num_args() > 0 and d.name() in UNINTERPRETED
                and z3.is_real(e) and all(z3.is_real(a) for a in e.children())):
            out.append(e)
        stack.extend(e.children())
    return out


def _rational(v: Any) -> Fraction | None:
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    return None


def broken_laws(apps: Sequence[Any], model: Any) -> list[Any]:
    """Lemmas (z3 Booleans, true of the real functions) that `model` violates at the
    applications `apps`:

    - f(p) = v where the model puts an application's arguments at the point p and
      `exact_value` knows f there (the same table the term layer folds with); stated at the
      point itself, so congruence carries it to every application whose arguments equal p;
    - f(x) > 0 for the functions positive on every real (exp, logistic), and
      x > 0 -> f(x, ...) > 0 for those positive where their first argument is (sqrt, rsqrt,
      cbrt, power)."""
    lemmas: list[Any] = []
    done: set[int] = set()
    for app in apps:
        name = app.decl().name()
        args = [model.eval(a, model_completion=True) for a in app.children()]
        value = _rational(model.eval(app, model_completion=True))
        point = [_rational(a) for a in args]
        if all(p is not None for p in point):
            exact = exact_value(name, point)
            if exact is not None and value != exact:
                lemma = app.decl()(*[z3.RealVal(p) for p in point]) == z3.RealVal(exact)
                if lemma.get_id() not in done:
                    done.add(lemma.get_id())
                    lemmas.append(lemma)
                continue
        if value is None:
            continue
        if name in POSITIVE_UFS and value <= 0:
            lemmas.append(app > 0)
        elif name in POSITIVE_OF_POSITIVE_UFS and value <= 0 and point[0] is not None and point[0] > 0:
            lemmas.append(z3.Implies(app.arg(0) > 0, app > 0))
    return lemmas
