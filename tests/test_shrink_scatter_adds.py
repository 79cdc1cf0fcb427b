"""Scatter-adds by data indices, the lookup's transpose (docs/shrinking.md, "Scatter-adds by
data indices"; tv_mlir/shrink/scatters.py, switch scatters.DATA_SCATTER): the embedding
gradient `R[v] = sum_t [ids_t = v] u_t` read as `onehot(ids)^T u`, the vocabulary indexed by
data, the tokens summed under rule (k)'s count of the one-hot predicate. Pairs:
testdata/shrink_rules/gen_scatter_adds.py (manifest_scatter_adds.json, XLA-checked at the
original sizes), ids assumed in [0, vocab). Verdicts with the full-size check and the second
witness off, so that the rule is what is tested."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA, assert_confirmed_at_original_sizes
from tv_mlir.api import _assumed_bounds, prepare
from tv_mlir.options import Options
from tv_mlir.shrink import counts, scatters
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
PAIRS = json.loads((D / "manifest_scatter_adds.json").read_text())
SIZES = {(e["pair"], e["variant"]): e["sizes"] for e in PAIRS}
BUGS = ["scatter_rows", "scatter_count", "scatter_combiner", "scatter_drop", "scatter_clamp", "scatter_positions",
        "scatter_at_count"]


def _files(pair: str, variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.{variant}.ref.mlir"), str(D / f"{pair}.{variant}.{kind}.mlir")


def _plan(pair: str, variant: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, variant, kind)
    opts = Options(assume=(("ids", 0, SIZES[(pair, variant)]["vocab"]),))
    r, o = prepare(ref, opts), prepare(other, opts)
    return plan(_raw(ref, r).module, _raw(other, o).module, ranges=_assumed_bounds(r, opts))


def _verify(pair: str, variant: str, kind: str) -> tv_mlir.Verdict:
    return tv_mlir.verify(*_files(pair, variant, kind), assume={"ids": (0, SIZES[(pair, variant)]["vocab"])},
                          **RULES_OFF)


def _size(p: ShrinkPlan, where: str) -> int:
    return next(e.verified for e in p.entries if e.where == where)


def test_scatter_adds_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {p for p, _ in SIZES} == set(BUGS)
    assert all(e["ran_on_xla"] for e in PAIRS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_the_embedding_gradient_shrinks_its_tokens_and_vocabulary(variant: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    s = SIZES[("scatter_rows", variant)]
    p = _plan("scatter_rows", variant, "ok")
    assert _size(p, "u dim 0") < s["tokens"] and _size(p, "result 0 dim 0") < s["vocab"]
    vocab = next(e for e in p.entries if e.where == "result 0 dim 0")
    assert "indexed by data" in vocab.argument
    # Without the rule the scatter addresses the vocabulary and its tokens by index: kept.
    monkeypatch.setattr(scatters, "DATA_SCATTER", False)
    p = _plan("scatter_rows", variant, "ok")
    assert _size(p, "u dim 0") == s["tokens"] and _size(p, "result 0 dim 0") == s["vocab"]


def test_the_correct_twin_is_equivalent_at_the_shrunk_sizes() -> None:
    v = _verify("scatter_rows", "small", "ok")
    assert v.verdict == "equivalent", v.reason
    assert v.shrink and v.shrink.get("shrunk"), v.shrink


@pytest.mark.parametrize("pair", BUGS)
def test_every_bug_twin_is_found_and_confirmed_at_the_original_sizes(pair: str) -> None:
    v = _verify(pair, "small", "bug")
    assert_confirmed_at_original_sizes(v)


def test_every_correct_twin_is_equivalent() -> None:
    for pair in BUGS:
        v = _verify(pair, "small", "ok")
        assert v.verdict == "equivalent", (pair, v.reason)


def test_duplicates_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    # C(k, 3) of each row's token count: D = 3, T = 2, d = 1, so 5 tokens (8 verified); the
    # bug (/ 3 instead of / 3!) shows only where a row holds 3 tokens.
    n = SIZES[("scatter_count", "small")]["tokens"]
    tokens = _size(_plan("scatter_count", "small", "bug"), "ids dim 0")
    assert 5 <= tokens < n
    # Loosened (the tokens read as free summands, Newton's degree alone): 2 tokens, where
    # no row holds 3, and the bug hides.
    monkeypatch.setattr(counts, "_scatter_predicate", lambda *a, **k: None)
    assert _size(_plan("scatter_count", "small", "bug"), "ids dim 0") < 3
    assert _verify("scatter_count", "small", "bug").verdict == "equivalent"


def test_the_clamp_at_the_vocabularys_end_keeps_room_for_it() -> None:
    # The bug's `V - 2` is a size constant (rule a): the vocabulary keeps 2 x 2 + 2.
    assert _size(_plan("scatter_clamp", "small", "bug"), "result 0 dim 0") >= 6


def test_a_scatter_whose_combiner_is_not_add_is_not_read_as_a_sum() -> None:
    # max combines duplicates by order, no sum: the addressed dim and the tokens stay pinned.
    s = SIZES[("scatter_combiner", "small")]
    p = _plan("scatter_combiner", "small", "bug")
    assert _size(p, "u dim 0") == s["tokens"] and _size(p, "result 0 dim 0") == s["vocab"]


def test_a_scatter_that_promises_unique_or_sorted_ids_is_not_read(tmp_path: Path) -> None:
    # `unique_indices` / `indices_are_sorted`: a promise the shrunk ids break more easily,
    # with no sum to argue about where it is broken: the scatter pins as before.
    s = SIZES[("scatter_rows", "small")]
    ref, other = _files("scatter_rows", "small", "ok")
    for flag in ("unique_indices", "indices_are_sorted"):
        promised = tmp_path / f"{flag}.ref.mlir"
        text = Path(ref).read_text()
        assert f"{flag} = false" in text
        promised.write_text(text.replace(f"{flag} = false", f"{flag} = true"))
        opts = Options(assume=(("ids", 0, s["vocab"]),))
        r, o = prepare(str(promised), opts), prepare(other, opts)
        p = plan(_raw(str(promised), r).module, _raw(other, o).module, ranges=_assumed_bounds(r, opts))
        assert _size(p, "u dim 0") == s["tokens"] and _size(p, "result 0 dim 0") == s["vocab"], flag


def test_rows_picked_by_positions_keep_the_rows_and_the_tokens() -> None:
    # R[t // 2] += u_t: which tokens share a row depends on the sizes; kept whole, as a
    # gather at positions keeps its rows (and the bug, the pairs shifted by one, is found).
    s = SIZES[("scatter_positions", "small")]
    p = _plan("scatter_positions", "small", "bug")
    assert _size(p, "u dim 0") == s["tokens"] and _size(p, "result 0 dim 0") == s["vocab"]
    assert "iota" in next(e.reason for e in p.entries if e.where == "u dim 0")


def test_a_count_as_the_row_has_no_degree(monkeypatch: pytest.MonkeyPatch) -> None:
    # k = #{x_t > 0} as the row a scatter-add writes: [k = v] is no polynomial in k, so the
    # tokens are kept (rule k, "meet a non-polynomial op") and the bug (rows 12 and up added,
    # nothing while k <= 11) is found at the original sizes.
    n = SIZES[("scatter_at_count", "small")]["tokens"]
    assert _size(_plan("scatter_at_count", "small", "bug"), "x dim 0") == n
    # Loosened (a count in the ids read as a sum of the updates, degree 1): 4 tokens, k <= 4,
    # and the bug hides.
    orig = counts._Flow.op

    def loose(self: counts._Flow, op: Any, deg: dict[str, int]) -> list[int]:
        if op.name == "stablehlo.scatter" and self.data_scatter(op):
            ds = [deg.get(x, 0) for x in op.operands]
            if any(ds):
                return [max(ds)] * len(op.results)
        return orig(self, op, deg)

    monkeypatch.setattr(counts._Flow, "op", loose)
    assert _size(_plan("scatter_at_count", "small", "bug"), "x dim 0") < 12
    assert _verify("scatter_at_count", "small", "bug").verdict == "equivalent"
