"""Proof by cases over integer input elements of a small --assume range (tv_mlir/prove/cases.py,
tv_mlir/algebra/substitute.py; docs/cases.md).

The reproducer (testdata/clients6/masked_split_softmax, gen_clients6.py): a softmax under a
length mask `where(pos < n, s, -inf)` split into two blocks merged by max rescaling, n
assumed in [1, 5). Its twins (testdata/gen_cases.py, each run on XLA by `--list`): the
second block's mask off by one (differs at n = 2, 3) and the second block's mask capped at
3 (differs only at n = 4, the range's last value)."""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import z3

from conftest import TESTDATA
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.base import Kind, input_symbol
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.algebra.substitute import decide, pinned
from tv_mlir.api import prepare
from tv_mlir.execute.interp import Interpreter
from tv_mlir.options import Options
from tv_mlir.prove import cases
from tv_mlir.prove.fingerprints import align, numeric_trace, random_inputs
from tv_mlir.prove.sweep import Sweeper

REF = TESTDATA / "clients6" / "masked_split_softmax.ref.mlir"
SPLIT = TESTDATA / "clients6" / "masked_split_softmax.split.mlir"
BUG_LE = TESTDATA / "cases" / "masked_split_softmax_bug_le.split.mlir"
BUG_LAST = TESTDATA / "cases" / "masked_split_softmax_bug_last.split.mlir"


# -- the term layer: both programs run symbolically, the output pair split by cases ----------

def _pair(ref: Path, other: Path, lo: int = 1, hi: int = 4):
    """The output element of both programs over the same symbolic inputs, as the driver's
    phases leave it for the solver (the other program's values swept into the reference's,
    then expanded to the inputs), the algebra, the atoms of n in [lo, hi] (closed) and the
    inputs' constraints as z3 formulas."""
    alg = FastAlgebra()
    mods = [prepare(p, Options()) for p in (ref, other)]
    types = mods[0].global_arg_types()
    bounds = [(lo, hi) if Kind.of(t) is Kind.INT else None for t in types]
    sets = random_inputs(types, bounds=bounds)
    traces = [numeric_trace(m, sets, 4) for m in mods]
    align(*traces)
    inputs, constraints = [], []
    for k, (t, b) in enumerate(zip(types, bounds)):
        arr, cons = alg.inputs(input_symbol(k, f"arg{k}"), t.shape, Kind.of(t), bounds=b, width=32)
        inputs.append(arr)
        constraints += cons
    sweeper = Sweeper(alg, traces[0], traces[1], timeout_s=0.5)
    sweeper.record_inputs(inputs, sets, types)
    a = Interpreter(mods[0], alg, 4, observer=sweeper.record_ref).run(inputs)[0][()]
    b = Interpreter(mods[1], alg, 4, observer=sweeper.merge_other).run(inputs)[0][()]
    outs = [sweeper.store.expand_element(x) for x in (a, b)]
    atoms = cases.small_atoms(inputs, ["arg0", "arg1", "arg2"], bounds)
    return outs, alg, atoms, [T.formula(c) for c in constraints]


@pytest.fixture(autouse=True)
def _cases_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    # z3's timeout is wall time: at load ~3 a case that takes ~0.1 s alone passed the 5 s
    # cap (test_pinned_model_gives_the_case_value: "arg2 = 3 not proved (timeout)"). These
    # tests ask what the cases decide, not how fast; the helper below gives 20 s in all.
    monkeypatch.setattr(cases, "CASE_TIMEOUT_S", 20.0)


def _by_cases(ref: Path, other: Path, lo: int = 1, hi: int = 4, **kw) -> cases.Cases:
    (a, b), alg, atoms, constraints = _pair(ref, other, lo, hi)
    return cases.prove_by_cases([(a, b, Kind.FLOAT)], alg, atoms, constraints, 20.0, **kw)


def test_reproducer_proved_by_cases() -> None:
    found = _by_cases(REF, SPLIT)
    assert found.status == "proved", found.detail
    assert found.cases == 4  # n = 1, 2, 3, 4: the half-open [1, 5) read as closed [1, 4]


def test_one_case_is_the_same_term() -> None:
    """Each case closes by the term layer alone: the masks fold, the classes fold by the
    signs of sums of exps, the exps combine. Without the sign decisions they do not."""
    (a, b), alg, atoms, _ = _pair(REF, SPLIT)
    (atom,) = atoms.values()
    store = alg.store
    for n in range(1, 5):
        terms = pinned(store, T.element_terms(a) + T.element_terms(b), {atom.id: n})
        assert T.identical(T.with_terms(a, terms[:2]), T.with_terms(b, terms[2:])), n
    plain = T.substitute_all(T.element_terms(a) + T.element_terms(b), [(atom.sym, store.int_(3))])
    assert not T.identical(T.with_terms(a, plain[:2]), T.with_terms(b, plain[2:]))


def test_off_by_one_twin_refuted_at_a_case() -> None:
    found = _by_cases(REF, BUG_LE)
    assert found.status == "refuted", found.detail
    assert found.cases == 1  # n = 1 proved, n = 2 refuted
    assert found.model is not None
    assert "arg2 = 2" in found.detail


def test_last_value_twin_refuted_at_the_last_case() -> None:
    found = _by_cases(REF, BUG_LAST)
    assert found.status == "refuted", found.detail
    assert found.cases == 3 and "arg2 = 4" in found.detail


def test_last_value_twin_proved_if_the_last_case_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism the test above guards: an enumeration that stops one value short (a
    half-open bound read as exclusive twice) proves the twin."""
    def short(atoms):
        return itertools.product(*(range(a.lo, a.hi) for a in atoms))
    monkeypatch.setattr(cases, "assignments", short)
    assert _by_cases(REF, BUG_LAST).status == "proved"


def test_budget_edge() -> None:
    """64 values are enumerated; 65 are not (the output stays open)."""
    assert _by_cases(REF, SPLIT, 1, 64).status == "proved"
    assert _by_cases(REF, SPLIT, 1, 65).status == "open"
    assert cases.small_atoms([np.empty((), dtype=object)], ["n"], [(1, 65)]) == {}


def test_no_assumption_enumerates_nothing() -> None:
    (a, b), alg, _, constraints = _pair(REF, SPLIT)
    arr = np.empty((), dtype=object)
    assert cases.small_atoms([arr, arr], ["x", "n"], [None, None]) == {}
    found = cases.prove_by_cases([(a, b, Kind.FLOAT)], alg, {}, constraints, 5.0)
    assert found.status == "open"


def test_atoms_are_elements_with_their_own_ranges() -> None:
    alg = FastAlgebra()
    arr, _ = alg.inputs("in0.lens", (2,), Kind.INT, bounds=(1, 16), width=32)
    atoms = cases.small_atoms([arr], ["lens"], [(1, 16)])
    assert sorted(a.name for a in atoms.values()) == ["lens[0]", "lens[1]"]
    row0 = alg.store.add(arr[0], alg.store.int_(1))
    assert [a.name for a in cases.atoms_in([row0], atoms)] == ["lens[0]"]
    assert len(list(cases.assignments(list(atoms.values())))) == 256


# -- the sign decisions ------------------------------------------------------------------------

def test_decide_by_known_signs() -> None:
    s = FastAlgebra().store
    x = s.var("x", "real")
    e = s.uf("exponential", [x])
    assert decide(s, "eq0", s.add(e, e)) is False  # exp + exp > 0
    assert decide(s, "lt0", e) is False
    assert decide(s, "lt0", s.neg(e)) is True
    assert decide(s, "le0", s.neg(e)) is True
    assert decide(s, "eq0", x) is None  # nothing known of x
    assert decide(s, "lt0", s.sub(e, s.real(1))) is None  # exp(x) - 1 has either sign
    assert decide(s, "eq0", s.mul(x, x)) is None  # x^2 >= 0 may be 0
    assert decide(s, "lt0", s.mul(x, x)) is False


def test_pinned_model_gives_the_case_value() -> None:
    """A refuted case's model sets the atom to the case's value (the pins are constraints)."""
    found = _by_cases(REF, BUG_LAST)
    assert found.model is not None
    assert found.model.value(z3.Int("in2.arg2")).as_long() == 4
