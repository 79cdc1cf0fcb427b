"""The solver: the one place that creates z3 solvers. Per-output queries (in parallel worker
processes when --jobs > 1), batched local proofs for the sweep, single validity checks,
and reading values out of a model. Checks that need no solver live in `algebra.checks`."""
from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import z3


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
    model: Model | None = None  # only when solved in this process


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
        return Outcome(q.output, "sat", model=Model(s.model()))
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
# Small proofs for the sweep and the witness search


def valid(claim: Any, timeout_s: float) -> bool:
    """The claim holds for all values of its free constants (False: refuted or unknown)."""
    s = _solver(timeout_s)
    s.add(z3.Not(claim))
    return bool(s.check() == z3.unsat)


def satisfiable(formulas: Sequence[Any], timeout_s: float) -> bool | None:
    """Whether the formulas hold together for some values (None: the solver gave up)."""
    s = _solver(timeout_s)
    s.add(*formulas)
    r = s.check()
    return True if r == z3.sat else False if r == z3.unsat else None


def prove_batch(items: list[tuple[int, Any]], timeout_s: float) -> list[int]:
    """The indices whose equality (a formula per index) is valid: one query 'some element
    differs' for all of them; when sat, the model names elements that may differ (not
    proved), and the rest is asked again. Free constants (cut points, inputs) are
    universally quantified, a sound abstraction of the values they stand for."""
    proved: list[int] = []
    rest = items
    timed_out = False
    for _ in range(4):
        if not rest:
            break
        s = _solver(timeout_s)
        s.add(z3.Or(*[z3.Not(e) for _, e in rest]))
        r = s.check()
        if r == z3.unsat:
            proved += [i for i, _ in rest]
            return proved
        if r != z3.sat:
            timed_out = True
            break
        m = s.model()
        differ = {i for i, e in rest if z3.is_true(m.eval(z3.Not(e), model_completion=True))}
        if not differ:  # should not happen; do not loop on it
            break
        rest = [(i, e) for i, e in rest if i not in differ]
    if timed_out and len(rest) > 1:  # small elements may still go through alone
        for i, e in rest:
            if valid(e, timeout_s / len(rest)):
                proved.append(i)
    return proved


@dataclass
class Model:
    """A satisfying assignment, read term by term (unassigned constants take defaults)."""

    raw: Any  # z3 ModelRef

    def value(self, t: Any) -> Any:
        return self.raw.eval(t, model_completion=True)

    def holds(self, formula: Any) -> bool:
        return bool(z3.is_true(self.raw.eval(formula, model_completion=True)))
