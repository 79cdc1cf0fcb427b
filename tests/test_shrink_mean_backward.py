"""Rule (i), transposed means (docs/shrinking.md, rule i "transposed means"): a mean's
backward divides the cotangent by the count and spreads it over the summed positions (a
sum over a dim of one element on the way is a move, not a sum of one); a partitioned
backward spreads it over each device's columns and divides by the global count, read
through the scale relations; XLA folds a loss's seed into it (+-1/n at each token).
Pairs: testdata/shrink_rules/gen_mean_backward.py (manifest_mean_backward.json,
XLA-checked at the original sizes). Verdicts with the full-size check and the second
witness off, so the rules decide."""
from __future__ import annotations

import json
from typing import Any

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import _assumed_bounds, prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants, facts
from tv_mlir.shrink import plan as plan_module
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
MANIFEST = json.loads((D / "manifest_mean_backward.json").read_text())
XENT_ASSUME = {"labels": (0, 48)}


def _files(pair: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.small.ref.mlir"), str(D / f"{pair}.small.{kind}.mlir")


def _plan(pair: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, kind)
    opts = Options(assume=XENT_ASSUME if pair == "xent_grad" else ())
    r = prepare(ref, opts)
    return plan(_raw(ref, r).module, _raw(other, prepare(other, opts)).module, ranges=_assumed_bounds(r, opts))


def _size(p: ShrinkPlan, where: str) -> int:
    return next(e.verified for e in p.entries if e.where == where)


def _constants(p: ShrinkPlan, program: str) -> list[Any]:
    return [v for (prog, _), v in p.constants.items() if prog == program]


def _verify(pair: str, kind: str) -> Any:
    return tv_mlir.verify(*_files(pair, kind), assume=XENT_ASSUME if pair == "xent_grad" else (), **RULES_OFF)


def test_manifest_ran_on_xla() -> None:
    assert [e["pair"] for e in MANIFEST] == ["mean_grad_across", "mean_grad_tokens", "xent_grad"]
    for e in MANIFEST:
        assert e["ran_on_xla"]
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_the_spread_divisor_names_the_global_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 is both the tokens and hidden; the sharded 64 divides the cotangent spread over 16
    # local columns, 4 shards of hidden: hidden's global count, rewritten with it.
    p = _plan("mean_grad_across", "ok")
    small = _size(p, "x dim 1")
    assert small < 64 and float(small) in _constants(p, "other")
    monkeypatch.setattr(constants, "SPREAD_GLOBALS", False)
    assert _size(_plan("mean_grad_across", "ok"), "x dim 1") == 64  # 16 local columns: no count of 64


def test_a_sum_of_one_element_is_no_mean(monkeypatch: pytest.MonkeyPatch) -> None:
    # The reference's backward sums the cotangent over its dim of one element, then divides
    # by 64: a sum of one element, whose count 1 is not 64, unless it is read as a move.
    monkeypatch.setattr(facts, "UNIT_SUMS", False)
    assert _size(_plan("mean_grad_across", "ok"), "x dim 1") == 64


def test_the_local_count_is_read_as_the_local_count() -> None:
    # The bug's 16 spreads over the 16 local columns: their own count, so it stays a
    # quarter of the reference's 64 (4 shards) at the shrunk sizes.
    p = _plan("mean_grad_across", "bug")
    small = _size(p, "x dim 1")
    assert small < 64 and float(small // 4) in _constants(p, "other") and float(small) not in _constants(p, "other")


@pytest.mark.parametrize("pair", ["mean_grad_across", "mean_grad_tokens", "xent_grad"])
def test_verdicts(pair: str) -> None:
    assert _verify(pair, "ok").verdict == "equivalent"
    v = _verify(pair, "bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"


def _loose(a: Any, k: Any) -> Any:
    """mean_classes loosened: a spread constant is read as the global count of the classes
    it spreads over (every shard factor), whatever its value."""
    if not k.means or any(dev != facts.SPREAD for _, _, dev in k.means):
        return EXACT(a, k)
    out = []
    for operand, dims, _ in k.means:
        cs = tuple(a.class_of[(k.program, operand, d)] for d in dims)
        f = 1
        for c in cs:
            f *= max((n for _, loc, n in a.scales if loc == c), default=1)
        out.append((cs, f))
    return out


EXACT = constants.mean_classes


@pytest.mark.parametrize("count_check", [True, False])
def test_a_reading_that_ignores_the_count_hides_the_bug(monkeypatch: pytest.MonkeyPatch, count_check: bool) -> None:
    # mean_grad_tokens' bug divides the cotangent spread over 32 local columns by 64 (the
    # token count, and z's size: ambiguous) where 128 belongs. Read as the columns' global
    # count whatever its value, 64 becomes hidden's shrunk count, as the reference's 128
    # does. Two guards keep it apart: the count check (64 is no count of the columns, so
    # the constant pins tokens and z) and rule a's order of size values (128 > 64 must
    # stay so). With rule a's order off, the count check alone finds the bug; without
    # both, it hides.
    monkeypatch.setattr(plan_module, "order", lambda *_, **__: constants.Order())
    if not count_check:
        monkeypatch.setattr(constants, "mean_classes", _loose)
    v = _verify("mean_grad_tokens", "bug")
    if count_check:
        assert v.verdict == "not-equivalent", v.reason
    else:
        assert v.verdict == "equivalent", v.reason


def test_rule_a_backs_the_count_check(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _size(_plan("mean_grad_tokens", "bug"), "x dim 1") == 128
    monkeypatch.setattr(constants, "mean_classes", _loose)
    assert _size(_plan("mean_grad_tokens", "bug"), "x dim 1") == 128  # rule a: 128 and 64 never meet


def test_the_folded_seed_is_the_token_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # XLA's partitioned cross-entropy backward adds -1/64 at each token's label and divides
    # 1/64 by each token's softmax sum: the mean's seed over the 64 tokens, spread over a
    # device's 2 x 16 (dp: 2 shards of the batch). Read so, the sequence shrinks; as a
    # literal 64 it is the tokens' count not rewritten with them, which pins them.
    p = _plan("xent_grad", "ok")
    seq = _size(p, "logits dim 1")
    assert seq < 16 and -1.0 / (4 * seq) in _constants(p, "other")
    monkeypatch.setattr(facts, "SEEDS", False)
    assert _size(_plan("xent_grad", "ok"), "logits dim 1") == 16


def test_the_bug_seed_is_the_local_token_count() -> None:
    # -1/32 is a device's 2 x 16 tokens: read as their count, half the reference's.
    p = _plan("xent_grad", "bug")
    seq = _size(p, "logits dim 1")
    assert -1.0 / (2 * seq) in _constants(p, "other") and -1.0 / (4 * seq) not in _constants(p, "other")
