"""Proofs by instance (prove/instances.py): a local proof carries over to a pair that is the
same problem over other free constants, and only to such a pair. The signature must tell
apart what the proof read: the sharing of free constants, their facts (bounds, signs), the
definitions the proof unfolded and the integer definitions under the terms."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.conftest import count_unfoldings
from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import POS_SIGN, FastAlgebra
from tv_mlir.prove import falsify, local
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.instances import InstanceTable
from tv_mlir.prove.local import LocalProver


def _store() -> tuple[FastAlgebra, CutStore]:
    alg = FastAlgebra()
    cuts = CutStore(alg)
    cuts.origin = Origin("ref", "stablehlo.add", "loc", "%0", None)
    return alg, cuts


def _columns(n: int, wrong_last: bool = False) -> tuple[FastAlgebra, CutStore, list[tuple[Any, Any]]]:
    """n pairs x*y + x (one cut) against (x*y cut) + x (two cuts): each needs unfolding on
    both sides. With wrong_last the last column's inner cut is x*y + 1: the pair looks like
    the others until that definition is unfolded, and differs."""
    alg, cuts = _store()
    xs, _ = alg.inputs("x", (n,), Kind.FLOAT)
    ys, _ = alg.inputs("y", (n,), Kind.FLOAT)
    ref = cuts.cut_array(alg.add(alg.mul(xs, ys, Kind.FLOAT), xs, Kind.FLOAT))
    inner = alg.mul(xs, ys, Kind.FLOAT)
    if wrong_last:
        inner[-1] = alg.add(inner[-1:], alg.full((1,), 1.0, Kind.FLOAT), Kind.FLOAT)[0]
    ours = cuts.cut_array(alg.add(cuts.cut_array(inner), xs, Kind.FLOAT))
    return alg, cuts, list(zip(ref.tolist(), ours.tolist()))


def test_columns_after_the_first_are_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    alg, cuts, pairs = _columns(6)
    calls = count_unfoldings(monkeypatch)
    prover = LocalProver(cuts, alg)
    status = prover.prove_pairs(pairs, Kind.FLOAT, 0.2)
    assert status == ["simplified"] * 6
    assert len(calls) == 1 and prover.instances is not None and prover.instances.hits == 5


def test_without_the_switch_every_column_is_unfolded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "INSTANCES", False)
    alg, cuts, pairs = _columns(6)
    calls = count_unfoldings(monkeypatch)
    assert LocalProver(cuts, alg).prove_pairs(pairs, Kind.FLOAT, 0.2) == ["simplified"] * 6
    assert len(calls) == 6


def test_a_pair_that_differs_only_in_an_unfolded_definition_is_not_an_instance() -> None:
    alg, cuts, pairs = _columns(6, wrong_last=True)
    prover = LocalProver(cuts, alg)
    table = prover.instances
    assert table is not None
    # Before unfolding, the wrong column looks like every other one: only what the proof
    # unfolded tells it apart.
    shallow = [_signature(table, a, b, Kind.FLOAT) for a, b in (pairs[0], pairs[-1])]
    assert shallow[0] == shallow[1]
    status = prover.prove_pairs(pairs, Kind.FLOAT, 0.2)
    assert status[:-1] == ["simplified"] * 5 and status[-1] is None


def _signature(table: InstanceTable, a: Any, b: Any, kind: Kind, unfold: frozenset[int] = frozenset()) -> Any:
    pair = table._pair(a, b, kind)
    assert pair is not None
    full = table._unfolded(pair[1], unfold, by_position=False)
    assert full is not None
    return pair[0], full[0]


def test_signatures_keep_the_sharing_of_free_constants() -> None:
    alg, cuts = _store()
    x, _ = alg.inputs("x", (2,), Kind.FLOAT)
    y, _ = alg.inputs("y", (2,), Kind.FLOAT)
    z, _ = alg.inputs("z", (2,), Kind.FLOAT)
    table = InstanceTable(cuts)
    mul = lambda a, b: alg.mul(a, b, Kind.FLOAT)[0]  # noqa: E731
    # x0*y0 against x0*z0 (the left factor shared), x1*y1 against y1*z1 (the right one
    # shared), x1*y1 against x1*z1 (a renaming of the first)
    first = _signature(table, mul(x[:1], y[:1]), mul(x[:1], z[:1]), Kind.FLOAT)
    other_sharing = _signature(table, mul(x[1:], y[1:]), mul(y[1:], z[1:]), Kind.FLOAT)
    renamed = _signature(table, mul(x[1:], y[1:]), mul(x[1:], z[1:]), Kind.FLOAT)
    assert first == renamed and first != other_sharing


def test_signatures_keep_the_facts_of_free_constants() -> None:
    alg, cuts = _store()
    table = InstanceTable(cuts)
    i, _ = alg.inputs("i", (2,), Kind.INT, bounds=(0, 10))
    j, _ = alg.inputs("j", (1,), Kind.INT, width=32)
    p, _ = alg.inputs("p", (1,), Kind.FLOAT, sign=POS_SIGN)
    x, _ = alg.inputs("x", (2,), Kind.FLOAT)
    one = alg.full((1,), 1, Kind.INT)
    sq = lambda a: alg.add(alg.mul(a, a, Kind.INT), one, Kind.INT)[0]  # noqa: E731
    bounded = [_signature(table, sq(i[k:k + 1]), sq(i[k:k + 1]), Kind.INT) for k in (0, 1)]
    assert bounded[0] == bounded[1]  # a renaming with the same bounds
    assert _signature(table, sq(j), sq(j), Kind.INT) != bounded[0]
    fx = lambda a: alg.add(a, alg.full((1,), 1.0, Kind.FLOAT), Kind.FLOAT)[0]  # noqa: E731
    assert _signature(table, fx(x[:1]), fx(x[:1]), Kind.FLOAT) == _signature(table, fx(x[1:]), fx(x[1:]), Kind.FLOAT)
    assert _signature(table, fx(p), fx(p), Kind.FLOAT) != _signature(table, fx(x[:1]), fx(x[:1]), Kind.FLOAT)


def test_signatures_look_through_integer_cut_variables() -> None:
    """The case split on an index reads integer cut variables' definitions whether or not
    the proof unfolded them: two lookups whose clamped indices differ are different
    problems, though each is a select on one integer cut point."""
    alg, cuts = _store()
    table = InstanceTable(cuts)
    ids, _ = alg.inputs("ids", (2,), Kind.INT, width=32)
    e, _ = alg.inputs("e", (2,), Kind.FLOAT)
    lo, hi3, hi5 = (alg.full((1,), v, Kind.INT) for v in (0, 3, 5))

    def lookup(k: int, hi: np.ndarray) -> Any:
        idx = cuts.cut_array(alg.min(alg.max(ids[k:k + 1], lo, Kind.INT), hi, Kind.INT))
        hit = alg.compare("EQ", idx, lo, Kind.INT, False)
        return alg.select(hit, e[:1], e[1:], Kind.FLOAT)[0]  # a select on the integer cut point

    a3, b3, a5 = lookup(0, hi3), lookup(1, hi3), lookup(0, hi5)
    assert _signature(table, a3, a3, Kind.FLOAT) == _signature(table, b3, b3, Kind.FLOAT)
    assert _signature(table, a3, a3, Kind.FLOAT) != _signature(table, a5, a5, Kind.FLOAT)


def _wrong_columns(n: int) -> tuple[FastAlgebra, CutStore, list[tuple[Any, Any]]]:
    """n pairs x*y + x against (x*y cut) + y: the runs would tell them apart, but as local
    proofs they reach the solver, which finds them different."""
    alg, cuts = _store()
    xs, _ = alg.inputs("x", (n,), Kind.FLOAT)
    ys, _ = alg.inputs("y", (n,), Kind.FLOAT)
    ref = cuts.cut_array(alg.add(alg.mul(xs, ys, Kind.FLOAT), xs, Kind.FLOAT))
    ours = cuts.cut_array(alg.add(cuts.cut_array(alg.mul(xs, ys, Kind.FLOAT)), ys, Kind.FLOAT))
    return alg, cuts, list(zip(ref.tolist(), ours.tolist()))


@pytest.mark.parametrize("switch", [True, False])
def test_a_solver_failure_is_not_asked_again_for_an_instance(monkeypatch: pytest.MonkeyPatch, switch: bool) -> None:
    """The flax train step spent 13 s of 20 on 16 local solver calls that all timed out,
    each the same problem over another device's constants."""
    monkeypatch.setattr(local, "INSTANCES", switch)
    # These pairs differ at most points: the refutation before the solver call
    # (`prove/falsify.py`) would keep them from the solver, whose failures are counted here.
    monkeypatch.setattr(falsify, "REFUTE", False)
    asked: list[int] = []
    real = local.solve.prove_batch

    def counted(items: list[tuple[int, Any]], timeout_s: float) -> list[int]:
        asked.append(len(items))
        return real(items, timeout_s)
    monkeypatch.setattr(local.solve, "prove_batch", counted)
    alg, cuts, pairs = _wrong_columns(6)
    prover = LocalProver(cuts, alg)
    assert prover.prove_pairs(pairs[:1], Kind.FLOAT, 0.2) == [None]  # one op's pairs
    first = sum(asked)
    assert prover.prove_pairs(pairs[1:], Kind.FLOAT, 0.2) == [None] * 5  # the next op's
    assert first == 1 and sum(asked) - first == (0 if switch else 5)


@pytest.mark.parametrize("switch", [True, False])
def test_verify_counts_the_merges_by_instance(monkeypatch: pytest.MonkeyPatch, switch: bool) -> None:
    """--json stats: merged_by_instance, the local proofs carried over; the verdict is the
    same either way (sequence-parallel plan of testdata/sharded)."""
    from tests.conftest import TESTDATA
    from tv_mlir.api import verify
    from tv_mlir.prove import cuts

    monkeypatch.setattr(local, "INSTANCES", switch)
    # The plan's partial sums would otherwise meet their reference sums structurally
    # (cuts.PARTIAL_SUMS), with no local proof left to carry over.
    monkeypatch.setattr(cuts, "PARTIAL_SUMS", False)
    d = TESTDATA / "sharded"
    v = verify(d / "seq_parallel.ref.mlir", d / "seq_parallel.shardy.mlir", cache=False)
    assert v.verdict == "equivalent", v.reason
    assert (v.stats["merged_by_instance"] > 0) == switch, v.stats
