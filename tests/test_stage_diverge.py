"""The stage a bug is in when nothing links past it (stages/diverge.py): the last link cut
short at the other program's first unlinked value, claiming its structural counterpart.
The pair is testdata/stages grad_L4 (4 layers fwd+bwd) and its twin with layer 3's MLP
all-reduce missing, the small form of testdata/depth's 126-layer twin."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tv_mlir.api import prepare
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.stages import run as stages_run
from tv_mlir.stages.diverge import _occurrences, _where, counterpart, divergence_stage

STAGES = Path(__file__).resolve().parents[1] / "testdata" / "stages"


def _cut(other: str) -> stages_run.Cut:
    options = Options(stage_min_elements=0)
    ref = prepare(str(STAGES / "grad_L4.ref.mlir"), options)
    o = prepare(str(STAGES / other), options)
    check_signatures(ref, o)
    cut = stages_run._cut(ref, o, options, None)
    assert cut.chain is not None, cut.why
    return cut


@pytest.fixture(scope="module")
def bug() -> stages_run.Cut:
    return _cut("grad_L4_bug_layer3.shardy.mlir")


def test_the_counterpart_is_the_lineages_own_where_the_lineage_knows() -> None:
    """On the correct pair every occurrence of an op at a source line that the lineage
    links is linked to the counterpart the structure names, under the same layout: the
    rule names what the runs would have, up to the bug."""
    cut = _cut("grad_L4.shardy.mlir")
    chain = cut.chain
    assert chain is not None and cut.outputs_agree
    checked = 0
    for op in chain.o_side.flow:
        key = _where(op)
        link = chain.links.get(op.results[0]) if op.results else None
        if key is None or link is None or link.also or key[0] != "stablehlo.add":
            continue
        if _occurrences(chain.o_side, key)[0] is op:
            continue  # the first has no earlier occurrence to line up with
        found = counterpart(chain, op)
        if found is not None:
            assert found == (link.ref, link.sharding), (op.loc, found, link)
            checked += 1
    assert checked >= 4


def test_the_bug_is_named_in_a_stage_of_its_own_ops(bug: stages_run.Cut) -> None:
    """Layer 3's residual add of the unreduced MLP partial sum: the last link runs from
    there to the outputs (hundreds of ops); the divergence stage is that add, and its proof
    refutes the claim with a counterexample at the stage's inputs, at gen_depth.py:100."""
    assert not bug.outputs_agree and bug.divergence is not None and bug.chain is not None
    last = bug.stages[-1]
    stage = divergence_stage(bug.chain, bug.divergence)
    assert stage is not None
    assert stage.ref_ops <= 3 and last.ref_ops > 100, (stage.ref_ops, last.ref_ops)
    assert any("gen_depth.py:100" in loc for loc in stage.locs), stage.locs
    summary: dict = {}
    rec = stages_run._diverging(bug, Options(jobs=1, cache=False), set(stage.slots), {}, None, summary)
    assert rec is not None and rec.verdict == "not-equivalent", summary.get("divergence")
    assert rec.name.endswith("up to its first unlinked value") and rec.index == len(bug.stages) - 1
    assert rec.first_divergence and "gen_depth.py:100" in rec.first_divergence["loc"], rec.first_divergence


def test_a_claim_that_holds_names_nothing(bug: stages_run.Cut, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a refuted claim names a stage: an earlier occurrence of the add (linked, made
    before the last link) forms no divergence stage, and a divergence stage whose proof
    holds (its verdict forced here) is not named (`_diverging` returns None, and the pair
    keeps the last link as its failed stage). A rule that named the stage without its
    proof would fail here."""
    chain = bug.chain
    assert chain is not None and bug.divergence is not None
    key = _where(bug.divergence)
    assert key is not None
    earlier = [op for op in _occurrences(chain.o_side, key) if op.results[0] in chain.links]
    assert earlier and divergence_stage(chain, earlier[-1]) is None
    stage = divergence_stage(chain, bug.divergence)
    assert stage is not None

    def proved(stages, *args, **kwargs):  # type: ignore[no-untyped-def]
        records, results = real(stages, *args, **kwargs)
        return [replace(r, verdict="equivalent") for r in records], results

    real = stages_run._prove_stages
    monkeypatch.setattr(stages_run, "_prove_stages", proved)
    summary: dict = {}
    assert stages_run._diverging(bug, Options(jobs=1, cache=False), set(stage.slots), {}, None, summary) is None
    assert summary["divergence"]["verdict"] == "equivalent"
