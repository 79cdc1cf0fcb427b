"""Rule (i) of docs/shrinking.md: a mean's divisor names the classes its sum runs over.

Pairs in testdata/shrink_mean/ (testdata/gen_shrink_mean.py): a Llama-shaped layer at
hidden 64 = 8 heads x 8 head_dim, where RMSNorm's divisor 64 is also the size of the q
projection's output class. Verdicts are taken with the full-size check and the second
witness off, so that the shrunk proof (and, for bugs, the replay at the original sizes)
is what decides."""
from __future__ import annotations

import json
from functools import cache

import pytest

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants
from tv_mlir.shrink.facts import ProgramFacts, role_constants
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_mean"
MANIFEST = {e["pair"]: e for e in json.loads((D / "manifest.json").read_text())}
CHECKS_OFF = {"full_size_check": "off", "second_witness": False}
AMBIGUOUS = "could be the size of more than one dimension"


def _files(pair: str) -> tuple[str, str]:
    return str(D / f"{pair}.ref.mlir"), str(D / f"{pair}.other.mlir")


def _verify(pair: str) -> tv_mlir.Verdict:
    return tv_mlir.verify(*_files(pair), **CHECKS_OFF)


def _modules(pair: str) -> tuple[object, object]:
    ref, other = _files(pair)
    r, o = prepare(ref, Options()), prepare(other, Options())
    return _raw(ref, r).module, _raw(other, o).module


@cache
def _plan(pair: str) -> ShrinkPlan:
    return plan(*_modules(pair))


def _hidden(entries: list[dict]) -> dict:
    """The map entry of x's last dim (hidden)."""
    found = [e for e in entries if e["where"] == "x dim 1" or e["where"] == "arg0 dim 1"]
    assert len(found) == 1, entries
    return found[0]


def _map_hidden(shrink: dict) -> tuple[str, dict]:
    for kind in ("shrunk", "kept"):
        for e in shrink[kind]:
            if e["where"] in ("x dim 1", "arg0 dim 1"):
                return kind, e
    raise AssertionError(shrink)


def test_manifest_lists_every_pair() -> None:
    assert set(MANIFEST) == {"mean_ok", "mean_ok_big", "mean_ok_qnorm", "mean_bug_headdim", "mean_bug_wrongsum",
                             "mean_bug_63", "mean_shared"}
    for e in MANIFEST.values():
        for f in e["files"].values():
            assert (D / f).exists(), f


@pytest.mark.parametrize("pair", ["mean_ok", "mean_ok_qnorm"])
def test_correct_pair_is_equivalent_with_hidden_shrunk(pair: str) -> None:
    v = _verify(pair)
    assert v.verdict == "equivalent", v.reason
    kind, e = _map_hidden(v.shrink)
    assert kind == "shrunk" and e["original"] == 64 and e["verified"] < 64, e


def test_two_means_of_one_value_over_different_classes_shrink_apart() -> None:
    # RMSNorm's 64 divides the sum over hidden, q's 64 the sum over heads x head_dim:
    # each is tied to its own sum, and the two classes take different sizes.
    p = _plan("mean_ok_qnorm")
    hidden = [e for e in p.entries if e.where == "x dim 1"][0]
    q_out = [e for e in p.entries if e.where == "wq dim 1"][0]
    assert hidden.verified < 64 and q_out.verified < 64 and hidden.verified != q_out.verified
    # The reference divides both sums; the other multiplies q's by the reciprocal.
    values = set(p.constants.values())
    assert {float(hidden.verified), float(q_out.verified), 1.0 / q_out.verified} <= values, p.constants


def test_realistic_hidden_4096_shrinks() -> None:
    # The Llama-3-8B shape: hidden 4096 = 32 heads x 128 head_dim.
    p = _plan("mean_ok_big")
    hidden = [e for e in p.entries if e.where == "x dim 1"][0]
    assert hidden.original == 4096 and hidden.verified < 4096, hidden
    # sum / 4096 and sum * (1/4096) become sum / n' and sum * (1/n').
    assert set(p.constants.values()) == {float(hidden.verified), 1.0 / hidden.verified}, p.constants
    v = _verify("mean_ok_big")
    assert v.verdict == "equivalent", v.reason


def test_the_rule_names_itself_for_the_class_it_shrinks() -> None:
    # tie_constants' notes: what the shrink map's argument for hidden should carry.
    ref, other = _modules("mean_ok")
    p = _plan("mean_ok")
    facts = [ProgramFacts.of("ref", ref), ProgramFacts.of("other", other)]
    ks = [k for fa in facts for k in role_constants(fa)]
    means = [k for k in ks if k.means]
    assert {k.role for k in means} == {"divisor", "reciprocal"}, ks
    notes: dict[int, str] = {}
    tied, pins, _, _ = constants.tie_constants(p.analysis, constants.sites(p.analysis, facts), ks, p.sizes,
                                               notes=notes)
    hidden = [e for e in p.entries if e.where == "x dim 1"][0]
    assert hidden.cls in notes and notes[hidden.cls].startswith("rule i: the mean divisor 64"), notes
    assert hidden.cls not in pins, pins


def test_the_map_argument_names_rule_i() -> None:
    kind, e = _map_hidden(_verify("mean_ok").shrink)
    assert kind == "shrunk" and "rule i" in e["argument"], e


@pytest.mark.parametrize("pair", ["mean_bug_headdim", "mean_bug_wrongsum", "mean_bug_63"])
def test_bug_twin_is_not_equivalent_confirmed(pair: str) -> None:
    v = _verify(pair)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed and c.confirmed_at == "original sizes", c


def test_wrong_sum_bug_is_found_with_both_means_tied() -> None:
    # Both programs' 64s are means (over hidden, over heads x head_dim): the rule ties
    # each, hidden shrinks, and the bug is still there at the shrunk sizes.
    v = _verify("mean_bug_wrongsum")
    kind, e = _map_hidden(v.shrink)
    assert kind == "shrunk", e
    assert v.verdict == "not-equivalent", v.reason


def test_a_divisor_that_is_not_its_sums_count_stays_ambiguous() -> None:
    # The bug divides a sum over head_dim (8) by 64: no mean, so 64 names hidden or the
    # q output class, and both keep their size.
    kind, e = _map_hidden(_plan("mean_bug_headdim").summary())
    assert kind == "kept" and AMBIGUOUS in e["reason"], e
    kind, e = _map_hidden(_plan("mean_bug_63").summary())
    assert kind == "kept" and "63" in e["reason"], e


def test_a_constant_shared_with_a_plain_scale_stays_ambiguous() -> None:
    v = _verify("mean_shared")
    assert v.verdict == "equivalent", v.reason
    kind, e = _map_hidden(v.shrink)
    assert kind == "kept" and e["original"] == 64 and AMBIGUOUS in e["reason"], e
    ref, _ = _modules("mean_shared")
    [k] = [k for k in role_constants(ProgramFacts.of("ref", ref)) if k.value == 64]
    assert k.means is None  # one use is a multiply of q, not a mean


@pytest.mark.parametrize("pair", ["mean_ok", "mean_ok_qnorm", "mean_ok_big"])
def test_without_the_rule_hidden_stays_pinned(pair: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "MEAN_DIVISORS", False)
    kind, e = _map_hidden(plan(*_modules(pair)).summary())
    assert kind == "kept" and AMBIGUOUS in e["reason"], e


def test_without_the_rule_the_correct_pair_keeps_hidden_in_the_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(constants, "MEAN_DIVISORS", False)
    v = _verify("mean_ok")
    assert v.verdict == "equivalent", v.reason
    kind, e = _map_hidden(v.shrink)
    assert kind == "kept" and AMBIGUOUS in e["reason"], e
