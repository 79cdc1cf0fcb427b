"""Rule (h), offset tables read at blocks of several classes, and clamped entries
(docs/shrinking.md, "Offset tables read at several blocks, and clamped"). Pairs:
testdata/shrink_rules/gen_offset_tables.py (manifest_offset_tables.json): XLA's own
partitioned modules and their table edits, each run on XLA at the original sizes.
Verdicts with the full-size check and the second witness off, so the rules decide."""
from __future__ import annotations

import json
from typing import Any

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import constants
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
MANIFEST = json.loads((D / "manifest_offset_tables.json").read_text())


def _files(pair: str, kind: str) -> tuple[str, str]:
    return str(D / f"{pair}.small.ref.mlir"), str(D / f"{pair}.small.{kind}.mlir")


def _plan(pair: str, kind: str) -> ShrinkPlan:
    ref, other = _files(pair, kind)
    return plan(_raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module)


def _size(p: ShrinkPlan, where: str) -> int:
    return next(e.verified for e in p.entries if e.where == where)


def _tables(p: ShrinkPlan) -> list[Any]:
    return [v for (prog, _), v in p.constants.items() if prog == "other" and isinstance(v, tuple)]


def test_manifest_ran_on_xla() -> None:
    assert [e["pair"] for e in MANIFEST] == ["table_two_classes", "table_clamped"]
    for e in MANIFEST:
        assert e["ran_on_xla"]
        for f in e["files"].values():
            assert (D / f).exists(), f


def test_one_table_at_two_classes_of_one_planned_size(monkeypatch: pytest.MonkeyPatch) -> None:
    # [0, 16, 32, 48] starts w1's block (x's columns) and w2's (z's columns): two classes of
    # 64, planned at one size, so one rewritten table serves both.
    p = _plan("table_two_classes", "ok")
    h, g = _size(p, "x dim 1"), _size(p, "z dim 1")
    assert h == g < 64 and (0, h // 4, 2 * h // 4, 3 * h // 4) in _tables(p)
    monkeypatch.setattr(constants, "CLASHES_BY_SIZE", False)
    p = _plan("table_two_classes", "ok")
    assert _size(p, "x dim 1") == _size(p, "z dim 1") == 64  # a second reading pins


def test_readings_that_differ_at_the_planned_sizes_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pair's own readings (block counts (0, 1, 2, 3) at x's and at z's blocks): one
    # table where the two blocks are planned alike, none where they are not; the sites
    # that read a clashing table pin their classes (tie_constants).
    ref, other = _files("table_two_classes", "ok")
    r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
    p = plan(r, o)
    from tv_mlir.shrink.constants import sites
    from tv_mlir.shrink.facts import ProgramFacts
    where = sites(p.analysis, [ProgramFacts.of("ref", r), ProgramFacts.of("other", o)])
    (key, readings), = where.readings.items()
    blocks = sorted(c for _, c in readings)
    assert len(blocks) == 2 and {q for q, _ in readings} == {(0, 1, 2, 3)}
    sizes = list(p.sizes)
    assert not where.clashes(key, sizes)
    sizes[blocks[1]] += 1
    assert where.clashes(key, sizes)
    assert key in where.table_values(p.sizes, [c.size for c in p.analysis.classes])
    assert key not in where.table_values(sizes, [c.size for c in p.analysis.classes])
    monkeypatch.setattr(constants, "CLASHES_BY_SIZE", False)
    assert where.clashes(key, p.sizes)


def test_a_clamped_entry_is_a_block_count(monkeypatch: pytest.MonkeyPatch) -> None:
    # [0, 16, 32, 64] over 4 blocks of 16: 64 is clamped to 48 on XLA, block 3 at every size.
    p = _plan("table_clamped", "ok")
    h = _size(p, "x dim 1")
    assert h < 64 and (0, h // 4, 2 * h // 4, 4 * h // 4) in _tables(p)
    monkeypatch.setattr(constants, "CLAMPED_TABLES", False)
    assert _size(_plan("table_clamped", "ok"), "x dim 1") == 64


@pytest.mark.parametrize("pair", ["table_two_classes", "table_clamped"])
def test_verdicts(pair: str) -> None:
    assert tv_mlir.verify(*_files(pair, "ok"), **RULES_OFF).verdict == "equivalent"
    v = tv_mlir.verify(*_files(pair, "bug"), **RULES_OFF)
    assert v.verdict == "not-equivalent", v.reason
    assert v.counterexample is not None and v.counterexample.confirmed_at == "original sizes"
