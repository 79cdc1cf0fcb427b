"""A pair whose open elements all read atoms of the case split first asks its queries for
EARLY_QUERY_S, splits by cases, and asks what is still unknown again with the whole
timeout (driver `_early_query_s`, `_solve_again`; docs/cases.md "Cases before the whole
timeout"). The queries are faked here: what is tested is which timeouts are asked and how
the answers combine, not z3."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tv_mlir import driver
from tv_mlir.api import verify
from tv_mlir.prove import cases
from tv_mlir.prove.solve import Outcome

D = Path(__file__).resolve().parents[1] / "testdata" / "periodic"
PAIR = (D / "ring_ref.mlir", D / "ring_periodic.mlir")
RANGE = [("arg3", 0, 200)]


def _record(monkeypatch: pytest.MonkeyPatch, answer: Any) -> list[float]:
    """solve_all faked: records each call's timeout; `answer(timeout)` is every query's status."""
    asked: list[float] = []

    def fake(queries: Any, timeout_s: float, jobs: int) -> list[Outcome]:
        asked.append(timeout_s)
        status = answer(timeout_s)
        return [Outcome(q.output, status, "timeout" if status == "unknown" else "") for q in queries]
    monkeypatch.setattr(driver, "solve_all", fake)
    return asked


def test_cases_settle_the_pair_before_the_whole_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _record(monkeypatch, lambda t: "unknown")
    v = verify(*PAIR, timeout_s=60, assume=RANGE, cache=False)
    assert v.verdict == "equivalent", v.reason
    assert asked == [driver.EARLY_QUERY_S]  # the whole 60 s never asked


def test_what_the_cases_leave_is_asked_with_the_whole_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cases, "PERIODIC", False)  # no atoms for pos: no early query
    asked = _record(monkeypatch, lambda t: "unsat")
    assert verify(*PAIR, timeout_s=60, assume=RANGE, cache=False).verdict == "equivalent"
    assert asked == [60]
    monkeypatch.setattr(cases, "PERIODIC", True)
    monkeypatch.setattr(driver, "_pinned_split", lambda p, sizes: None)
    monkeypatch.setattr(cases, "prove_by_cases", lambda *a, **k: cases.Cases("open", "by cases: forced open"))
    asked = _record(monkeypatch, lambda t: "unknown" if t == driver.EARLY_QUERY_S else "unsat")
    v = verify(*PAIR, timeout_s=60, assume=RANGE, cache=False)
    assert v.verdict == "equivalent", v.reason
    assert asked == [driver.EARLY_QUERY_S, 60]


def test_an_output_nothing_settles_keeps_the_case_split_s_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "_pinned_split", lambda p, sizes: None)
    monkeypatch.setattr(cases, "prove_by_cases", lambda *a, **k: cases.Cases("open", "by cases: forced open"))
    asked = _record(monkeypatch, lambda t: "unknown")
    v = verify(*PAIR, timeout_s=60, assume=RANGE, cache=False)
    assert v.verdict == "unknown"
    assert "solver: timeout; by cases: forced open" in v.reason
    assert asked == [driver.EARLY_QUERY_S, 60]


def test_a_short_timeout_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _record(monkeypatch, lambda t: "unknown")
    monkeypatch.setattr(driver, "_pinned_split", lambda p, sizes: None)
    assert verify(*PAIR, timeout_s=1, assume=RANGE, cache=False).verdict == "unknown"
    assert asked == [1]
