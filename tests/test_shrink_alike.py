"""Rule (a), classes of one size (docs/shrinking.md): an integer constant that is the size
(or size - k) of several classes of one original size, the embedding's and the LM head's
vocabulary, makes them grow to one size and is rewritten with it, where it pinned both
before. Pairs: testdata/shrink_rules/gen_alike.py (manifest_alike.json: a reference, a
correct twin and a bug twin, XLA-checked at the original sizes). Verdicts are taken with
the full-size check and the second witness off, so that the rule is what is tested."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import plan as plan_module
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
ALIKE = json.loads((D / "manifest_alike.json").read_text())


def _files(pair: str, variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _plan(pair: str, variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, variant, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _vocab(p: ShrinkPlan) -> dict[str, int]:
    return {e.where: e.verified for e in p.entries if e.original in (64, 32000)}


def test_alike_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in ALIKE} == {("vocab_alike", "small"), ("vocab_alike", "big")}
    assert all(e["ran_on_xla"] for e in ALIKE)
    for e in ALIKE:
        for f in e["files"].values():
            assert (D / f).exists(), f


@pytest.mark.parametrize("variant", ["small", "big"])
def test_vocabularies_of_one_size_shrink_to_one_size(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The LM head's vocabulary needs Newton's 3 (the cubed logits' mean), the embedding's
    # 2 per shard: both end at 4, and the clip's v - 1 is 3 in both programs.
    sizes = _vocab(_plan("vocab_alike", variant, "ok"))
    assert sizes == {"emb dim 0": 4, "w dim 1": 4}, sizes
    monkeypatch.setattr(plan_module, "EQUALIZE", False)
    off = _vocab(_plan("vocab_alike", variant, "ok"))
    assert off["emb dim 0"] == off["w dim 1"] == (64 if variant == "small" else 32000), off


def test_the_bug_twin_keeps_the_clips_apart() -> None:
    # The bug's v - 2 is a 'size - 2' constant of both classes: they keep 2 x 2 + 2 = 6,
    # one size (8), where v - 1 and v - 2 still differ.
    sizes = _vocab(_plan("vocab_alike", "big", "bug"))
    assert sizes == {"emb dim 0": 8, "w dim 1": 8}, sizes


def test_correct_twin_is_equivalent_shrunk() -> None:
    v = tv_mlir.verify(*_files("vocab_alike", "big", "ok"), **RULES_OFF)
    assert v.verdict == "equivalent", v.reason
    assert v.shrink["applied"], v.shrink


def test_bug_twin_is_found_and_confirmed_at_the_original_sizes() -> None:
    # The witness's target v' - 1 is embedded as v - 1 (embed.py follows the target into
    # jnp's take_along_axis function and leaves out its row iota), so XLA reproduces it.
    v = tv_mlir.verify(*_files("vocab_alike", "big", "bug"), **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert "replayed at the original sizes" in (v.reason or ""), v.reason
