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
The pieces: `fingerprints` (numeric runs), `cuts` (the cut store), `local` (local
proofs); the same local proofs serve the final comparison of output elements (`driver`),
and the cut definitions evaluate a random run's difference exactly without a full expansion."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind, Symbolic
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FF
from tv_mlir.algebra.term import Term
from tv_mlir.ir import Op, TensorType
from tv_mlir.prove.cuts import CutStore, Origin, origin_of
from tv_mlir.prove.fingerprints import Trace, fingerprints, input_runs
from tv_mlir.prove.local import GroupLedger, LocalProver

MAX_CANDIDATES = 3  # reference values with the same fingerprint tried per element
PLACEMENT_VOTES = 2  # merged elements that must agree on a value's placement
PLACEMENT_SAMPLE = 64  # merged elements a placement is read from
# An element whose fingerprint met no reference value is still tried by placement when its
# runs are this close to the reference element's there (relative): the runs compute in
# float64 in each program's order and round to float32 for the fingerprint, and a value
# near a float32 rounding boundary (a sum in another order after a cancellation, a literal
# the numeric and the symbolic rules treat apart) lands on the other side in one run.
NEAR = 1e-6
NEAR_PLACEMENT = True  # the switch the tests flip
PAIR_WORK = 100  # work counted per pair for the z3 core, which builds no own terms


def _full_id(x: Any) -> Any:
    """An id for all of an element's terms: a float of a symbolic IEEE class is its value
    and its class (`T.element_id` names the value alone)."""
    if type(x) is FF and type(x.k) is int:
        # An own-core float of a known class (most elements; every element of a value the
        # sweep places by position comes through here): its value's `term_id`, inlined.
        v = x.v
        if type(v) is Term:
            leaf = v.leaf
            return (leaf.id if leaf is not None else v.id,)
    terms = T.element_terms(x)
    return tuple(T.term_id(t) for t in terms) if terms else T.element_id(x)


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


@dataclass
class Sweeper:
    """Merging of the other program's values into the reference's (see the module docstring)."""

    alg: Symbolic
    ref_trace: Trace
    other_trace: Trace
    timeout_s: float = 0.2  # per batched local solver call
    # Total work for local proofs, counted in terms built (deterministic, unlike seconds: a
    # verdict must not depend on the machine's load); past it values are cut unmerged.
    budget_terms: int = 2_500_000
    table: dict[bytes, list[Any]] = field(default_factory=dict)  # fingerprint -> reference elements
    merged: int = 0
    placed: int = 0  # of them, merged with a candidate found by position (`_by_placement`)
    store: CutStore = field(init=False)
    local: LocalProver = field(init=False)
    _proof_terms: int = 0
    _tried: set[tuple[Any, Any]] = field(default_factory=set)  # (reference, ours) proofs tried
    # ours (`_full_id`) -> the reference element it was proved equal to. The store's alias
    # covers only finite floats; an element of a symbolic IEEE class met again (the same
    # psum result on every device of its group) takes the proved counterpart from here.
    _proved: dict[Any, Any] = field(default_factory=dict)
    _dtypes: dict[Any, str] = field(default_factory=dict)  # reference element id -> its float type
    _float_types: set[str] = field(default_factory=set)  # the float types in _dtypes
    precision: dict[tuple[str, str, str, str], PrecisionFinding] = field(default_factory=dict)
    # Candidates by position (`_by_placement`): the reference values (inputs first) in
    # order, and where each reference element first occurs in them (value index, flat
    # index). Indexed only when a placement is asked for, up to `_indexed` values: most
    # pairs never need one, and every reference element passes through here.
    _ref_arrays: list[np.ndarray] = field(default_factory=list)
    _ref_runs: list[list[np.ndarray] | None] = field(default_factory=list)  # their numeric runs
    _where: dict[Any, tuple[int, int]] = field(default_factory=dict)
    _indexed: int = 0
    # Groups of local proofs (`_prove_todo`) across the devices that merge one value.
    _ledger: GroupLedger = field(default_factory=GroupLedger)

    def __post_init__(self) -> None:
        self.store = CutStore(self.alg)
        self.local = LocalProver(self.store, self.alg, timeout_s=self.timeout_s)

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
            self._ref_arrays.append(np.asarray(arr))
            runs = input_runs(self.ref_trace, input_sets, k)
            self._ref_runs.append(runs)
            for x, key in zip(arr.reshape(-1), fingerprints(runs, kind)):
                if key is not None:
                    self.table.setdefault(key, []).append(x)
                    if t.is_float:
                        self._dtypes.setdefault(T.element_id(x), t.dtype)
                        self._float_types.add(t.dtype)

    def record_ref(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            self.store.origin = origin_of("ref", op, name)
            new = self.store.cut_array(arr)
            runs = self.ref_trace.values.get(name)
            if kind is not Kind.BOOL:
                self._ref_arrays.append(new)
                self._ref_runs.append(runs)
            keys = self.ref_trace.keys(name, kind) if runs is not None and kind is not Kind.BOOL else None
            if keys is not None:
                for x, key in zip(new.reshape(-1), keys):
                    if key is not None:
                        cands = self.table.setdefault(key, [])
                        if not any(T.identical(x, c) for c in cands):
                            cands.append(x)
                            if t.is_float:
                                self._dtypes.setdefault(T.element_id(x), t.dtype)
                                self._float_types.add(t.dtype)
            out.append(new)
        self.store.origin = None
        return out

    def _index_positions(self) -> None:
        where = self._where
        for j in range(self._indexed, len(self._ref_arrays)):
            for k, x in enumerate(self._ref_arrays[j].reshape(-1).tolist()):
                if not T.is_folded(x):
                    where.setdefault(_full_id(x), (j, k))
        self._indexed = len(self._ref_arrays)

    def _prove_todo(self, op: Op, name: str, t: TensorType, kind: Kind, flat: np.ndarray,
                    todo: list[tuple[int, list[Any], Any]]) -> None:
        """Local proofs for (flat index, candidate reference elements, ours), within the
        budget; a proved element is replaced by its reference counterpart in `flat`.

        The elements of value `name` against one reference value are a group: they stand
        or fall together, on every device (`local.GroupLedger`; `name` without its device)."""
        value = name.partition("@")[0]
        # Several reference values may share a fingerprint (min(x, y) and x when x < y
        # in every run): the newest is the likeliest counterpart, then the next.
        while todo and self._proof_terms < self.budget_terms:
            pairs = [(c[0], x) for _, c, x in todo]
            size0 = T.work_size(pairs)
            groups = [_group(value, self._value_of(c[0])) for _, c, _ in todo]
            proved = self.local.prove_pairs(pairs, kind, self.timeout_s, groups=groups, ledger=self._ledger)
            # The z3 core counts a proof attempt as a fixed amount of work.
            self._proof_terms += (T.work_size(pairs) - size0) or PAIR_WORK * len(pairs)
            retry = []
            for (i, cands, x), how in zip(todo, proved):
                if how is not None:
                    self._proved[_full_id(x)] = cands[0]
                    flat[i] = cands[0]
                    self.merged += 1
                    self.store.alias(x, cands[0])
                    self._note_precision(op, t, cands[0])
                elif len(cands) > 1:
                    retry.append((i, cands[1:], x))
            todo = retry

    def _value_of(self, ref_element: Any) -> Origin | None:
        """The reference op result an element was cut from (None for an input or a
        literal): this op result's elements against it stand or fall together."""
        terms = T.element_terms(ref_element)
        cut = self.store.cuts_by_id.get(T.term_id(terms[0])) if terms else None
        return None if cut is None else cut.site

    def _by_placement(self, flat: np.ndarray, shape: tuple[int, ...], keys: Sequence[bytes | None],
                      runs: list[np.ndarray], missed: set[int]) -> list[tuple[int, list[Any], Any]]:
        """Candidates by position for the elements without a fingerprint.

        A value is often a block of one reference value (a shard: rows 16t.. of the
        embedding gradient), and an element zero in all runs but one has no fingerprint (it
        would match every mask). When the merged elements of the value sit at one offset in
        one reference value, the unmerged ones are tried against the reference elements at
        the same offset. Only a proof merges them: a wrong placement costs failed proofs.
        An element with a fingerprint that met no reference value (`missed`) is tried only
        where its runs are within NEAR of the reference element's: otherwise the runs
        already show it differs from every reference value."""
        self._index_positions()
        where = self._where
        merged: list[tuple[int, tuple[int, int]]] = []  # (flat index, where its element is)
        rest: list[int] = []
        for i, x in enumerate(flat.tolist()):
            at = None if T.is_folded(x) else where.get(_full_id(x))
            if at is not None:
                merged.append((i, at))
            elif keys[i] is None or i in missed:
                rest.append(i)
        if len(merged) < PLACEMENT_VOTES or not rest:
            return []
        votes: Counter[tuple[int, tuple[int, ...]]] = Counter()
        sample = merged[:: max(1, len(merged) // PLACEMENT_SAMPLE)]
        for i, (j, k) in sample:
            ref_shape = self._ref_arrays[j].shape
            if len(ref_shape) != len(shape):
                continue
            ours_at, ref_at = np.unravel_index(i, shape), np.unravel_index(k, ref_shape)
            votes[(j, tuple(int(a) - int(b) for a, b in zip(ref_at, ours_at)))] += 1
        if not votes:
            return []
        (j, off), n = votes.most_common(1)[0]
        if n < PLACEMENT_VOTES or 2 * n < len(sample):
            return []
        ref, ref_runs = self._ref_arrays[j], self._ref_runs[j]
        todo: list[tuple[int, list[Any], Any]] = []
        for i in rest:
            q = tuple(int(a) + o for a, o in zip(np.unravel_index(i, shape), off))
            if not all(0 <= a < d for a, d in zip(q, ref.shape)):
                continue
            if i in missed and not _near(runs, i, ref_runs, q):
                continue
            c, x = ref[q], flat[i]
            if T.identical(c, x):
                continue
            pair = (T.element_id(c), T.element_id(x))
            if pair not in self._tried:
                self._tried.add(pair)
                todo.append((i, [c], x))
        return todo

    def _note_precision(self, op: Op, t: TensorType, ref_element: Any) -> None:
        if not t.is_float or self._float_types <= {t.dtype}:  # nothing of another float type to meet
            return
        ref_dtype = self._dtypes.get(T.element_id(ref_element))
        if t.is_float and ref_dtype is not None and ref_dtype != t.dtype:
            f = PrecisionFinding(op.name, op.loc, t.dtype, ref_dtype)
            self.precision.setdefault((f.op, f.loc, f.other_dtype, f.ref_dtype), f)

    def merge_other(self, op: Op, results: list[np.ndarray]) -> list[np.ndarray]:
        out = []
        for name, t, arr in zip(op.results, op.result_types, results):
            kind = Kind.of(t)
            self.store.origin = origin_of("other", op, name)
            new = self.store.cut_array(arr)
            self.store.origin = None
            runs = self.other_trace.values.get(name)
            if runs is None or kind is Kind.BOOL:
                out.append(new)
                continue
            flat = new.reshape(-1)
            # (flat index, candidate reference elements newest first, ours)
            todo: list[tuple[int, list[Any], Any]] = []
            keys = self.other_trace.keys(name, kind)
            assert keys is not None
            missed: set[int] = set()  # a fingerprint that met nothing
            for i, key in enumerate(keys):
                cands = self.table.get(key) if key is not None else None
                if not cands:
                    if key is not None and kind is Kind.FLOAT and NEAR_PLACEMENT:
                        missed.add(i)
                    continue
                hit = next((c for c in cands if T.identical(c, flat[i])), None)
                if hit is not None:  # structural hit on a reference definition
                    self.merged += 1
                    self._note_precision(op, t, hit)
                    continue
                key_ours = T.element_id(flat[i])
                known = self._proved.get(_full_id(flat[i]))
                if known is not None:
                    flat[i] = known
                    self.merged += 1
                    continue
                # A shape op (reverse, slice) passes on elements already tried: skip them.
                fresh = [c for c in cands[::-1][:MAX_CANDIDATES] if (T.element_id(c), key_ours) not in self._tried]
                self._tried.update((T.element_id(c), key_ours) for c in fresh)
                if fresh:
                    todo.append((i, fresh, flat[i]))
            self._prove_todo(op, name, t, kind, flat, todo)
            if None in keys or missed:  # elements without a fingerprint match: by position
                before = self.merged
                self._prove_todo(op, name, t, kind, flat, self._by_placement(flat, new.shape, keys, runs, missed))
                self.placed += self.merged - before
            out.append(new)
        return out


def _group(value: str, ref: Origin | None) -> tuple[str, Origin] | None:
    """A pair's group: None (tried alone) for a reference input or literal."""
    return None if ref is None else (value, ref)


def _near(runs: list[np.ndarray], i: int, ref_runs: list[np.ndarray] | None, q: tuple[int, ...]) -> bool:
    """Element i (flat) of a value and element q of a reference value agree within NEAR
    (relative) in every run."""
    if ref_runs is None or len(ref_runs) != len(runs):
        return False
    ours = np.array([np.asarray(r).reshape(-1)[i] for r in runs], np.float64)
    theirs = np.array([np.asarray(r)[q] for r in ref_runs], np.float64)
    if not (np.isfinite(ours).all() and np.isfinite(theirs).all()):
        return False
    return bool((np.abs(ours - theirs) <= NEAR * np.maximum(np.abs(ours), np.abs(theirs))).all())
