"""Proofs by instance compared in lockstep (prove/instances._same_problem): a vocabulary-
sharded embedding lookup's elements are select chains over one index, whose signatures list
the index at every level (quadratic in the vocabulary); such a proved pair is kept and the
next columns are walked against it node by node. The walk must accept only a one-to-one
renaming of free constants of the same facts, with the proof's unfolded definitions read
on both sides: each twin below is a column that differs from the proved ones in one place
and is not equal to its reference, and must stay unproved."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.conftest import count_unfoldings
from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.prove import instances
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.local import LocalProver

V, H, HALF = 64, 5, 32  # vocabulary rows, columns, rows per shard


def _chain(alg: FastAlgebra, idx: Any, rows: list[tuple[int, Any]]) -> Any:
    """What a gather of one column makes: a select chain on idx == row, the last row the default."""
    s = alg.store
    return alg.choose([(s.eq(idx, s.int_(v)), e) for v, e in rows], Kind.FLOAT)


def _lookups(twin: str | None = None) -> tuple[FastAlgebra, CutStore, list[tuple[Any, Any]]]:
    """H columns of an embedding lookup: the reference's chain over all V rows against the sum
    of two shards' masked chains (each cut apart, as an all-reduce's operands are). `twin`
    changes the last column of ours in one place (see the tests)."""
    alg = FastAlgebra()
    cuts = CutStore(alg)
    s = alg.store
    ids, _ = alg.inputs("ids", (1,), Kind.INT, bounds=(0, V - 1))
    table, _ = alg.inputs("table", (V, H), Kind.FLOAT)
    idx = ids[0]
    cuts.origin = Origin("ref", "stablehlo.gather", "loc", "%0", None)
    ref = cuts.cut_array(np.array([_chain(alg, idx, [(v, table[v, h]) for v in range(V)]) for h in range(H)],
                                  dtype=object))
    cuts.origin = Origin("other", "stablehlo.all_reduce", "loc", "%1", None)
    zero = alg.f_const(0.0)
    ours = []
    for h in range(H):
        last = twin is not None and h == H - 1
        col = [table[v, h] for v in range(V)]
        lo_rows = list(range(HALF))
        mask_hi = s.le(s.int_(HALF), idx)
        if last and twin == "shared_constant":  # row 3 read from column 0: E[3, 0] where E[3, h] is due
            col[3] = table[3, 0]
        if last and twin == "coefficient":  # row 5 doubled
            col[5] = alg.f_add(table[5, h], table[5, h])
        if last and twin == "guard":  # row 7's test reads row 8
            lo_rows = [v if v != 7 else 8 for v in lo_rows]
        if last and twin == "unfolded_definition":  # the upper shard's mask one row early
            mask_hi = s.le(s.int_(HALF - 1), idx)
        if last and twin == "identical_subterm":  # the lower shard of column 0 itself
            col[:HALF] = [table[v, 0] for v in range(HALF)]
        p0 = alg.f_select(s.lt(idx, s.int_(HALF)),
                          _chain(alg, idx, [(g, col[v]) for g, v in zip(lo_rows, range(HALF))]), zero)
        p1 = alg.f_select(mask_hi, _chain(alg, idx, [(v, col[v]) for v in range(HALF, V)]), zero)
        parts = cuts.cut_array(np.array([p0, p1], dtype=object))
        ours.append(alg.f_add(parts[0], parts[1]))
    ours_cut = cuts.cut_array(np.array(ours, dtype=object))
    return alg, cuts, list(zip(ref.tolist(), ours_cut.tolist()))


@pytest.mark.parametrize("lockstep", [True, False])
def test_columns_after_the_first_are_instances_in_lockstep(monkeypatch: pytest.MonkeyPatch, lockstep: bool) -> None:
    monkeypatch.setattr(instances, "LOCKSTEP", lockstep)
    alg, cuts, pairs = _lookups()
    calls = count_unfoldings(monkeypatch)
    prover = LocalProver(cuts, alg)
    status = prover.prove_pairs(pairs, Kind.FLOAT, 0.2)
    table = prover.instances
    assert table is not None
    assert all(s is not None for s in status)
    assert len(calls) == 1 and table.hits == H - 1
    # With the switch on, the columns after the first are walked, not signed.
    assert (table.walked > 0) == lockstep


@pytest.mark.parametrize("twin", ["shared_constant", "coefficient", "guard", "unfolded_definition",
                                  "identical_subterm"])
def test_a_column_that_differs_in_one_place_is_not_an_instance(twin: str) -> None:
    """Each twin's last column is not its reference's (at some index the two read different
    entries, or one reads twice an entry); the columns before it are proved by instance.
    A walk that let a constant stand for two (shared_constant, identical_subterm), skipped a
    node's data (coefficient, guard) or did not read the unfolded definitions on the new side
    (unfolded_definition) would prove it."""
    alg, cuts, pairs = _lookups(twin)
    prover = LocalProver(cuts, alg)
    walked: list[int] = []
    real = instances._same_problem

    def spied(*args: Any) -> bool:
        got = real(*args)
        walked.append(got)
        return got
    instances_same = instances._same_problem
    try:
        instances._same_problem = spied  # type: ignore[assignment]
        status = prover.prove_pairs(pairs, Kind.FLOAT, 0.2)
    finally:
        instances._same_problem = instances_same  # type: ignore[assignment]
    assert all(s is not None for s in status[:-1])
    assert status[-1] is None
    assert False in walked  # the twin was compared in lockstep, and rejected there


def test_the_walk_keeps_the_facts_and_the_renaming() -> None:
    """On terms directly: a constant is met only by one of the same facts (an input known
    positive is not an instance of a plain one), and one constant is renamed the same way
    wherever it occurs (x * (x + 1) is not y * (z + 1))."""
    from tv_mlir.algebra.fast import POS_SIGN

    alg = FastAlgebra()
    cuts = CutStore(alg)
    canon = instances._Canon(cuts)
    x, y, z = (alg.inputs(n, (1,), Kind.FLOAT)[0][0].v for n in ("x", "y", "z"))
    p = alg.inputs("p", (1,), Kind.FLOAT, sign=POS_SIGN)[0][0].v
    s = alg.store
    plus1 = lambda t: s.add(t, s.real(1))  # noqa: E731
    same = lambda a, b: instances._same_problem(canon, [a], [b], frozenset())  # noqa: E731
    assert same(plus1(x), plus1(y))
    assert not same(plus1(x), plus1(p))
    assert same(s.mul(x, plus1(x)), s.mul(y, plus1(y)))
    assert not same(s.mul(x, plus1(x)), s.mul(y, plus1(z)))
