"""Rule (k), partitioned lookups (docs/shrinking.md): an index predicate that only selects,
device by device, between a gathered row and zero, summed by an all_reduce over devices
that partition the assumed range (checked at the original and the planned sizes), is a
gather, not a count (lookups.guarded_lookups, switches lookups.GATHERS and
lookups.PARTITION). Pairs: testdata/shrink_rules/gen_lookup_sums.py
(manifest_lookup_sums.json, XLA-checked at the original sizes), ids assumed in [0, vocab).
Verdicts with the full-size check and the second witness off."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import _assumed_bounds, prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants, counts, lookups
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
SUMS = json.loads((D / "manifest_lookup_sums.json").read_text())
VOCAB = {(e["pair"], e["variant"]): e["sizes"]["vocab"] for e in SUMS}


def _files(pair: str, variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _plan(pair: str, variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, variant, kind)
    opts = Options(assume=(("ids", 0, VOCAB[(pair, variant)]),))
    r, o = prepare(ref, opts), prepare(other, opts)
    return plan(_raw(ref, r).module, _raw(other, o).module, ranges=_assumed_bounds(r, opts))


def _verify(pair: str, variant: str, kind: str) -> tv_mlir.Verdict:
    return tv_mlir.verify(*_files(pair, variant, kind), assume={"ids": (0, VOCAB[(pair, variant)])}, **RULES_OFF)


def _ids(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.where == "ids dim 0")


def test_lookup_sums_manifest_lists_every_pair_ran_on_xla() -> None:
    assert set(VOCAB) == {("lookup_gather", "small"), ("lookup_gather", "big"), ("lookup_count", "small"),
                          ("lookup_table", "small"), ("lookup_table", "big")}
    assert all(e["ran_on_xla"] for e in SUMS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_partitioned_lookup_is_a_gather(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The log-sum-exp over the tokens made rule (k) pin them; read as a gather they shrink.
    n = 32 if variant == "small" else 2048
    assert _ids(_plan("lookup_gather", variant, "ok")) < n
    monkeypatch.setattr(lookups, "GATHERS", False)
    assert _ids(_plan("lookup_gather", variant, "ok")) == n


def test_a_lookup_with_a_word_in_no_block_is_counted() -> None:
    # The bug's blocks leave word `block` out: no partition, the predicates are counted.
    assert _ids(_plan("lookup_gather", "small", "bug")) == 32


def test_lookup_gather_verdicts() -> None:
    ok = _verify("lookup_gather", "small", "ok")
    assert ok.verdict == "equivalent", ok.reason
    assert ok.shrink["applied"], ok.shrink
    bug = _verify("lookup_gather", "small", "bug")
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"


def test_without_the_partition_check_a_count_hides(monkeypatch: pytest.MonkeyPatch) -> None:
    # lookup_count's lookup leaves block 3 out: a count of the other ids, C(k, 3) of it in
    # exp. With the partition checked it is counted (the tokens keep their size) and the
    # bug's division by 3 is found; read as a gather regardless, the tokens shrink to 2.
    bug = _verify("lookup_count", "small", "bug")
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"
    monkeypatch.setattr(lookups, "PARTITION", False)
    # Rule k's constant tables count the lookup of its table of ones in a function (it does
    # not trace a function's argument to its calls' splat), which closes the hole too: off,
    # so that the partition check is what is shown.
    monkeypatch.setattr(counts, "TABLES", False)
    assert _ids(_plan("lookup_count", "small", "bug")) < 3
    assert _verify("lookup_count", "small", "bug").verdict == "equivalent"


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_lookup_offset_table_is_rewritten_with_its_block(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # XLA's form: block starts from a table [0, B, 2B, 3B] indexed by the device, rows
    # gathered at id - start. The table is rewritten with q B', so the lookup partitions at
    # the planned sizes and is a gather there; without the table rule it is counted.
    n = 32 if variant == "small" else 2048
    p = _plan("lookup_table", variant, "ok")  # the default: on (constants.LOOKUP_TABLES)
    assert any(isinstance(v, tuple) for v in p.constants.values()), p.constants
    assert _ids(p) < n
    monkeypatch.setattr(constants, "LOOKUP_TABLES", False)
    p = _plan("lookup_table", variant, "ok")
    assert not any(isinstance(v, tuple) for v in p.constants.values()), p.constants
    # Without the rule something stays whole: since red-team batch 8 the vocabulary (the
    # compare `ids >= table[tp]` splits the ids at the table's entries, which then move with
    # no size: id_splits._number_constants); before, the tokens (rule k counted the lookup).
    vocab = next(e for e in p.entries if e.where == "emb dim 0")
    assert vocab.verified == vocab.original or _ids(p) == n


def test_a_table_that_is_no_block_offset_is_kept() -> None:
    # The bug's table [0, B + 1, 2B + 1, 3B + 1] holds no multiples of B: kept, the blocks
    # do not partition the vocabulary, the predicates are counted and the bug is found.
    assert constants.LOOKUP_TABLES  # the default: the rule is what declines this table
    p = _plan("lookup_table", "small", "bug")
    assert not any(isinstance(v, tuple) for v in p.constants.values()), p.constants
    assert _ids(p) == 32
    bug = _verify("lookup_table", "small", "bug")
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"
    ok = _verify("lookup_table", "small", "ok")
    assert ok.verdict == "equivalent", ok.reason
