"""Issue 12 item 5: the shrink map says per class which argument carries the verdict over
to the original sizes (Newton, free, rule X, or kept), in the plan and in the verdict's
JSON. tests/test_shrink_rules.py checks that the rule pairs' classes have one; here every
pair of the second red-team batch (rules a-d, f, h, k at work) and the mean divisors of
rule (i), whose argument names the rule."""
from __future__ import annotations

import json
import re

import pytest

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
REDTEAM2 = [e for e in json.loads((D / "manifest_redteam2.json").read_text()) if e["variant"] == "small"]
# What an argument starts with, per part ("; "-separated): the renaming of a free class,
# Newton's identity for a summed one, a named rule (a-l, or indexing by data), kept.
PART = re.compile(r"^(free \(|Newton \(degree \d+\)|rule [a-l]:|rule: indexed by data|kept \(the original size\))")


def _plan(ref: str, other: str) -> ShrinkPlan:
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _check(p: ShrinkPlan) -> None:
    for e in p.entries:
        assert e.argument and e.to_dict()["argument"] == e.argument, e
        if e.verified == e.original:
            assert e.argument.startswith("kept"), e
        for part in e.argument.split("; "):
            assert PART.match(part) or part.startswith("its size follows"), (part, e)


@pytest.mark.parametrize("entry", REDTEAM2, ids=[e["pair"] for e in REDTEAM2])
def test_every_class_says_which_argument_carries_it(entry: dict) -> None:
    for kind in ("ok", "bug"):
        _check(_plan(str(D / entry["files"]["ref"]), str(D / entry["files"][kind])))


def test_the_map_names_rule_i_for_a_mean_divisor() -> None:
    # hidden 64 = 8 heads x 8: the divisor 64 names the sum over hidden (rule i), and the
    # verdict's JSON map says so next to Newton's degree.
    m = TESTDATA / "shrink_mean"
    v = tv_mlir.verify(m / "mean_ok.ref.mlir", m / "mean_ok.other.mlir", full_size_check="off",
                       second_witness=False)
    assert v.verdict == "equivalent", v.reason
    doc = json.loads(json.dumps(v.to_dict()))
    hidden = [c for c in doc["shrink"]["shrunk"] if c["original"] == 64 and c["verified"] < 64]
    assert hidden and any("rule i: the mean divisor 64" in c["argument"] for c in hidden), doc["shrink"]
    assert all(c.get("argument") for c in doc["shrink"]["shrunk"] + doc["shrink"].get("kept", [])), doc["shrink"]
