"""Proof by cases over periodic atoms (docs/cases.md, "Periodic atoms"): an integer input of
a wide range that the open elements read only through a residue mod M is enumerated over M
consecutive values. The term layer (`algebra.periodic.period`) and the pairs of
testdata/gen_periodic.py through `verify`."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import blind_first_search
from tv_mlir.algebra import periodic
from tv_mlir.algebra.term import INT, Term, TermStore
from tv_mlir.algebra.term_eval import evaluate
from tv_mlir.api import verify
from tv_mlir.prove import cases

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testdata"))
import gen_periodic  # noqa: E402

D = Path(__file__).resolve().parents[1] / "testdata" / "periodic"
RANGE = [("arg3", 0, 200)]


def _forms() -> tuple[TermStore, Term, Term, dict[str, Term]]:
    s = TermStore()
    x, y = s.var("x", INT), s.var("y", INT)

    def k(v: int) -> Term:
        return s.int_(v)

    def jnp_mod(a: Term, m: int) -> Term:  # a - m * idiv(a, m), as jnp's % of a >= 0 reads
        return s.sub(a, s.scale(s.idiv(a, k(m)), m))

    r16 = jnp_mod(x, 16)
    forms = {
        "residue 16": r16,
        "imod 6": s.imod(x, k(6)),
        "scaled residue": s.add(s.scale(r16, 3), k(5), y),
        "residue of 2x + y + 1": s.imod(s.add(s.scale(x, 2), y, k(1)), k(6)),
        "lcm 4, 6": s.add(s.imod(x, k(4)), s.imod(x, k(6))),
        "select on a residue": s.ite(s.lt(r16, k(3)), s.mul(y, r16), k(7)),
        "x itself": x,
        "idiv alone": s.idiv(x, k(16)),
        "residue plus x": s.sub(s.scale(x, 2), s.scale(s.idiv(x, k(16)), 16)),
        "x squared inside": s.imod(s.mul(x, x), k(4)),
        "compare with x": s.ite(s.lt(x, k(100)), r16, k(0)),
        "period 128": s.imod(x, k(128)),
        "no x": s.add(y, k(2)),
    }
    return s, x, y, forms


EXPECTED = {"residue 16": 16, "imod 6": 6, "scaled residue": 16, "residue of 2x + y + 1": 6, "lcm 4, 6": 12,
            "select on a residue": 16, "x itself": None, "idiv alone": None, "residue plus x": None,
            "x squared inside": None, "compare with x": None, "period 128": None, "no x": 1}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_period_of_each_form(name: str) -> None:
    s, x, _, forms = _forms()
    assert periodic.period(s, [forms[name]], x, 64) == EXPECTED[name]


def test_a_found_period_holds_numerically() -> None:
    """Each form given a period M takes the same value at x and x + M (exact evaluation at
    random points, negative x included): what the case split relies on."""
    s, x, _, forms = _forms()
    rng = random.Random(0)
    for name, t in forms.items():
        m = periodic.period(s, [t], x, 64)
        if m is None:
            continue
        for _ in range(40):
            xv, yv = rng.randint(-500, 500), rng.randint(-50, 50)
            assert evaluate(t, {"x": xv, "y": yv}) == evaluate(t, {"x": xv + m, "y": yv}), name


def test_forms_without_a_period_really_have_none() -> None:
    """The forms refused a period are not periodic with any period up to 64 on these points:
    the refusals are not over-cautious on these (and a loosened matcher would be wrong)."""
    s, x, _, forms = _forms()
    for name in ("x itself", "idiv alone", "residue plus x", "compare with x"):
        t = forms[name]
        for m in range(1, 65):
            assert any(evaluate(t, {"x": xv, "y": 3}) != evaluate(t, {"x": xv + m, "y": 3})
                       for xv in range(0, 200, 7)), (name, m)


def test_periods_combine_over_every_root() -> None:
    s, x, _, forms = _forms()
    assert periodic.period(s, [forms["residue 16"], forms["imod 6"]], x, 64) == 48
    assert periodic.period(s, [forms["residue 16"], forms["imod 6"]], x, 32) is None
    assert periodic.period(s, [forms["residue 16"], forms["x itself"]], x, 64) is None


def _verify(name: str) -> str:
    return verify(D / "ring_ref.mlir", D / f"{name}.mlir", timeout_s=2, assume=RANGE, cache=False).verdict


def test_ring_split_is_equivalent_over_the_residues(monkeypatch: pytest.MonkeyPatch) -> None:
    """pos in [0, 200) is 200 values, past the case budget; the slot is pos mod 8, so 8
    cases. Without the periodic atoms the solver's timeout leaves it unknown."""
    assert _verify("ring_periodic") == "equivalent"
    monkeypatch.setattr(cases, "PERIODIC", False)
    assert _verify("ring_periodic") == "unknown"


def test_slot_of_period_24_is_equivalent() -> None:
    assert _verify("ring_periodic_mod24") == "equivalent"


def test_bug_twin_of_period_24_is_refuted_on_xla() -> None:
    """bug_mod12 differs only at pos mod 24 in 12..15 (and 20..23 for other caches): the 24
    cases must reach them; the counterexample is XLA's."""
    v = verify(D / "ring_ref.mlir", D / "ring_periodic_bug_mod12.mlir", timeout_s=2, assume=RANGE, cache=False)
    assert v.verdict == "not-equivalent"
    assert v.counterexample is not None and v.counterexample.confirmed


@pytest.fixture
def _first_search_blind(monkeypatch: pytest.MonkeyPatch) -> None:
    """bug_late's difference shows on random inputs with pos >= 100, and the solver may find
    its model (depending on the machine's load): both skipped on the first run."""
    blind_first_search(monkeypatch)


@pytest.mark.usefixtures("_first_search_blind")
def test_a_read_of_pos_outside_a_residue_is_not_covered(monkeypatch: pytest.MonkeyPatch) -> None:
    """bug_late drops the second block's write once pos >= 100: pos is read outside a
    residue, so it gets no periodic atom and stays unknown. Counting that read as periodic
    (the loosened matcher) proves it equivalent over the 8 residues, which XLA refutes
    (gen_periodic.py --list: 52 positions differ)."""
    assert _verify("ring_periodic_bug_late") == "unknown"
    monkeypatch.setattr(periodic, "BARE_READS_BREAK", False)
    assert _verify("ring_periodic_bug_late") == "equivalent"


def test_bug_late_differs_on_xla() -> None:
    assert gen_periodic.differing("ring_periodic_bug_late")[:2] == [100, 101]


def test_periodic_atoms_only_over_terms_of_the_inputs() -> None:
    """An input read only through x mod 16 is an atom over 16 values from 0; a free constant
    that is no input (a cut point left in the terms, which could read x bare) refuses it."""
    s, x, y, forms = _forms()
    assert x.leaf is not None
    s.bounds[x.leaf.id] = (0, 999)
    inputs, names = [np.array(x, dtype=object), np.array(y, dtype=object)], ["pos", "y"]
    found = cases.periodic_atoms(inputs, names, [forms["scaled residue"]], {})
    assert [(a.name, a.lo, a.hi) for a in found.values()] == [("pos (mod 16)", 0, 15)]
    cut = s.var("cut7", INT)
    assert cases.periodic_atoms(inputs, names, [s.add(forms["scaled residue"], cut)], {}) == {}
    s.bounds[x.leaf.id] = (0, 15)  # no more values than residues: nothing gained
    assert cases.periodic_atoms(inputs, names, [forms["scaled residue"]], {}) == {}
