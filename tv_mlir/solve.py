"""Deciding output equalities with z3: a cheap syntactic pass, then one solver query per
output (in parallel worker processes when --jobs > 1)."""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

import z3


# z3's default som_blowup (10) stops expanding products early and then reports a zero
# polynomial as non-zero; the sizes we hand it are bounded by the cut points.
SOM_BLOWUP = 1_000_000


@dataclass
class Query:
    """'Some element differs' for one output: the solver looks for a model of `formula`."""

    output: int
    formula: Any  # z3 BoolRef
    constraints: list[Any] = field(default_factory=list)

    def smt2(self) -> str:
        s = z3.Solver()
        s.add(*self.constraints)
        s.add(self.formula)
        return s.to_smt2()


@dataclass
class Outcome:
    output: int
    status: str  # "unsat" (proved), "sat" (differs), "unknown"
    reason: str = ""
    model: Any = None  # z3 ModelRef, only when solved in this process


def trivially_equal(eq: Any, blowup: int | None = None) -> bool:
    """The cheap check before the solver: z3's simplifier closes the equality by itself."""
    if eq is True:
        return True
    if eq is False:
        return False
    return z3.is_true(z3.simplify(eq, som=True, som_blowup=blowup or SOM_BLOWUP, arith_lhs=True))


def difference_is_zero(a: Any, b: Any) -> bool:
    """Polynomial normal form of a - b is 0 (sum-of-monomials)."""
    d = z3.simplify(a - b, som=True, som_blowup=SOM_BLOWUP)
    return z3.is_rational_value(d) and d.numerator_as_long() == 0


def _solver(timeout_s: float) -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", max(1, int(timeout_s * 1000)))
    return s


def solve_local(q: Query, timeout_s: float) -> Outcome:
    s = _solver(timeout_s)
    s.add(*q.constraints)
    s.add(q.formula)
    r = s.check()
    if r == z3.unsat:
        return Outcome(q.output, "unsat")
    if r == z3.sat:
        return Outcome(q.output, "sat", model=s.model())
    return Outcome(q.output, "unknown", s.reason_unknown())


def _solve_text(args: tuple[int, str, float]) -> tuple[int, str, str]:
    output, text, timeout_s = args
    s = _solver(timeout_s)
    s.from_string(text)
    r = s.check()
    return output, str(r), s.reason_unknown() if r == z3.unknown else ""


def solve_all(queries: Sequence[Query], timeout_s: float, jobs: int) -> list[Outcome]:
    """Every query's status. With jobs > 1 the queries run in worker processes as SMT-LIB
    text; a query found sat there is solved again here to get a model we can evaluate."""
    if jobs <= 1 or len(queries) <= 1:
        return [solve_local(q, timeout_s) for q in queries]
    workers = min(jobs, len(queries), os.cpu_count() or 1)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(_solve_text, [(q.output, q.smt2(), timeout_s) for q in queries]))
    outcomes = []
    for q, (_, status, reason) in zip(queries, results):
        if status == "sat":
            outcomes.append(solve_local(q, timeout_s))
        else:
            outcomes.append(Outcome(q.output, status, reason))
    return outcomes


# ---------------------------------------------------------------------------
# Local proofs with shared subterms abstracted


def _is_leaf(t: Any) -> bool:
    return t.num_args() == 0


def abstract_common(formula_sides: tuple[list[Any], list[Any]], formula: Any) -> Any:
    """Replace the maximal subterms that occur on both sides by fresh constants.

    Sound: if the abstracted formula is valid for every value of the fresh constants, it is
    valid for the values the subterms take. It keeps a local rewrite (min(a, b) against
    -max(-a, -b)) a small query however large a and b are."""
    left, right = formula_sides

    def subterms(roots: list[Any]) -> set[int]:
        seen: set[int] = set()
        stack = [r for r in roots if z3.is_expr(r)]
        while stack:
            t = stack.pop()
            i = t.get_id()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(t.children())
        return seen

    common = subterms(left) & subterms(right)
    if not common:
        return formula
    cuts: dict[int, Any] = {}
    seen: set[int] = set()
    stack = [r for r in left + right if z3.is_expr(r)]
    while stack:
        t = stack.pop()
        i = t.get_id()
        if i in seen:
            continue
        seen.add(i)
        if i in common and not _is_leaf(t) and t.sort().kind() in (z3.Z3_REAL_SORT, z3.Z3_INT_SORT, z3.Z3_BOOL_SORT):
            cuts[i] = t
            continue
        stack.extend(t.children())
    if not cuts:
        return formula
    pairs = [(t, z3.FreshConst(t.sort(), "cut")) for t in cuts.values()]
    return z3.substitute(formula, *pairs)


def prove(formula_false_if_equal: Any, sides: tuple[list[Any], list[Any]], timeout_s: float,
          constraints: Sequence[Any] = ()) -> bool:
    """True when the 'differs' formula is unsatisfiable: first with common subterms
    abstracted, then (if that was too coarse) on the full terms."""
    for f in (abstract_common(sides, formula_false_if_equal), formula_false_if_equal):
        s = _solver(timeout_s)
        s.add(*constraints)
        s.add(f)
        if s.check() == z3.unsat:
            return True
        if f is formula_false_if_equal:
            break
    return False
