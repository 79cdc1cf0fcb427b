"""Local proofs: two elements proved equal near the cut points where they meet. Cut variables
are unfolded newest first until the two sides meet at common cut points, then the
simplifier, then min/max networks by the 0-1 principle, then one short solver call per op
result. Common cut points stay free constants, a sound abstraction: an identity for all
their values holds for the values they take; so does one for all their values that satisfy
the facts the store keeps of them (`known`: a class in 0..3, a cut point known positive),
which the solver calls take as hypotheses."""
from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tv_mlir.algebra import Kind, Symbolic
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.checks import difference_is_zero, ite_difference_is_zero, lattice_equal, piecewise_equal
from tv_mlir.algebra.piecewise import PiecewiseChecker
from tv_mlir.prove import falsify, solve
from tv_mlir.prove.cuts import CutStore
from tv_mlir.prove.instances import InstanceTable
from tv_mlir.prove.known import Known

SWEEP_BLOWUP = 1000  # local proofs are small; a blow-up means the match is a coincidence
# New own terms (nodes and monomials) one local proof's unfolding may make before it stops as
# not proved. Measured (docs/architecture.md, "Round 7"): unfoldings that prove make at most
# ~4,000 (llama_train_step's largest; the clients, flax and sweep tests far fewer), while a
# pair the runs could not tell apart whose sides meet only at the inputs multiplies its whole
# cone out (gemma_softcap_zloss's clamped partial gather: ~400 k terms and ~6.5 s CPU per
# pair at the earlier 300 k). Stopping only leaves a pair unproved, never merges one.
UNFOLD_TERMS = 40_000
# Failed unfoldings in one group (see `prove_pairs`) before the group's other pairs are left
# unproved: a partial sum that the random runs cannot tell from the full one (a scatter-add
# over sparse token ids: each shard's rows match the reference's wherever the other shards'
# tokens missed that row in every run) fails for every element, each failure unfolding
# hundreds of cut variables.
GROUP_FAILURES = 3
INSTANCES = True  # proofs by instance (`instances`); the switch the tests flip


@dataclass
class GroupLedger:
    """Failures and proofs per group (`prove_pairs`), kept by the caller across calls: one
    value of an SPMD program is merged once per device, each device's elements in a call of
    their own, and a shard's partial sum that fails on one device fails alike on the
    others (the embedding gradient's partial scatter-add: 3 failed unfoldings of ~0.1 s on
    each of five devices). Leaving a pair unproved is always sound."""

    failures: Counter[Hashable] = field(default_factory=Counter)
    proved: set[Hashable] = field(default_factory=set)

    def stopped(self, group: Hashable) -> bool:
        return group is not None and group not in self.proved and self.failures[group] >= GROUP_FAILURES


@dataclass
class _Attempt:
    """The outcome of unfolding two elements towards each other."""

    result: Any  # True: the simplifier proved them equal; False: not worth a solver call
    # (Python values that differ, sides that never met); else the equality for the solver
    cut_points: bool = False  # the sides met at cut points that could still be unfolded
    value_pair: tuple[Any, Any] | None = None  # finite floats: the two real terms


@dataclass
class LocalProver:
    """Proves pairs of elements equal over a cut store (see the module docstring)."""

    store: CutStore
    alg: Symbolic
    timeout_s: float = 0.2  # per batched local solver call
    unfold_steps: int = 24  # newest-first unfolding batches per local proof
    max_unfold: int = 400  # cut variables unfolded per local proof before giving up
    deep: int = 3  # common cut points unfolded when the sides meet but do not prove equal
    failed: int = 0
    _simplify: Any = field(default_factory=lambda: T.sweep_simplifier(SWEEP_BLOWUP))
    _cases: PiecewiseChecker = field(init=False)
    # (term ids, unfolded cut variables) -> the terms unfolded (`_substituted`)
    _unfolding: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[list[Any], list[Any]]] = field(
        default_factory=dict)
    # sorted batch of cut variables -> the substitution memo of that batch (`_substituted`),
    # for one `prove_pairs` call: the terms it keeps alive are those of one op's proofs.
    _memos: dict[tuple[int, ...], dict[int, Any]] = field(default_factory=dict)
    # Pairs proved so far, by signature: a pair that is one of them over other free
    # constants is proved without unfolding (`instances`). None: every pair is unfolded.
    instances: InstanceTable | None = None
    _trail: set[int] = field(default_factory=set)  # cut variables the current attempt unfolded
    # The facts of free constants, the solver calls' hypotheses: the normal form already
    # read them (a `cpos!` cut point's sign, a class cut point's 0..3), so without them the
    # solver meets models the terms were built to exclude (docs/classes.md).
    known: Known = field(default_factory=Known)

    def __post_init__(self) -> None:
        self._cases = PiecewiseChecker(self.store.definition)
        if self.instances is None and INSTANCES:
            self.instances = InstanceTable(self.store)

    def prove_pairs(self, pairs: Sequence[tuple[Any, Any]], kind: Kind, timeout_s: float,
                    steps: int | None = None, max_unfold: int | None = None,
                    deep: int | None = None, solve_inputs_only: bool = True,
                    groups: Sequence[Hashable] | None = None,
                    ledger: GroupLedger | None = None) -> list[str | None]:
        """For each (a, b): how a == b was proved ("simplified", "lattice", "solver"), or None.

        Per element: newest-first unfolding with the simplifier (`_unfold`), then min/max
        networks by the 0-1 principle; one solver call covers the rest of the batch (an op
        result tensor at a time); a model names the elements that may differ, which are
        dropped. Elements whose sides met but did not prove equal are tried once more with
        up to `deep` common cut points unfolded as well (E[(x - m)^2] = E[x^2] - m^2 holds
        only because m is the mean). solve_inputs_only=False leaves elements whose sides
        met only at the inputs (no cut point left: the full problem) to the caller's solver.

        `groups` (one key per pair, None for no group) names pairs that stand or fall
        together, such as the elements of one value against the elements of one reference
        value: once GROUP_FAILURES pairs of a group failed to unfold into anything provable
        and none of it was proved, the rest of the group is left unproved without trying.
        Leaving a pair unproved is always sound; it costs only a merge. `ledger` keeps the
        groups' failures and proofs across calls (the same value on other devices); by
        default they are this call's alone."""
        self._memos.clear()
        steps = steps or self.unfold_steps
        max_unfold = max_unfold or self.max_unfold
        deep = self.deep if deep is None else deep
        status: list[str | None] = [None] * len(pairs)
        todo = list(range(len(pairs)))
        ledger = GroupLedger() if ledger is None else ledger
        table = self.instances
        trails: dict[int, set[int]] = {}
        for common in (0, deep) if deep else (0,):
            attempts: dict[int, _Attempt] = {}
            for i in todo:
                a, b = pairs[i]
                group = groups[i] if groups is not None else None
                if ledger.stopped(group):
                    continue
                how = table.proved(a, b, kind) if table is not None and not common else None
                if how is not None:
                    status[i] = how
                    ledger.proved.add(group)
                    continue
                self._trail = trails[i] = set()
                try:
                    with T.term_budget((a, b), UNFOLD_TERMS):
                        att = self._unfold(a, b, kind, steps, max_unfold, common)
                except T.TermBudget:  # the unfolded terms blew up: not a local proof
                    att = _Attempt(False)
                if att.result is True:
                    status[i] = "simplified"
                    ledger.proved.add(group)
                    if table is not None:  # at once: the elements after it are its likeliest instances
                        table.record(a, b, kind, trails[i], "simplified")
                elif att.result is not False:
                    attempts[i] = att
                elif not common:
                    ledger.failures[group] += 1
            networks = [(i, att.value_pair) for i, att in attempts.items() if att.value_pair is not None]
            for (i, _), ok in zip(networks, lattice_equal([pair for _, pair in networks])):
                if ok:
                    status[i] = "lattice"
            open_ = [(i, att.result) for i, att in attempts.items()
                     if status[i] is None and (att.cut_points or solve_inputs_only)]
            # Each formula's least share of the batch's time (a batch that times out is asked
            # again one formula at a time): the same problem over other constants that failed
            # with as much time is not asked again.
            share = timeout_s / max(1, len(open_))
            if table is not None:
                open_ = [(i, e) for i, e in open_ if not table.solver_failed(e, timeout_s, share)]
            # A formula false at some point the solver also allows is one it cannot prove
            # (`falsify`): only the others are asked. Noted as failed below, as the solver's.
            asked = []
            for i, e in open_:
                claim = self._claim(e)
                if claim is not None:
                    asked.append((i, claim))
            for i in solve.prove_batch(asked, timeout_s):
                status[i] = "solver"
            if table is not None:
                for i, e in open_:
                    if status[i] is None:
                        table.note_solver_failure(e, timeout_s, share)
            todo = [i for i, att in attempts.items() if status[i] is None and att.cut_points]
        if table is not None:
            for i, how in enumerate(status):
                if how in ("lattice", "solver") and i in trails:
                    table.record(pairs[i][0], pairs[i][1], kind, trails[i], how)
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
        lv, rv = self.store.vars_of(left), self.store.vars_of(right)
        if lv == rv and self._simplifies_true(eq):
            return _Attempt(True)
        order = self.store.cuts_by_id
        unfolded = 0
        for step in range(steps):
            only_l, only_r = lv - rv, rv - lv
            if not only_l and not only_r:
                if common <= 0 or not lv:
                    break
                common -= 1
                batch = [max(lv, key=lambda v: order[v].order)]
                left, lv, right, rv = self._unfold_both(left, lv, right, rv, batch)
            else:
                ml = max((order[v].order for v in only_l), default=-1)
                mr = max((order[v].order for v in only_r), default=-1)
                # A common cut point defined from exclusive ones may be what the other side
                # needs (x2 = 2*x against 2*(x2 - x)): unfold it on both sides.
                excl = only_l | only_r
                bridge = [v for v in lv & rv if self.store.info(v).vars & excl]
                if bridge:
                    left, lv, right, rv = self._unfold_both(left, lv, right, rv, bridge)
                    batch = bridge
                elif ml > mr:
                    batch = [v for v in only_l if order[v].order > mr]
                    left, lv = self._unfold_side(left, lv, batch)
                else:
                    batch = [v for v in only_r if order[v].order > ml]
                    right, rv = self._unfold_side(right, rv, batch)
            unfolded += len(batch)
            # The sides usually meet exactly when their cut points agree; checking now and
            # then on the way also catches cancellations (x - x) before they grow. The
            # equality is built only for a check (building it costs as much as a step).
            eq = None
            if lv == rv or step % 4 == 3:
                eq = self._equal(a, b, left, right, kind)
                if self._simplifies_true(eq):
                    return _Attempt(True)
            if unfolded > max_unfold:
                break
        # Sides that never met differ unless some unmatched cut points cancel: such a
        # proof is rare and a solver call on it is mostly a wasted timeout.
        if lv != rv:
            return _Attempt(False)
        if eq is None:  # the sides as unfolded last
            eq = self._equal(a, b, left, right, kind)
        finite = T.finite_float(a) and T.finite_float(b)
        if finite and (piecewise_equal(left[0], right[0], self._cases) or
                       ite_difference_is_zero(left[0], right[0])):
            return _Attempt(True)
        if not finite and T.is_float(a) and T.is_float(b) and self._split_equal(a, b, left, right):
            return _Attempt(True)
        return _Attempt(eq, bool(lv), (left[0], right[0]) if finite else None)

    def _split_equal(self, a: Any, b: Any, left: list[Any], right: list[Any]) -> bool:
        """Floats whose IEEE class is symbolic (a division by a sum of exponentials): equal
        when the classes are equal for all values of the free constants and the values are
        the same polynomial (then they agree whatever the class). Proving the two apart
        keeps nonlinear real arithmetic away from the solver, which only sees classes."""
        if not (difference_is_zero(left[0], right[0]) or piecewise_equal(left[0], right[0], self._cases)):
            return False
        ka = left[1] if T.symbolic_class(a) else T.float_class(a)
        right_k = right[1] if T.symbolic_class(b) else T.float_class(b)
        same = T.class_equality(ka, right_k)
        if T.simplifies_true(same, self._simplify):
            return True
        # A class that depends on an index (a gather that fills NaN out of range): by cases.
        ta, tb = T.class_term(ka, left[0]), T.class_term(right_k, right[0])
        if ta is not None and tb is not None and piecewise_equal(ta, tb, self._cases):
            return True
        claim = self._claim(same)
        return claim is not None and solve.valid(claim, self.timeout_s)

    def _claim(self, eq: Any) -> Any | None:
        """The solver's formula for a local equality: `eq` under the facts of its free
        constants (`known`); None when an assignment inside them refutes it (`falsify`),
        so that the solver cannot prove it."""
        bounds = self.known.bounds(eq)
        if falsify.refuted(eq, bounds):
            return None
        return solve.assuming(T.formula(eq), [(T.formula(b.var), b) for b in bounds])

    def _equal(self, a: Any, b: Any, left: list[Any], right: list[Any], kind: Kind) -> Any:
        """a == b with their terms replaced by `left` and `right`. Finite floats (the usual
        case) compare by value alone."""
        if T.finite_float(a) and T.finite_float(b):
            return T.value_equality(left[0], right[0])
        return self.alg.element_equal(T.with_terms(a, left), T.with_terms(b, right), kind)

    def _simplifies_true(self, eq: Any) -> bool:
        return T.simplifies_true(eq, self._simplify)

    def _unfold_side(self, terms: list[Any], vs: set[int], batch: list[int]) -> tuple[list[Any], set[int]]:
        self._trail.update(batch)
        return self._substituted(terms, batch), self._unfolded_vars(vs, batch)

    def _unfold_both(self, left: list[Any], lv: set[int], right: list[Any], rv: set[int], batch: list[int]
                     ) -> tuple[list[Any], set[int], list[Any], set[int]]:
        """The same batch unfolded on both sides in one substitution: the sides share most
        of their subterms, which are then rebuilt once."""
        self._trail.update(batch)
        both = self._substituted(left + right, batch)
        n = len(left)
        return both[:n], self._unfolded_vars(lv, batch), both[n:], self._unfolded_vars(rv, batch)

    def _substituted(self, terms: list[Any], batch: list[int]) -> list[Any]:
        """The terms with the batch's cut variables replaced by their definitions. Kept
        per terms and batch: a pair tried again with common cut points unfolded (and the
        sweep's retries) repeats the unfolding steps of its first try exactly."""
        key = (tuple(T.term_id(t) for t in terms), tuple(batch))
        hit = self._unfolding.get(key)
        # The terms themselves are kept and compared: a z3 id may be reused once its term
        # is freed.
        if hit is not None and all(x is t for x, t in zip(hit[0], terms)):
            return list(hit[1])
        cuts = [self.store.info(v) for v in batch]
        # Elements of one tensor unfold the same cut variables into shared subterms (the
        # conditions of a scatter-add over one row's ids): one memo per batch.
        memo = self._memos.setdefault(tuple(sorted(batch)), {})
        out = T.substitute_all(terms, [(c.var, c.term) for c in cuts], memo)
        self._unfolding[key] = (list(terms), out)
        return list(out)

    def _unfolded_vars(self, vs: set[int], batch: list[int]) -> set[int]:
        """The cut variables of a side once `batch` is unfolded in it."""
        new_vs = vs.difference(batch)
        for v in batch:
            new_vs |= self.store.info(v).vars
        return new_vs

