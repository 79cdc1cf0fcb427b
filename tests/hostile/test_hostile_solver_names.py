"""Queries sent to solver worker processes (--jobs 2) cannot be broken by input names: a
backslash, a quote, a bar, unicode, or a name z3 knows as a built-in (`pi`, `and`)."""
from __future__ import annotations

import json
import os

import pytest
import z3
from hostile import cli, named_pair

import tv_mlir
from tv_mlir.prove import solve
from tv_mlir.prove.solve import Query, solve_all, solve_local

# MLIR string escapes: \\ a backslash, \22 a quote, \C3\A9 an e-acute in UTF-8; and one
# unicode character as it is.
NAMES = [("a\\\\b|c\\22d\\C3\\A9", "pi"), ("|x\\\\", "and"), ("λ|", "true")]


def test_jobs_2_on_a_pair_with_hostile_names(tmp_path) -> None:
    a, b = named_pair(*NAMES[0])
    (tmp_path / "a.mlir").write_text(a, encoding="utf-8")
    (tmp_path / "b.mlir").write_text(b, encoding="utf-8")
    verdicts = []
    for jobs in ("1", "2"):
        p = cli("verify", "--json", "--jobs", jobs, "--no-replay", str(tmp_path / "a.mlir"), str(tmp_path / "b.mlir"))
        assert p.returncode == 1, p.stderr
        d = json.loads(p.stdout)
        assert d["stats"]["solver_queries"] == 2, "both outputs must reach the solver"
        assert [o["verdict"] for o in d["outputs"]] == ["not-equivalent", "equivalent"]
        verdicts.append((d["verdict"], d["counterexample"]["inputs"]))
    assert verdicts[0] == verdicts[1]
    inputs = verdicts[1][1]
    assert len(inputs) == 2 and 12345 in inputs.values()


@pytest.mark.parametrize("x_name,y_name", NAMES)
def test_jobs_2_through_the_api(x_name: str, y_name: str) -> None:
    a, b = named_pair(x_name, y_name)
    one, two = (tv_mlir.verify(a, b, jobs=jobs, replay=False) for jobs in (1, 2))
    assert two.stats["solver_queries"] == 2
    assert [o.verdict for o in two.outputs] == ["not-equivalent", "equivalent"]
    assert two.counterexample is not None and one.counterexample is not None
    assert two.counterexample.inputs == one.counterexample.inputs


def _nasty_queries() -> list[Query]:
    names = ["a\\b", 'q"uote', "ba|r", "é|ü", "new\nline", "", "and", "end\\", "|", "x y", "c0", "f0", "pi", "α"]
    xs = [z3.Real(n) for n in names]
    f = z3.Function("weird|f\\", z3.RealSort(), z3.RealSort())
    g = z3.Function("abs", z3.RealSort(), z3.RealSort())  # a user function named like a built-in
    flag = z3.Bool("true")
    queries = [Query(0, z3.And(xs[0] * xs[0] == -1, flag))]  # unsat
    queries += [Query(i, z3.And(f(x) == x + 1, g(x) < 0, x * x == 4 + i, xs[0] == 3 * x), [z3.Not(flag) == (x > 0)])
                for i, x in enumerate(xs)]
    return queries


def test_smt_text_round_trips_whatever_the_names() -> None:
    queries = _nasty_queries()
    for q in queries:
        text = q.smt2()
        assert "|" not in text and "\\" not in text, text
        assert solve._solve_text(text, 5)[0] == solve_local(q, 5).status, q
    assert [o.status for o in solve_all(queries, 5, 2)] == [solve_local(q, 5).status for q in queries]


def test_a_worker_that_dies_or_fails_is_solved_here(monkeypatch) -> None:
    queries = _nasty_queries()[:4]
    want = [solve_local(q, 5).status for q in queries]
    # Forked workers inherit the patched function: one crashes, the others cannot read text.
    monkeypatch.setattr(solve, "_solve_text", lambda text, timeout_s: os._exit(9))
    assert [o.status for o in solve_all(queries, 5, 2)] == want
    monkeypatch.setattr(solve, "_solve_text", lambda text, timeout_s: z3.Solver().from_string("(assert |a\\b|)"))
    assert [o.status for o in solve_all(queries, 5, 2)] == want
