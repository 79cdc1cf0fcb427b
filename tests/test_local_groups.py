"""Local proofs in groups (prove/local.py `prove_pairs(groups=...)`, prove/sweep.py
`_value_of`): the elements of one value tried against one reference value stand or fall
together. A shard's partial scatter-add that the random runs cannot tell from the full one
fails for every element; after GROUP_FAILURES failures the rest of that group is left
unproved without unfolding, and a group with a proof in it is never cut short."""
from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import count_unfoldings
from tv_mlir.algebra import Kind
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.prove import local
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.local import GROUP_FAILURES, LocalProver


@pytest.fixture(autouse=True)
def _every_pair_unfolded(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests count unfoldings: a pair proved as an instance of another (`instances`)
    is not unfolded at all."""
    monkeypatch.setattr(local, "INSTANCES", False)


def _pairs(n: int) -> tuple[CutStore, FastAlgebra, list[tuple[Any, Any]], list[tuple[Any, Any]]]:
    """n provable pairs (x_i + y_i against y_i + x_i) and n pairs whose sides do not meet
    within one unfolding step (x_i + y_i against (x_i * x_i) + 1, cut at two levels)."""
    alg = FastAlgebra()
    xs, _ = alg.inputs("x", (n,), Kind.FLOAT)
    ys, _ = alg.inputs("y", (n,), Kind.FLOAT)
    cuts = CutStore(alg)
    cuts.origin = Origin("ref", "stablehlo.add", "loc", "%0", None)
    ref = cuts.cut_array(alg.add(xs, ys, Kind.FLOAT))
    cuts.origin = Origin("other", "stablehlo.add", "loc", "%1", None)
    ours = cuts.cut_array(alg.add(ys, xs, Kind.FLOAT))
    square = cuts.cut_array(alg.mul(xs, xs, Kind.FLOAT))
    wrong = cuts.cut_array(alg.add(square, alg.full(square.shape, 1.0, Kind.FLOAT), Kind.FLOAT))
    good = list(zip(ref.tolist(), ours.tolist()))
    bad = list(zip(ref.tolist(), wrong.tolist()))
    return cuts, alg, good, bad


def test_a_failing_group_stops_after_its_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    cuts, alg, _, bad = _pairs(8)
    calls = count_unfoldings(monkeypatch)
    prover = LocalProver(cuts, alg)
    status = prover.prove_pairs(bad, Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * len(bad))
    assert status == [None] * len(bad)
    assert len(calls) == GROUP_FAILURES


def test_pairs_without_a_group_are_all_tried(monkeypatch: pytest.MonkeyPatch) -> None:
    cuts, alg, _, bad = _pairs(8)
    calls = count_unfoldings(monkeypatch)
    LocalProver(cuts, alg).prove_pairs(bad, Kind.FLOAT, 0.2, deep=0, steps=1, groups=[None] * len(bad))
    assert len(calls) == len(bad)


def test_a_group_with_a_proof_is_never_cut_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """One proved pair first, then failures past the limit, then provable pairs: all are
    tried and the provable ones proved."""
    cuts, alg, good, bad = _pairs(8)
    pairs = good[:1] + bad[: GROUP_FAILURES + 2] + good[1:]
    calls = count_unfoldings(monkeypatch)
    status = LocalProver(cuts, alg).prove_pairs(pairs, Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * len(pairs))
    assert len(calls) == len(pairs)
    assert status[0] == "simplified" and all(s == "simplified" for s in status[GROUP_FAILURES + 3:])
    assert all(s is None for s in status[1: GROUP_FAILURES + 3])


def test_groups_are_separate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failing group does not stop another group's pairs."""
    cuts, alg, good, bad = _pairs(8)
    pairs = bad + good
    status = LocalProver(cuts, alg).prove_pairs(pairs, Kind.FLOAT, 0.2, deep=0, steps=1,
                                                groups=["bad"] * len(bad) + ["good"] * len(good))
    assert status[len(bad):] == ["simplified"] * len(good)


def test_the_sweep_groups_by_the_reference_value() -> None:
    """`Sweeper._value_of`: the op result a reference element was cut from; None for an
    input (no group: inputs are tried one by one)."""
    from tv_mlir.prove.sweep import Sweeper

    cuts, alg, good, _ = _pairs(3)
    sweeper = Sweeper.__new__(Sweeper)
    sweeper.store = cuts
    sites = {sweeper._value_of(r) for r, _ in good}
    assert len(sites) == 1 and next(iter(sites)).value == "%0"
    xs, _ = alg.inputs("z", (1,), Kind.FLOAT)
    assert sweeper._value_of(xs[0]) is None
    assert T.is_folded(1) and sweeper._value_of(1) is None



def test_a_ledger_carries_a_group_across_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same value merged on the next device (`Sweeper._prove_todo` keeps one ledger):
    a group that failed GROUP_FAILURES times with no proof is not unfolded again; without
    the ledger each call starts afresh."""
    cuts, alg, _, bad = _pairs(8)
    calls = count_unfoldings(monkeypatch)
    prover = LocalProver(cuts, alg)
    ledger = local.GroupLedger()
    prover.prove_pairs(bad[:4], Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * 4, ledger=ledger)
    assert len(calls) == GROUP_FAILURES
    prover.prove_pairs(bad[4:], Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * 4, ledger=ledger)
    assert len(calls) == GROUP_FAILURES
    prover.prove_pairs(bad[4:], Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * 4)
    assert len(calls) == 2 * GROUP_FAILURES


def test_a_ledger_never_stops_a_group_proved_in_an_earlier_call(monkeypatch: pytest.MonkeyPatch) -> None:
    cuts, alg, good, bad = _pairs(8)
    prover = LocalProver(cuts, alg)
    ledger = local.GroupLedger()
    assert prover.prove_pairs(good[:1], Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"], ledger=ledger) == ["simplified"]
    prover.prove_pairs(bad, Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * len(bad), ledger=ledger)
    status = prover.prove_pairs(good[1:], Kind.FLOAT, 0.2, deep=0, steps=1, groups=["g"] * 7, ledger=ledger)
    assert status == ["simplified"] * 7


def test_the_sweep_groups_a_value_across_devices_but_not_inputs() -> None:
    """`sweep._group`: the other program's value without its device, with the reference
    value; a reference input is no group."""
    from tv_mlir.prove.sweep import _group

    ref = Origin("ref", "stablehlo.add", "loc", "%0", None)
    assert _group("%5", ref) == _group("%5@0".partition("@")[0], ref) != _group("%6", ref)
    assert _group("%5", None) is None
