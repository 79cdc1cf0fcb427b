"""The stage cut's lineage runs taken by the whole proof of the same pair (`stages/run.py`
`Cut.known`, `driver._trace`), and the numeric runs' per-device observer
(`execute/interp.py` `_on_device`, `no_content_keys`): the proof's fingerprint trace must be
the one it would have made itself, and runs of other programs or other inputs are never
taken."""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tv_mlir.driver as driver
from tv_mlir.algebra import NumericAlgebra
from tv_mlir.api import verify
from tv_mlir.execute.interp import Interpreter, no_content_keys
from tv_mlir.execute.runs import KnownRuns, Run
from tv_mlir.prove.fingerprints import OTHER_FUNCS_INPUTS, Trace, numeric_trace, random_inputs
from tv_mlir.stages import lineage
from tv_mlir.stages import run as stages_run

FLAX = Path(__file__).resolve().parents[1] / "testdata" / "flax"
QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0, cache=False)


def _same_trace(a: Trace, b: Trace) -> None:
    assert list(a.values) == list(b.values)
    for name in a.values:
        assert len(a.values[name]) == len(b.values[name]), name
        for x, y in zip(a.values[name], b.values[name]):
            assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True), name
    assert len(a.outputs) == len(b.outputs)
    for x, y in zip(a.outputs, b.outputs):
        assert all(np.array_equal(p, q, equal_nan=True) for p, q in zip(x, y))
    assert [[(c.value, c.device_a, c.device_b) for c in r] for r in a.checks] == \
        [[(c.value, c.device_a, c.device_b) for c in r] for r in b.checks]
    assert a.other_funcs == b.other_funcs


@pytest.fixture
def whole_after_the_cut(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every cut proved whole (as the flax train step's: one dominant stage), and the proof's
    numeric runs checked against the trace it would have made without the cut's runs."""
    monkeypatch.setattr(stages_run, "DOMINANT_SHARE", 0.0)
    seen: dict[str, Any] = {"made": []}
    own = driver._numeric_runs
    make = driver.numeric_trace

    def made(module: Any, input_sets: list[list[np.ndarray]], max_unroll: int) -> Trace:
        seen["made"].append(len(input_sets))
        return make(module, input_sets, max_unroll)

    monkeypatch.setattr(driver, "numeric_trace", made)

    def numeric_runs(p: Any, known: KnownRuns | None = None) -> None:
        sets = random_inputs(p.types, bounds=p.bounds, signs=driver._signs(p))  # the sets `own` draws
        seen["taken"] = known.usable(p.ref, p.other, sets) if known is not None else []
        own(p, known)
        assert known is None or not known.ref_runs and not known.other_runs  # read once
        for m, t in ((p.ref, p.ref_trace), (p.other, p.other_trace)):
            _same_trace(t, numeric_trace(m, p.input_sets, p.options.max_unroll))
        seen["checked"] = True

    monkeypatch.setattr(driver, "_numeric_runs", numeric_runs)
    return seen


def test_the_whole_proof_takes_the_cuts_runs(whole_after_the_cut: dict[str, Any]) -> None:
    """XLA's partitioned MLP forward and backward (8 devices), cut and then proved whole:
    the lineage's three runs are this proof's input sets 1-3, and the trace with them is
    the trace without them, run for run (values under their device-qualified names,
    outputs, replica checks, the run with other functions)."""
    v = verify(FLAX / "mlp_fwdbwd.ref.mlir", FLAX / "mlp_fwdbwd.partitioned.mlir", **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages is not None and not v.stages["used"], v.stages
    assert whole_after_the_cut["taken"] == [1, 2, 3] and whole_after_the_cut["checked"]
    assert whole_after_the_cut["made"] == [6, 6]  # runs 2 and 3 taken, in both programs


def test_a_bug_proved_whole_after_the_cut_keeps_its_witness(whole_after_the_cut: dict[str, Any]) -> None:
    """The partitioned MLP with its all-reduce dropped, proved whole with the cut's runs:
    still not-equivalent, the counterexample confirmed on XLA."""
    v = verify(FLAX / "mlp_fwd.ref.mlir", FLAX / "mlp_mut_dropped_all_reduce.partitioned.mlir", **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed
    assert whole_after_the_cut["taken"] == [1, 2, 3]


def _pair() -> tuple[Any, Any, list[list[np.ndarray]]]:
    from tv_mlir.api import prepare
    from tv_mlir.frontend.classify import check_signatures
    from tv_mlir.options import Options

    options = Options()
    ref = prepare(FLAX / "mlp_fwd.ref.mlir", options)
    other = prepare(FLAX / "mlp_fwd.partitioned.mlir", options)
    check_signatures(ref, other)  # reads the other's shardings: a per-device program
    return ref, other, random_inputs(ref.global_arg_types())


def _known(ref: Any, other: Any, sets: list[list[np.ndarray]], on: list[list[np.ndarray]]) -> KnownRuns:
    """The lineage's runs of the pair on `on` (input sets 1-3), declared as runs on `sets`."""
    kept_r: list[Run] = []
    kept_o: list[Run] = []
    lineage.trace(ref, on[lineage.RUNS], 64, 10**9, kept_r)
    lineage.trace(other, on[lineage.RUNS], 64, 10**9, kept_o)
    at = range(len(sets))[lineage.RUNS]
    return KnownRuns(ref, other, {k: sets[k] for k in at}, dict(zip(at, kept_r)), dict(zip(at, kept_o)))


def test_runs_of_other_programs_or_inputs_are_not_taken() -> None:
    """Runs are taken only for these very module objects (a copy of one is another
    program as far as the runs know) and only for input sets equal to the proof's, array
    for array (one element moved is another set)."""
    ref, other, sets = _pair()
    known = _known(ref, other, sets, sets)
    assert known.usable(ref, other, sets) == [1, 2, 3]
    assert known.usable(copy.deepcopy(ref), other, sets) == []
    assert known.usable(ref, copy.deepcopy(other), sets) == []
    moved = [list(s) for s in sets]
    moved[2][0] = moved[2][0].copy()
    moved[2][0].flat[0] += 1.0
    assert known.usable(ref, other, moved) == [1, 3]


def test_the_run_with_other_functions_keeps_its_input_set() -> None:
    """`numeric_trace` repeats input set OTHER_FUNCS_INPUTS with other functions, by its
    place in the list it is given: a run at that set or before it is made again, so that
    the set stays at its place (taken, the trace's last run would be of another set)."""
    ref, other, sets = _pair()
    known = _known(ref, other, sets, sets)
    given = dict(known.other_runs)
    assert min(given) <= OTHER_FUNCS_INPUTS  # the lineage's runs include that set
    _same_trace(driver._trace(other, sets, 64, given), numeric_trace(other, sets, 64))


def test_runs_naming_other_values_are_not_spliced() -> None:
    """A given run that names other values than the trace (another program's run: one
    value more, one fewer) makes the trace made whole, not a mix."""
    ref, other, sets = _pair()
    known = _known(ref, other, sets, sets)
    more = {k: Run({**r.values, "%not_a_value": np.zeros(())}, r.outputs, r.checks)
            for k, r in known.other_runs.items()}
    fewer = {k: Run(dict(list(r.values.items())[1:]), r.outputs, r.checks) for k, r in known.other_runs.items()}
    for given in (more, fewer):
        _same_trace(driver._trace(other, sets, 64, given), numeric_trace(other, sets, 64))


def test_runs_on_other_inputs_would_change_the_trace() -> None:
    """What the input check keeps out: the lineage's runs on other inputs, taken as runs on
    the proof's, leave other values in the trace than the proof's own runs."""
    ref, other, sets = _pair()
    others = random_inputs(ref.global_arg_types(), seed=1)
    lying = _known(ref, other, sets, others)
    spliced = driver._trace(other, sets, 64, {k: lying.other_runs[k] for k in (2, 3)})
    own = numeric_trace(other, sets, 64)
    with pytest.raises(AssertionError):
        _same_trace(spliced, own)
    assert _known(ref, other, others, others).usable(ref, other, sets) == []


def test_numeric_runs_observe_every_device_under_its_name() -> None:
    """The numeric algebra keys no arrays alike, so the observer sees each device's results
    as `name@device` (what the fingerprints and the kept runs both name), and the op it is
    given is a copy: the module's own op keeps its names."""
    _, other, sets = _pair()
    assert no_content_keys(NumericAlgebra())
    calls: list[tuple[str, ...]] = []
    first = next(op for op in other.main.body.ops if op.results)
    names = first.results

    def observe(op: Any, results: list[Any]) -> None:
        calls.append(op.results)

    Interpreter(other, NumericAlgebra(), 64, observer=observe).run(sets[1])
    devices = other.num_devices
    assert first.results == names
    assert sum(1 for c in calls if c and c[0].endswith("@3")) > 0
    per_device = [c for c in calls if c and "@" in c[0]]
    assert len(per_device) % devices == 0
