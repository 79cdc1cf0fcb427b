"""Rule (k), constant tables read at data indices (docs/shrinking.md, rule k "tables"): a
gather of a constant table at the token ids takes only the table's values, so a sum over
the tokens is a count (like a sum of a compare) and Newton's argument does not bound the
token class. Pair: testdata/shrink_rules/gen_tables.py (manifest_tables.json, XLA-checked
at the original sizes). Verdicts with the full-size check and the second witness off, so
that the rule is what is tested."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir.shrink import counts

D = TESTDATA / "shrink_rules"
TABLES = json.loads((D / "manifest_tables.json").read_text())
RULES_OFF = {"full_size_check": "off", "second_witness": False, "cache": False, "assume": {"ids": (0, 16)}}


def _verify(kind: str) -> tv_mlir.Verdict:
    return tv_mlir.verify(str(D / "table_count.small.ref.mlir"), str(D / f"table_count.small.{kind}.mlir"),
                          **RULES_OFF)


def _tokens(v: tv_mlir.Verdict) -> int:
    entries = (v.shrink or {}).get("shrunk", []) + (v.shrink or {}).get("kept", [])
    return next(e["verified"] for e in entries if e["where"] == "ids dim 0")


def test_tables_manifest_lists_the_pair_ran_on_xla() -> None:
    assert [(e["pair"], e["variant"], e["ran_on_xla"]) for e in TABLES] == [("table_count", "small", True)]


def test_a_table_lookup_count_is_found_and_confirmed() -> None:
    v = _verify("bug")
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
    assert _tokens(v) > 2


def test_without_the_rule_the_count_hides_at_two_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counts, "TABLES", False)
    v = _verify("bug")
    assert v.verdict == "equivalent" and _tokens(v) == 2


def test_the_correct_twin_is_equivalent() -> None:
    v = _verify("ok")
    assert v.verdict == "equivalent", v.reason
