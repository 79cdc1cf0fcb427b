"""Budgets of the own core's term store: a runaway expansion stops with an `unknown` that
names it, never by exhausting memory; inside a scoped budget a check gives up without
taking the proof with it."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir import driver, verify
from tv_mlir.algebra.term import REAL, TermBudget, TermStore


def test_scoped_budget_stops_a_blow_up_and_is_lifted_after() -> None:
    s = TermStore()
    xs = [s.var(f"x{i}", REAL) for i in range(12)]
    with pytest.raises(TermBudget):
        with s.budget(2_000):
            p = s.real(1)
            for x in xs:  # (1 + x0)(1 + x1)... has 2**12 monomials
                p = s.mul(p, s.add(s.real(1), x))
    q = s.mul(s.add(xs[0], xs[1]), s.add(xs[2], xs[3]))  # the store's own limit again
    assert len(q.data) == 4


def test_store_limit_counts_monomials() -> None:
    s = TermStore(limit=300)
    xs = [s.var(f"x{i}", REAL) for i in range(30)]
    with pytest.raises(TermBudget):
        s.mul(s.sum(xs[:15], REAL), s.sum(xs[15:], REAL))  # the vars and sums take ~120, the product 226


def test_expansion_past_its_budget_is_unknown_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair whose output reaches the full expansion (the local proofs leave it to the
    solver) is `equivalent`; with an expansion budget too small for it, `unknown` saying so."""
    a, b = TESTDATA / "pairs/int_floordiv.a.mlir", TESTDATA / "pairs/int_floordiv.b.mlir"
    assert verify(a, b).verdict == "equivalent"
    monkeypatch.setattr(driver, "EXPANSION_TERMS", 1)
    v = verify(a, b)
    assert v.verdict == "unknown"
    assert "full expansion" in v.reason and "1 terms" in v.reason
