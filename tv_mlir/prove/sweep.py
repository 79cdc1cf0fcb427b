"""Equivalence sweeping: merge intermediate values of the two programs that are proven
equal, so that the final comparison is between identical terms wherever the programs agree.

Both programs first run numerically on RUNS random inputs. Every top-level value element
of both programs becomes a cut variable with its defining term recorded, so terms stay one
op deep. An element of the other program is merged with a reference element (replaced by
the reference's cut variable) when

- its defining term is the very term some earlier cut variable stands for (structural
  hashing; no proof needed: the variable is defined as that term), or
- it has the numeric fingerprint of a reference element (or input) and their equality is
  proved locally (`Sweeper.prove_pairs`): cut variables are unfolded newest first until
  the two sides meet at common cut points, then the simplifier, then min/max networks by
  the 0-1 principle, then one short solver call per op result. Common cut points stay
  free constants, a sound abstraction: an identity for all their values holds for the
  values they take.

Merging proven-equal terms is sound; a fingerprint collision only costs a failed proof.
The same local proofs serve the final comparison of output elements (verify.py), and the
cut definitions evaluate a random run's difference exactly without a full expansion."""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Sequence

import numpy as np

from tv_mlir.algebra import Kind, NumericAlgebra, Symbolic
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.checks import difference_is_zero, ite_difference_is_zero, lattice_equal
from tv_mlir.execute.interp import Interpreter
from tv_mlir.ir import Module, Op, TensorType
from tv_mlir.prove import solve

# Random input sets. Fingerprints must tell apart values that agree by chance: a select or
# max takes the same branch in all runs with probability 2**-RUNS, and every such
# coincidence costs a failed proof.
RUNS = 8
SWEEP_BLOWUP = 1000  # local proofs are small; a blow-up means the match is a coincidence
MAX_CANDIDATES = 3  # reference values with the same fingerprint tried per element


def random_inputs(types: Sequence[TensorType], seed: int = 0) -> list[list[np.ndarray]]:
    """Run 0: small integers (exact arithmetic, readable witnesses); the other runs: real
    values with three decimals (printable, generic enough to avoid ties)."""
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
            else:
                arrays.append(np.round(rng.normal(size=t.shape), 3))
        sets.append(arrays)
    return sets


@dataclass
class Trace:
    """Numeric values of every top-level value (by SSA name) and the outputs, per run."""

    values: dict[str, list[np.ndarray]] = field(default_factory=dict)
    outputs: list[list[np.ndarray]] = field(default_factory=list)
    checks: list[list[Any]] = field(default_factory=list)  # per run: spmd.ReplicaCheck list


def numeric_trace(module: Module, input_sets: list[list[np.ndarray]], max_unroll: int) -> Trace:
    trace = Trace()

    def record(op: Op, results: list[np.ndarray]) -> None:
        for name, r in zip(op.results, results):
            trace.values.setdefault(name, []).append(r)

    for inputs in input_sets:
        interp = Interpreter(module, NumericAlgebra(), max_unroll, observer=record)
        trace.outputs.append(interp.run(inputs))
        trace.checks.append(interp.replica_checks)
    return trace


def _keys(runs: list[np.ndarray], kind: Kind) -> list[bytes | None]:
    """The fingerprint of every element (flat, C order), or None where it is useless:
    values rounded to float32 (the runs compute in float64, in each program's own order),
    one per run. Vectorised: this runs for every element of every value."""
    rows = np.stack([np.asarray(r).reshape(-1) for r in runs], axis=1)
    if kind is Kind.FLOAT:
        rows = rows.astype(np.float32)
        nonzero = (rows != 0).sum(axis=1)
        # A relu output is zero in about half the runs and must still be matched; a value
        # that is zero in all runs but one is too likely to match by coincidence (masks).
        ok = np.isfinite(rows).all(axis=1) & (nonzero >= 2)
    else:
        rows = rows.astype(np.int64)
        ok = (rows != 0).all(axis=1)
    ok &= (rows != rows[:, :1]).any(axis=1)  # run-independent values are constants
    tag = kind.value.encode()
    return [tag + row.tobytes() if good else None for row, good in zip(rows, ok.tolist())]


@dataclass
class _Attempt:
    """The outcome of unfolding two elements towards each other."""

    result: Any  # True: the simplifier proved them equal; False: not worth a solver call
    # (Python values that differ, sides that never met); else the equality for the solver
    cut_points: bool = False  # the sides met at cut points that could still be unfolded
    value_pair: tuple[Any, Any] | None = None  # finite floats: the two real terms


@dataclass(frozen=True)
class Origin:
    """Where a cut variable's value was computed: for first-divergence reports."""

    side: str  # "ref" or "other"
    op: str
    loc: str
    value: str  # the SSA value (without device suffix)
    device: int | None  # in a manual region: the device
    index: tuple[int, ...] = ()  # the element's position in the value


@dataclass(frozen=True)
class PrecisionFinding:
    """A value of the other program merged with a reference value of another float type."""

    op: str
    loc: str
    other_dtype: str
    ref_dtype: str

    def describe(self, ref_name: str, other_name: str) -> str:
        return (f"{self.op} at {self.loc}: {self.other_dtype} in {other_name} where {ref_name} computes "
                f"the same value in {self.ref_dtype}")


@dataclass(eq=False)
class Cut:
    """A cut variable and what is known about its definition, found once by a walk over
    the definition when first needed (most reference definitions are never unfolded)."""

    var: Any  # the fresh constant
    term: Any  # its defining term (one op deep over older cut variables and inputs)
    order: int  # creation order: a definition mentions only older cut variables
    scanned: bool = False
    vars: frozenset[int] = frozenset()  # ids of the cut variables the definition mentions
    leaves: frozenset[int] = frozenset()  # ids of the other free constants (program inputs)
    local_uf: bool = False  # the definition itself applies an uninterpreted function
    origin: Origin | None = None


@dataclass
class Sweeper:
    """Cut points and merging (see the module docstring)."""

    alg: Symbolic
    ref_trace: Trace
    other_trace: Trace
    timeout_s: float = 0.2  # per batched local solver call
    unfold_steps: int = 12  # newest-first unfolding batches per local proof
    max_unfold: int = 400  # cut variables unfolded per local proof before giving up
    deep: int = 3  # common cut points unfolded when the sides meet but do not prove equal
    budget_s: float = 30.0  # total time for local proofs; past it values are cut unmerged
    table: dict[bytes, list[Any]] = field(default_factory=dict)  # fingerprint -> reference elements
    cuts_by_id: dict[int, Cut] = field(default_factory=dict)
    merged: int = 0
    failed: int = 0
    cuts: int = 0
    _by_term: dict[int, Any] = field(default_factory=dict)  # defining term id -> variable
    _proof_s: float = 0.0
    _simplify: Any = field(default_factory=lambda: T.sweep_simplifier(SWEEP_BLOWUP))
    _tried: set[tuple[Any, Any]] = field(default_factory=set)  # (reference, ours) proofs tried
    _expanded: dict[int, Any] = field(default_factory=dict)  # cut id -> term over the inputs
    _origin: Origin | None = None  # the op whose results are being cut
    _dtypes: dict[Any, str] = field(default_factory=dict)  # reference element id -> its float type
    precision: dict[tuple[str, str, str, str], PrecisionFinding] = field(default_factory=dict)

    # -- observers ----------------------------------------------------------
    def record_inputs(self, inputs: Sequence[np.ndarray], input_sets: list[list[np.ndarray]],
                      types: Sequence[TensorType]) -> None:
        """Index the program inputs first, so that a value of the other program that is an
        input (a transpose of one, say) meets the input itself, not a reference value that
        happens to equal it on the random runs (min(x, y) when x < y in every run)."""
        for k, (arr, t) in enumerate(zip(inputs, types)):
            kind = Kind.of(t)
            if kind is Kind.BOOL:
                continue
            runs = [s[k] for s in input_sets]
            for x, key in zip(arr.reshape(-1), _keys(runs, kind)):
                if key is not None:
                    self.table.setdefault(key, []).append(x)
                    if t.is_float:
                        self._dtypes.setdefault(T.element_id(x), t.dtype)

    def record_ref(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            self._origin = _origin("ref", op, name)
            new = self._cut_array(arr)
            runs = self.ref_trace.values.get(name)
            if runs is not None and kind is not Kind.BOOL:
                for x, key in zip(new.reshape(-1), _keys(runs, kind)):
                    if key is not None:
                        cands = self.table.setdefault(key, [])
                        if not any(T.identical(x, c) for c in cands):
                            cands.append(x)
                            if t.is_float:
                                self._dtypes.setdefault(T.element_id(x), t.dtype)
            out.append(new)
        self._origin = None
        return out

    def _note_precision(self, op: Op, t: TensorType, ref_element: Any) -> None:
        ref_dtype = self._dtypes.get(T.element_id(ref_element))
        if t.is_float and ref_dtype is not None and ref_dtype != t.dtype:
            f = PrecisionFinding(op.name, op.loc, t.dtype, ref_dtype)
            self.precision.setdefault((f.op, f.loc, f.other_dtype, f.ref_dtype), f)

    def merge_other(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            self._origin = _origin("other", op, name)
            new = self._cut_array(arr)
            self._origin = None
            runs = self.other_trace.values.get(name)
            if runs is None or kind is Kind.BOOL:
                out.append(new)
                continue
            flat = new.reshape(-1)
            # (flat index, candidate reference elements newest first, ours)
            todo: list[tuple[int, list[Any], Any]] = []
            for i, key in enumerate(_keys(runs, kind)):
                cands = self.table.get(key) if key is not None else None
                if not cands:
                    continue
                hit = next((c for c in cands if T.identical(c, flat[i])), None)
                if hit is not None:  # structural hit on a reference definition
                    self.merged += 1
                    self._note_precision(op, t, hit)
                    continue
                # A shape op (reverse, slice) passes on elements already tried: skip them.
                key_ours = T.element_id(flat[i])
                fresh = [c for c in cands[::-1][:MAX_CANDIDATES] if (T.element_id(c), key_ours) not in self._tried]
                self._tried.update((T.element_id(c), key_ours) for c in fresh)
                if fresh:
                    todo.append((i, fresh, flat[i]))
            # Several reference values may share a fingerprint (min(x, y) and x when x < y
            # in every run): the newest is the likeliest counterpart, then the next.
            while todo and self._proof_s < self.budget_s:
                t0 = time.perf_counter()
                proved = self.prove_pairs([(c[0], x) for _, c, x in todo], kind, self.timeout_s)
                self._proof_s += time.perf_counter() - t0
                retry = []
                for (i, cands, x), how in zip(todo, proved):
                    if how is not None:
                        flat[i] = cands[0]
                        self.merged += 1
                        self._alias(x, cands[0])
                        self._note_precision(op, t, cands[0])
                    elif len(cands) > 1:
                        retry.append((i, cands[1:], x))
                todo = retry
            out.append(new)
        return out

    # -- cut variables ------------------------------------------------------
    def _cut_array(self, arr: np.ndarray) -> np.ndarray:
        new = np.empty(arr.shape, dtype=object)
        flat, src = new.reshape(-1), arr.reshape(-1)
        base = self._origin
        if base is None:
            for i in range(src.size):
                flat[i] = self._cut(src[i])
            return new
        for i, idx in enumerate(np.ndindex(*arr.shape)):
            self._origin = replace(base, index=idx)
            flat[i] = self._cut(src[i])
        self._origin = base
        return new

    def _cut(self, x: Any) -> Any:
        if T.is_folded(x):
            return x
        terms = T.element_terms(x)
        cut = [self._cut_term(t) for t in terms]
        return x if all(c is t for c, t in zip(cut, terms)) else T.with_terms(x, cut)

    def _cut_term(self, t: Any) -> Any:
        if not T.is_compound(t):  # an input, a cut variable or a literal
            return t
        key = T.term_id(t)
        hit = self._by_term.get(key)
        if hit is not None:  # the same term already has a variable (in either program)
            return hit
        var = T.fresh_cut(t)
        self.cuts_by_id[T.term_id(var)] = Cut(var, t, self.cuts, origin=self._origin)
        self._by_term[key] = var
        self.cuts += 1
        return var

    def _info(self, i: int) -> Cut:
        """The cut with id i, its definition scanned."""
        cut = self.cuts_by_id[i]
        if not cut.scanned:
            cut.vars, cut.leaves, cut.local_uf = self._scan(cut.term)
            cut.scanned = True
        return cut

    def _alias(self, ours: Any, ref: Any) -> None:
        """`ours` was proved equal to the reference element `ref`: later terms identical to
        our definition take the reference variable directly. For floats only when both are
        finite: equal infinities or NaNs say nothing about the value parts."""
        if T.is_float(ours):
            if not (T.finite_float(ours) and T.finite_float(ref)):
                return
        elif T.is_folded(ours) or T.is_folded(ref):
            return
        o, r = T.element_terms(ours)[0], T.element_terms(ref)[0]
        cut = self.cuts_by_id.get(T.term_id(o))
        if cut is not None:
            self._by_term[T.term_id(cut.term)] = r

    def _scan(self, t: Any) -> tuple[frozenset[int], frozenset[int], bool]:
        """The cut variables, other free constants and whether an uninterpreted function is
        applied in t, stopping at cut variables."""
        # No term applies an uninterpreted function before the first use of one.
        return T.scan(t, self.cuts_by_id, check_uf=bool(self.alg.approximations))

    def vars_of(self, terms: Iterable[Any]) -> set[int]:
        out: set[int] = set()
        for t in terms:
            if T.term_id(t) in self.cuts_by_id:
                out.add(T.term_id(t))
            elif T.is_compound(t):
                out |= self._scan(t)[0]
        return out

    def _closure(self, roots: Iterable[int]) -> list[Cut]:
        """Every cut variable reachable from `roots`, oldest first (definition order)."""
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(self._info(i).vars)
        return sorted((self.cuts_by_id[i] for i in seen), key=lambda c: c.order)

    # -- expansion and evaluation ---------------------------------------------
    def expand_terms(self, terms: list[Any]) -> list[Any]:
        """The terms with every cut variable replaced, recursively: terms over the inputs."""
        full = self._expanded  # kept across calls: output elements share most of their cones
        for cut in self._closure(self.vars_of(terms)):
            i = T.term_id(cut.var)
            if i not in full:
                full[i] = T.substitute(cut.term, [(self.cuts_by_id[v].var, full[v]) for v in cut.vars])
        out = []
        for t in terms:
            vs = self.vars_of([t])
            out.append(T.substitute(t, [(self.cuts_by_id[v].var, full[v]) for v in vs]))
        return out

    def cone(self, elements: Sequence[Any]) -> list[Cut]:
        """The cut variables the elements depend on, through their definitions, oldest first."""
        return self._closure(self.vars_of(t for x in elements for t in T.element_terms(x)))

    def expand_element(self, x: Any) -> Any:
        if T.is_folded(x):
            return x
        return T.with_terms(x, self.expand_terms(T.element_terms(x)))

    def uses_uf(self, x: Any) -> bool:
        """Whether x (fully expanded) applies an uninterpreted function."""
        if not self.alg.approximations:
            return False
        for t in T.element_terms(x):
            vs, _, uf = self._scan(t)
            if uf or any(c.local_uf for c in self._closure(vs)):
                return True
        return False

    def evaluate(self, terms: list[Any], env: dict[int, tuple[Any, Any]]) -> list[Any] | None:
        """The terms' values (simplified terms, literals unless an uninterpreted function
        is applied) at the inputs `env` gives (input constant id -> (constant, value)),
        evaluated definition by definition so that no full expansion is built. None when a
        term mentions a free constant that env does not give."""
        vals: dict[int, Any] = {}

        def at(term: Any, vs: Iterable[int], leaves: Iterable[int]) -> Any | None:
            pairs = []
            for leaf in leaves:
                if leaf not in env:
                    return None
                pairs.append(env[leaf])
            pairs += [(self.cuts_by_id[v].var, vals[v]) for v in vs]
            return T.simplify(T.substitute(term, pairs))

        for cut in self._closure(self.vars_of(terms)):
            v = at(cut.term, cut.vars, cut.leaves)
            if v is None:
                return None
            vals[T.term_id(cut.var)] = v
        out = []
        for t in terms:
            i = T.term_id(t)
            if i in vals:
                out.append(vals[i])
            elif i in env:
                out.append(env[i][1])
            else:
                vs, leaves, _ = self._scan(t)
                v = at(t, vs, leaves)
                if v is None:
                    return None
                out.append(v)
        return out

    # -- local proofs ---------------------------------------------------------
    def prove_pairs(self, pairs: Sequence[tuple[Any, Any]], kind: Kind, timeout_s: float,
                    steps: int | None = None, max_unfold: int | None = None,
                    deep: int | None = None, solve_inputs_only: bool = True) -> list[str | None]:
        """For each (a, b): how a == b was proved ("simplified", "lattice", "solver"), or None.

        Per element: newest-first unfolding with the simplifier (`_unfold`), then min/max
        networks by the 0-1 principle; one solver call covers the rest of the batch (an op
        result tensor at a time); a model names the elements that may differ, which are
        dropped. Elements whose sides met but did not prove equal are tried once more with
        up to `deep` common cut points unfolded as well (E[(x - m)^2] = E[x^2] - m^2 holds
        only because m is the mean). solve_inputs_only=False leaves elements whose sides
        met only at the inputs (no cut point left: the full problem) to the caller's solver."""
        steps = steps or self.unfold_steps
        max_unfold = max_unfold or self.max_unfold
        deep = self.deep if deep is None else deep
        status: list[str | None] = [None] * len(pairs)
        todo = list(range(len(pairs)))
        for common in (0, deep) if deep else (0,):
            attempts: dict[int, _Attempt] = {}
            for i in todo:
                a, b = pairs[i]
                att = self._unfold(a, b, kind, steps, max_unfold, common)
                if att.result is True:
                    status[i] = "simplified"
                elif att.result is not False:
                    attempts[i] = att
            networks = [i for i, att in attempts.items() if att.value_pair is not None]
            for i, ok in zip(networks, lattice_equal([attempts[i].value_pair for i in networks])):
                if ok:
                    status[i] = "lattice"
            open_ = [(i, att.result) for i, att in attempts.items()
                     if status[i] is None and (att.cut_points or solve_inputs_only)]
            for i in solve.prove_batch([(i, T.formula(e)) for i, e in open_], timeout_s):
                status[i] = "solver"
            todo = [i for i, att in attempts.items() if status[i] is None and att.cut_points]
        self.failed += sum(1 for x in status if x is None)
        return status

    def _unfold(self, a: Any, b: Any, kind: Kind, steps: int, max_unfold: int, common: int) -> _Attempt:
        """Unfold a and b towards each other (see `_Attempt` for the outcome).

        Unfolding is newest first: the newest cut variable on only one side cannot appear on
        the other side unless a common cut point is unfolded (definitions mention only older
        variables), so it must be unfolded for the sides to meet; so must every variable of
        that side newer than everything the other side still lacks. Common cut points stay
        atoms, so the terms stay small; once the sides meet, up to `common` of them are
        unfolded too (newest first, on both sides) while the simplifier does not succeed."""
        eq = self.alg.element_equal(a, b, kind)
        if eq is True or eq is False or T.is_folded(a) or T.is_folded(b):
            return _Attempt(eq)
        left, right = T.element_terms(a), T.element_terms(b)
        lv, rv = self.vars_of(left), self.vars_of(right)
        if lv == rv and self._simplifies_true(eq):
            return _Attempt(True)
        order = self.cuts_by_id
        unfolded = 0
        for step in range(steps):
            only_l, only_r = lv - rv, rv - lv
            if not only_l and not only_r:
                if common <= 0 or not lv:
                    break
                common -= 1
                newest = [max(lv, key=lambda v: order[v].order)]
                left, lv = self._unfold_side(left, lv, newest)
                right, rv = self._unfold_side(right, rv, newest)
                batch = newest
            else:
                ml = max((order[v].order for v in only_l), default=-1)
                mr = max((order[v].order for v in only_r), default=-1)
                # A common cut point defined from exclusive ones may be what the other side
                # needs (x2 = 2*x against 2*(x2 - x)): unfold it on both sides.
                excl = only_l | only_r
                bridge = [v for v in lv & rv if self._info(v).vars & excl]
                if bridge:
                    left, lv = self._unfold_side(left, lv, bridge)
                    right, rv = self._unfold_side(right, rv, bridge)
                    batch = bridge
                elif ml > mr:
                    batch = [v for v in only_l if order[v].order > mr]
                    left, lv = self._unfold_side(left, lv, batch)
                else:
                    batch = [v for v in only_r if order[v].order > ml]
                    right, rv = self._unfold_side(right, rv, batch)
            unfolded += len(batch)
            eq = self._equal(a, b, left, right, kind)
            # The sides usually meet exactly when their cut points agree; checking now and
            # then on the way also catches cancellations (x - x) before they grow.
            if (lv == rv or step % 4 == 3) and self._simplifies_true(eq):
                return _Attempt(True)
            if unfolded > max_unfold:
                break
        # Sides that never met differ unless some unmatched cut points cancel: such a
        # proof is rare and a solver call on it is mostly a wasted timeout.
        if lv != rv:
            return _Attempt(False)
        finite = T.finite_float(a) and T.finite_float(b)
        if finite and ite_difference_is_zero(left[0], right[0]):
            return _Attempt(True)
        if not finite and T.is_float(a) and T.is_float(b) and self._split_equal(a, b, left, right):
            return _Attempt(True)
        return _Attempt(eq, bool(lv), (left[0], right[0]) if finite else None)

    def _split_equal(self, a: Any, b: Any, left: list[Any], right: list[Any]) -> bool:
        """Floats whose IEEE class is symbolic (a division by a sum of exponentials): equal
        when the classes are equal for all values of the free constants and the values are
        the same polynomial (then they agree whatever the class). Proving the two apart
        keeps nonlinear real arithmetic away from the solver, which only sees classes."""
        if not difference_is_zero(left[0], right[0]):
            return False
        ka = left[1] if T.symbolic_class(a) else T.float_class(a)
        right_k = right[1] if T.symbolic_class(b) else T.float_class(b)
        same = T.class_equality(ka, right_k)
        return T.simplifies_true(same, self._simplify) or solve.valid(same, self.timeout_s)

    def _equal(self, a: Any, b: Any, left: list[Any], right: list[Any], kind: Kind) -> Any:
        """a == b with their terms replaced by `left` and `right`. Finite floats (the usual
        case) compare by value alone."""
        if T.finite_float(a) and T.finite_float(b):
            return T.value_equality(left[0], right[0])
        return self.alg.element_equal(T.with_terms(a, left), T.with_terms(b, right), kind)

    def _simplifies_true(self, eq: Any) -> bool:
        return T.simplifies_true(eq, self._simplify)

    def _unfold_side(self, terms: list[Any], vs: set[int], batch: list[int]) -> tuple[list[Any], set[int]]:
        cuts = [self._info(v) for v in batch]
        pairs = [(c.var, c.term) for c in cuts]
        new_vs = vs.difference(batch)
        for c in cuts:
            new_vs |= c.vars
        return [T.substitute(t, pairs) for t in terms], new_vs


def _origin(side: str, op: Op, name: str) -> Origin:
    value, _, device = name.partition("@")
    return Origin(side, op.name, op.loc, value, int(device) if device else None)


