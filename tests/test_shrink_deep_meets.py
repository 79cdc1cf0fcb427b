"""Rule (a)'s size values that meet, read through deep call chains (helper-54; docs/jax.md,
"At Llama-3-8B widths"): the data-only sources (`meets._all_sources`) are one pass in an
order where each value comes after what it is read from (`meets._ordered`), not passes
repeated until nothing changes, of which 12 were allowed and each crossed one more call
(the 8B backward needed 15, these pairs 69): past them the sources fell back to the
literals', in which what only picks rows meets everything. Pairs:
testdata/shrink_rules/gen_deep_meets.py (manifest_deep_meets.json, XLA-checked at the
original sizes): rule a's `pair_clamp` with the ids and the rows through 16 and 32 nested
calls. Verdicts with the full-size check and the second witness off, so that the rules are
what is tested."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import clamps, constants, meets
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import plan

D = TESTDATA / "shrink_rules"
PAIRS = json.loads((D / "manifest_deep_meets.json").read_text())


def _files(variant: str, kind: str) -> tuple[str, str]:
    return str(D / f"deep_clamp.{variant}.ref.mlir"), str(D / f"deep_clamp.{variant}.{kind}.mlir")


def _sizes(variant: str, kind: str) -> tuple[int, int]:
    """(vocabulary, tokens) as planned."""
    ref, other = _files(variant, kind)
    p = plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)
    by = {e.where: e.verified for e in p.entries}
    return by["emb dim 0"], by["ids dim 0"]


def _unsettled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sources as they were when the passes did not settle: no order, so the literals'
    sources (what 12 passes fell back to)."""
    monkeypatch.setattr(meets, "_ordered", lambda fa: None)


def test_deep_meets_manifest_lists_every_pair_ran_on_xla() -> None:
    assert {(e["pair"], e["variant"]) for e in PAIRS} == {("deep_clamp", "small"), ("deep_clamp", "big")}
    assert all(e["ran_on_xla"] for e in PAIRS)


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_token_count_behind_calls_does_not_bound_the_vocabulary(variant: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    vocab, tokens = _sizes(variant, "ok")
    assert vocab < tokens
    _unsettled(monkeypatch)
    vocab, tokens = _sizes(variant, "ok")
    assert vocab > tokens


@pytest.mark.parametrize("variant", ["small", "big"])
def test_a_clamp_at_the_token_count_behind_calls_still_orders_the_vocabulary(
        variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    vocab, tokens = _sizes(variant, "bug")
    assert vocab > tokens
    # Loosened (size values apart unless one program combines them; the gather's own clamp
    # no size value): the bug's clamp no longer orders the vocabulary.
    monkeypatch.setattr(constants, "apart", lambda a, b, same: not (same and a.carried & b.carried))
    monkeypatch.setattr(clamps, "CLAMPS", False)
    vocab, tokens = _sizes(variant, "bug")
    assert vocab <= tokens


def test_deep_meet_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = tv_mlir.verify(*_files("small", "ok"), **RULES_OFF)
    assert ok.verdict == "equivalent", ok.reason
    bug = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert bug.verdict == "not-equivalent", bug.reason
    assert bug.counterexample is not None and bug.counterexample.confirmed_at == "original sizes"
    monkeypatch.setattr(constants, "apart", lambda a, b, same: not (same and a.carried & b.carried))
    monkeypatch.setattr(clamps, "CLAMPS", False)
    hidden = tv_mlir.verify(*_files("small", "bug"), **RULES_OFF)
    assert hidden.verdict == "equivalent", hidden.reason


def test_the_ordered_sources_are_the_settled_passes() -> None:
    # The one pass in order finds what the passes repeated until nothing changes find (69
    # here, so allowed 100), value by value.
    ref, _ = _files("small", "ok")
    from tv_mlir.shrink.dims import analyse
    from tv_mlir.shrink.facts import ProgramFacts
    m = _raw(ref, prepare(ref, Options())).module
    a = analyse(m, m)
    fa = ProgramFacts.of("ref", m)
    entry = {v: k for k, v in enumerate(m.main.body.args)}
    out: dict[str, frozenset[str]] = {v: frozenset({f"input {k}"}) for v, k in entry.items()}
    for _ in range(100):
        before = dict(out)
        meets._pass(fa, a, entry, out, True)
        if out == before:
            break
    assert out == before
    ordered = meets._all_sources(fa, a, True)
    assert {v: ordered[v] for v in out} == out
