"""Equivalence sweeping: merge intermediate values of the two programs that are proven
equal, so that the final comparison is between identical terms wherever the programs agree.

Both programs first run numerically on a few random inputs. Every top-level value of the
reference is indexed by its numeric fingerprint; when a value of the other program has the
fingerprint of a reference value, their equality is proved locally (shared subterms
abstracted) and, once proved, the other program continues with the reference's term.
Merging proven-equal terms is sound; a fingerprint collision only costs a failed proof."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from .algebra import Kind, NumericAlgebra, SymbolicAlgebra
from .algebra.symbolic import SF, lift_any
from .interp import Interpreter
from .ir import Module, Op, TensorType

RUNS = 3  # random input sets
SWEEP_BLOWUP = 1000  # local proofs are small; a blow-up means the match is a coincidence


def random_inputs(types: Sequence[TensorType], seed: int = 0) -> list[list[np.ndarray]]:
    """Run 0: small integers (exact arithmetic, readable witnesses); run 1: real values."""
    rng = np.random.default_rng(seed)
    sets = []
    for run in range(RUNS):
        arrays = []
        for t in types:
            kind = Kind.of(t)
            if kind is Kind.BOOL:
                arrays.append(rng.integers(0, 2, size=t.shape).astype(np.bool_))
            elif kind is Kind.INT:
                lo = 0 if t.is_unsigned else -4
                arrays.append(rng.integers(lo, 5, size=t.shape).astype(np.int64))
            elif run == 0:
                arrays.append(rng.integers(-3, 4, size=t.shape).astype(np.float64))
            else:  # three decimals: exact enough to print, generic enough to avoid ties
                arrays.append(np.round(rng.normal(size=t.shape), 3))
        sets.append(arrays)
    return sets


@dataclass
class Trace:
    """Numeric values of every top-level value (by SSA name) and the outputs, per run."""

    values: dict[str, list[np.ndarray]] = field(default_factory=dict)
    outputs: list[list[np.ndarray]] = field(default_factory=list)


def numeric_trace(module: Module, input_sets: list[list[np.ndarray]], max_unroll: int) -> Trace:
    trace = Trace()

    def record(op: Op, results: list[np.ndarray]) -> None:
        for name, r in zip(op.results, results):
            trace.values.setdefault(name, []).append(r)

    for inputs in input_sets:
        trace.outputs.append(Interpreter(module, NumericAlgebra(), max_unroll, observer=record).run(inputs))
    return trace


def _key(runs: list[np.ndarray], idx: tuple[int, ...], kind: Kind) -> tuple | None:
    vals = []
    for r in runs:
        v = r[idx]
        if kind is Kind.FLOAT:
            v = float(v)
            if not np.isfinite(v):
                return None
            vals.append(float(f"{v:.7g}"))
        else:
            vals.append(int(v))
    # Zeros and run-independent values match by coincidence far too often (relu, masks).
    if any(v == 0 for v in vals) or len(set(vals)) == 1:
        return None
    return (kind.value, *vals)


@dataclass
class Sweeper:
    """Cut points and merging. Every top-level value element becomes a fresh variable with
    its defining term recorded, so terms stay one op deep; an element of the other program
    whose fingerprint matches a reference element is proved equal to it by unfolding
    definitions a few levels and, once proved, replaced by the reference variable."""

    alg: SymbolicAlgebra
    ref_trace: Trace
    other_trace: Trace
    timeout_s: float = 0.2
    unfold_rounds: int = 6
    budget_s: float = 30.0  # total time for local proofs; past it values are cut unmerged
    table: dict[tuple, Any] = field(default_factory=dict)
    defs: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # var id -> (var, term)
    merged: int = 0
    failed: int = 0
    cuts: int = 0
    _full: dict[int, Any] = field(default_factory=dict)
    other_vars: set[int] = field(default_factory=set)
    _side: str = "ref"
    _vars_memo: dict[int, frozenset] = field(default_factory=dict)
    _keep: list[Any] = field(default_factory=list)
    _t0: float = field(default_factory=time.perf_counter)

    # -- observers ----------------------------------------------------------
    def record_ref(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        self._side = "ref"
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            runs = self.ref_trace.values.get(name)
            new = self._cut_array(arr)
            if runs is not None and kind is not Kind.BOOL:
                for idx in np.ndindex(*arr.shape):
                    key = _key(runs, idx, kind)
                    if key is not None:
                        self.table.setdefault(key, new[idx])
            out.append(new)
        return out

    def merge_other(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        self._side = "other"
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            runs = self.other_trace.values.get(name)
            new = np.empty(arr.shape, dtype=object)
            for idx in np.ndindex(*arr.shape):
                x = arr[idx]
                key = _key(runs, idx, kind) if runs is not None and kind is not Kind.BOOL else None
                cand = self.table.get(key) if key is not None else None
                if cand is not None and (_identical(cand, x) or self._prove_equal(cand, x, kind)):
                    new[idx] = cand
                    self.merged += 1
                else:
                    new[idx] = self._cut(x)
            out.append(new)
        return out

    # -- cut variables ------------------------------------------------------
    def _cut_array(self, arr: np.ndarray) -> np.ndarray:
        new = np.empty(arr.shape, dtype=object)
        for idx in np.ndindex(*arr.shape):
            new[idx] = self._cut(arr[idx])
        return new

    def _cut(self, x: Any) -> Any:
        if isinstance(x, SF):
            v = self._cut_term(x.v)
            k = x.k if isinstance(x.k, int) else self._cut_term(x.k)
            return x if (v is x.v and k is x.k) else SF(v, k)
        if isinstance(x, (bool, int)):
            return x
        return self._cut_term(x)

    def _cut_term(self, t: Any) -> Any:
        import z3

        if z3.is_const(t):  # an input, a cut variable or a literal
            return t
        var = z3.FreshConst(t.sort(), "c")
        self.defs[var.get_id()] = (var, t)
        if self._side == "other":
            self.other_vars.add(var.get_id())
        self.cuts += 1
        return var

    def _cut_vars(self, t: Any) -> list[Any]:
        """The cut variables a term mentions. Memoised per node: unfolded terms share most
        of their nodes, and walking z3 terms from Python is the expensive part."""
        import z3

        memo = self._vars_memo
        root = t.get_id()
        if root in memo:
            return [self.defs[i][0] for i in memo[root]]
        stack: list[tuple[Any, bool]] = [(t, False)]
        while stack:
            u, done = stack.pop()
            i = u.get_id()
            if i in memo:
                continue
            if i in self.defs:
                memo[i] = frozenset((i,))
                continue
            if u.num_args() == 0:
                memo[i] = frozenset()
                continue
            kids = u.children()
            if done:
                acc: frozenset = frozenset()
                for k in kids:
                    acc |= memo[k.get_id()]
                memo[i] = acc
                self._keep.append(u)  # ids stay valid while the node lives
            else:
                stack.append((u, True))
                stack.extend((k, False) for k in kids if k.get_id() not in memo)
        return [self.defs[i][0] for i in memo[root]]

    def unfold(self, t: Any, only_other: bool = False) -> Any:
        """One level: every cut variable in t (or only the other program's own ones)
        replaced by its defining term."""
        import z3

        pairs = [(v, self.defs[v.get_id()][1]) for v in self._cut_vars(t)
                 if not only_other or v.get_id() in self.other_vars]
        return z3.substitute(t, *pairs) if pairs else t

    def expand(self, t: Any) -> Any:
        """t with every cut variable replaced, recursively: a term over the inputs."""
        import z3

        key = t.get_id()
        if key in self._full:
            return self._full[key]
        pairs = [(v, self.expand(self.defs[v.get_id()][1])) for v in self._cut_vars(t)]
        full = z3.substitute(t, *pairs) if pairs else t
        self._full[key] = full
        return full

    def expand_element(self, x: Any) -> Any:
        if isinstance(x, SF):
            return SF(self.expand(x.v), x.k if isinstance(x.k, int) else self.expand(x.k))
        if isinstance(x, (bool, int)):
            return x
        return self.expand(x)

    def _prove_equal(self, a: Any, b: Any, kind: Kind) -> bool:
        import z3

        from .solve import trivially_equal

        eq = self.alg.element_equal(a, b, kind)
        if eq is True or eq is False:
            return bool(eq)
        if time.perf_counter() - self._t0 > self.budget_s:
            return False
        # Unfold only the cut variables that one side mentions and the other does not: the
        # two sides meet at their common cut points, which stay atoms, so the terms stay
        # small. A rewrite that regroups several reference ops needs a few rounds.
        left, right = _terms(a), _terms(b)
        for _ in range(self.unfold_rounds):
            lv = {v.get_id() for t in left for v in self._cut_vars(t)}
            rv = {v.get_id() for t in right for v in self._cut_vars(t)}
            diff = lv ^ rv
            if not diff:
                break
            pairs = [(self.defs[i][0], self.defs[i][1]) for i in diff]
            left = [z3.substitute(t, *pairs) for t in left]
            right = [z3.substitute(t, *pairs) for t in right]
            eq = lift_any(self.alg.element_equal(_rebuild(a, left), _rebuild(b, right), kind))
            if trivially_equal(eq, blowup=SWEEP_BLOWUP):
                return True
        f = lift_any(eq)
        s = z3.Solver()
        s.set("timeout", max(1, int(self.timeout_s * 1000)))
        s.add(z3.Not(f))
        if s.check() == z3.unsat:
            return True
        self.failed += 1
        return False


def _terms(x: Any) -> list[Any]:
    if isinstance(x, SF):
        return [x.v] + ([] if isinstance(x.k, int) else [x.k])
    return [] if isinstance(x, (bool, int)) else [x]


def _rebuild(x: Any, terms: list[Any]) -> Any:
    """x with its z3 parts replaced by `terms` (in the order `_terms` lists them)."""
    if isinstance(x, SF):
        return SF(terms[0], x.k if isinstance(x.k, int) else terms[1])
    return x if isinstance(x, (bool, int)) else terms[0]


def _identical(a: Any, b: Any) -> bool:
    if isinstance(a, SF) and isinstance(b, SF):
        return a.v.eq(b.v) and (a.k == b.k if isinstance(a.k, int) and isinstance(b.k, int)
                                else (not isinstance(a.k, int) and not isinstance(b.k, int) and a.k.eq(b.k)))
    if isinstance(a, (bool, int)) or isinstance(b, (bool, int)):
        return type(a) is type(b) and a == b
    return a.eq(b)
