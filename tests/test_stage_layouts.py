"""A reference value the sharded program reads under two layouts in one stage (XLA's FSDP
weight, sharded and all-gathered) is one stage input: its copies are sliced from it by
their layouts, so the stage proof knows them equal (stages/extract.py, shared slots).
The pair is testdata/layouts (testdata/gen_layouts.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tv_mlir.api import prepare, verify
from tv_mlir.execute.spmd import scatter
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.ir import Module, Sharding
from tv_mlir.options import Options
from tv_mlir.prove.fingerprints import random_inputs
from tv_mlir.stages import lineage
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.extract import StagePair
from tv_mlir.stages.hashing import stage_hash

LAYOUTS = Path(__file__).resolve().parents[1] / "testdata" / "layouts"
REF = LAYOUTS / "two_layouts.ref.mlir"
QUICK = dict(full_size_check="off", second_witness=False, stage_min_elements=0)


PAIRS = {"two_layouts": "two_layouts.partitioned.mlir", "partial_and_sum": "partial_and_sum.shardy.mlir"}


@pytest.fixture(autouse=True)
def _programs_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the cut of the other program in its own order (a stage that
    reads w under two layouts, a dominant stage); in the reference's order
    (`stages_run.SCHEDULE`) two_layouts is cut into one-op stages with no such stage
    (tests/test_stage_schedule_default.py)."""
    monkeypatch.setattr(stages_run, "SCHEDULE", False)


def _cut(pair: str = "two_layouts") -> tuple[stages_run.Cut, Module]:
    options = Options(stage_min_elements=0)
    ref = prepare(str(LAYOUTS / f"{pair}.ref.mlir"), options)
    other = prepare(str(LAYOUTS / PAIRS[pair]), options)
    check_signatures(ref, other)
    cut = stages_run._cut(ref, other, options, None)
    assert cut.chain is not None, cut.why
    return cut, ref


def _shared(stage: StagePair) -> list[int]:
    """The stage's inputs that are shared slots (a reference value's whole)."""
    return [k for k, a in enumerate(stage.other.main.body.args) if ".whole" in a]


def test_two_layouts_of_a_weight_are_one_stage_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage that reads w sharded and all-gathered takes w once, and every stage holds
    on its own: no stage fails, no span is widened, the pair is not proved whole. (Before
    shared slots the two copies were independent inputs, the stage ended unknown with a
    spurious counterexample, and the whole proof closed the pair.) Its last stage holds most
    of the ops: the stages are kept here (DOMINANT_SHARE off), they are what is tested."""
    monkeypatch.setattr(stages_run, "DOMINANT_SHARE", 2.0)
    v = verify(REF, LAYOUTS / "two_layouts.partitioned.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    st = v.stages
    assert st["used"] and "failed" not in st and "whole" not in st and "widened" not in st, st.get("failed")
    assert all(r["verdict"] == "equivalent" for r in st["list"])
    cut, _ = _cut()
    shared = [s for s in cut.stages if _shared(s)]
    assert shared, [s.other.main.body.args for s in cut.stages]
    for s in shared:
        assert len(set(s.slots)) == len(s.slots), s.slots  # one slot per reference value


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_each_copy_is_its_layouts_block_of_the_shared_input(pair: str) -> None:
    """Run the stage's sharded program: every value it takes from a shared slot holds, on
    every device, the block that value's lineage layout places there (as the executor
    scatters a global input), and the lineage's layouts differ (two copies, two layouts).
    A slot shared through parts (its input one more dim, a part per device group): the
    partial copy holds its group's part, the other copies blocks of the parts' sum."""
    cut, _ = _cut(pair)
    assert cut.chain is not None
    links = cut.chain.links
    stage = next(s for s in cut.stages if _shared(s))
    other = stage.other
    n = other.num_devices
    inputs = random_inputs(other.global_arg_types())[1:2]
    values = lineage.trace(other, inputs, max_unroll=16, max_elements=10**6)
    for k in _shared(stage):
        ref_value = stage.slots[k]
        copies = [v for v, link in links.items() if link.ref == ref_value and v in values]
        layouts = {links[v].sharding for v in copies}
        assert len(layouts) >= 2, layouts
        x = inputs[0][k]
        for v in copies:
            lay = links[v].sharding
            assert lay is not None
            if lay.unreduced:
                by_group = Sharding(lay.mesh, (lay.unreduced, *lay.dims))
                want = [b[0] for b in scatter(x, by_group, n, "").parts]
            else:
                whole = x.sum(axis=0) if x.ndim > len(lay.dims) else x  # parts: their sum
                want = scatter(whole, lay, n, "").parts
            got = values[v][0]
            for d in range(n):
                np.testing.assert_array_equal(np.asarray(got[d]), want[d], err_msg=f"{v} on device {d}")


def test_the_hash_sees_how_a_copy_derives() -> None:
    """Two stages that differ only in the offsets a copy is sliced at are different proofs."""
    cut, _ = _cut()
    stage = next(s for s in cut.stages if _shared(s))
    body = stage.other.main.body
    tables = [op for op in body.ops if op.name == "stablehlo.constant" and ".table" in op.results[0]]
    assert tables
    op = tables[0]
    swapped = np.asarray(op.attrs["value"])[::-1].copy()
    assert not np.array_equal(swapped, op.attrs["value"])
    ops = [type(op)(op.name, op.operands, op.results, op.result_types, {**op.attrs, "value": swapped})
           if o is op else o for o in body.ops]
    other = _with_ops(stage.other, ops)
    assert stage_hash(stage.ref, stage.other) != stage_hash(stage.ref, other)


def _with_ops(m: Module, ops: list) -> Module:
    from dataclasses import replace

    body = replace(m.main.body, ops=ops)
    return replace(m, funcs={**m.funcs, m.entry: replace(m.main, body=body)})


def test_a_wrong_copy_stays_not_equivalent() -> None:
    """The all-gathered copy holds w's dp halves swapped (the sharded copy is right): the
    verdict is not-equivalent, with a counterexample XLA confirms at the original sizes."""
    v = verify(REF, LAYOUTS / "two_layouts_bug_swapped_copy.partitioned.mlir", cache=False, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed


def test_a_value_read_as_parts_and_as_their_sum_is_one_stage_input() -> None:
    """psum(s * p) reads p = x @ w as this device's part and s as the all-reduced whole:
    one stage takes x @ w as parts and their sum, and holds on its own (before, s was a
    free input of its own, the stage failed and a span of four stages proved it)."""
    v = verify(LAYOUTS / "partial_and_sum.ref.mlir", LAYOUTS / "partial_and_sum.shardy.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    st = v.stages
    assert st["used"] and "failed" not in st and "whole" not in st and "widened" not in st, st.get("widened")
    cut, _ = _cut("partial_and_sum")
    stage = next(s for s in cut.stages if _shared(s))
    k = _shared(stage)[0]
    assert k in stage.partial  # parts: no sign or range facts of the value apply to them


def test_the_sum_all_reduced_over_the_wrong_axis_stays_not_equivalent() -> None:
    v = verify(LAYOUTS / "partial_and_sum.ref.mlir", LAYOUTS / "partial_and_sum_bug_dp.shardy.mlir", cache=False,
               **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed


# A scan whose sharded body carries the residual stream twice: whole and as this device's
# tp block (testdata/gen_layouts.py, write_scan_pair).
SCAN_REF = LAYOUTS / "scan_two_layouts.ref.mlir"


def test_a_value_carried_under_two_layouts_is_one_loop_input() -> None:
    """The loop is proved by induction (a body and a condition stage, no unrolling, no
    whole proof), and its body stage takes the carried stream once, whole, with both
    copies sliced from it. (Before, the second copy matched no carried value of the
    reference loop, the stage was unrolled and failed at free inputs, and the pair was
    proved whole.)"""
    v = verify(SCAN_REF, LAYOUTS / "scan_two_layouts.shardy.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    st = v.stages
    assert st["used"] and "failed" not in st and "whole" not in st and "widened" not in st, st.get("failed")
    names = [r["name"] for r in st["list"]]
    assert any(n.endswith("loop body") for n in names) and any(n.endswith("loop condition") for n in names), names
    options = Options(stage_min_elements=0)
    ref, other = prepare(SCAN_REF, options), prepare(LAYOUTS / "scan_two_layouts.shardy.mlir", options)
    check_signatures(ref, other)
    cut = stages_run._cut(ref, other, options, None)
    body = next(s for s in cut.stages if s.name.endswith("loop body"))
    assert _shared(body) and len(set(body.slots)) == len(body.slots), (body.slots, body.other.main.body.args)


def test_a_stale_copy_of_the_carried_value_stays_not_equivalent() -> None:
    """The whole copy is gathered before the residual add, so it lags a layer: the body
    stage fails on that copy's next value and a random run shows the bug, confirmed by XLA."""
    v = verify(SCAN_REF, LAYOUTS / "scan_two_layouts_bug_stale_copy.shardy.mlir", cache=False, **QUICK)
    assert v.verdict == "not-equivalent", v.reason
    assert v.stages["failed"]["name"].endswith("loop body"), v.stages["failed"]
    assert v.counterexample is not None and v.counterexample.confirmed


def test_checking_one_copy_per_carried_value_would_hide_the_stale_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation the test above guards against: the body proof checks the next value of
    only one copy of each reference value (here the last, the block: right whenever the
    whole copy it reads is), and the stale whole copy passes as `equivalent`."""
    from tv_mlir.stages import loops

    def last_copy_only(align: list[int]) -> list[int]:
        return [p for p, q in enumerate(align) if q >= 0 and q not in align[p + 1:]]

    monkeypatch.setattr(loops, "_proved_next", last_copy_only)
    v = verify(SCAN_REF, LAYOUTS / "scan_two_layouts_bug_stale_copy.shardy.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent"  # wrong: what checking every copy prevents


def test_a_cut_dominated_by_one_stage_is_proved_whole() -> None:
    """The same pair with the default DOMINANT_SHARE: one stage holds most of the
    reference's ops, so the cut buys nothing and the pair is proved whole, same verdict."""
    v = verify(REF, LAYOUTS / "two_layouts.partitioned.mlir", cache=False, **QUICK)
    assert v.verdict == "equivalent", v.reason
    assert v.stages is not None and not v.stages["used"], v.stages
    assert "of the reference's" in v.stages["reason"] and "proved whole" in v.stages["reason"], v.stages
