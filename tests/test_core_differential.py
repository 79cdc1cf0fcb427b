"""The two symbolic cores reach the same verdict on every bundled pair. The default core
(own terms, issue 11) is held to each manifest's expectation by test_pairs.py,
test_verify.py and test_sharded.py; the earlier z3 core is held to the same expectations
here (one run per pair instead of two), until it is removed. Marked slow in conftest.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import TESTDATA
from tv_mlir import verify


def _cases() -> list[tuple[str, Path, Path, str]]:
    out = []
    for folder in ("pairs", "hand"):
        for name, e in json.loads((TESTDATA / folder / "manifest.json").read_text()).items():
            out.append((f"{folder}/{name}", TESTDATA / folder / f"{name}.a.mlir",
                        TESTDATA / folder / f"{name}.b.mlir", e["expect"]))
    for name, e in json.loads((TESTDATA / "big/manifest.json").read_text()).items():
        out.append((f"big/{name}", TESTDATA / "big" / e["a"], TESTDATA / "big" / e["b"], e["expect"]))
    for e in json.loads((TESTDATA / "sharded/manifest.json").read_text()):
        out.append((f"sharded/{e['name']}", TESTDATA / "sharded" / e["ref"], TESTDATA / "sharded" / e["shardy"],
                    e["expect"]))
    return out


CASES = _cases()


@pytest.mark.parametrize("name,ref,other,expect", CASES, ids=[c[0] for c in CASES])
def test_z3_core_same_verdict(name: str, ref: Path, other: Path, expect: str) -> None:
    # z3's timeout is wall-clock: vocab_ce's queries on the z3 core ran past the default
    # 60 s at load 8-9 (a solver timeout, `unknown`), though they take ~20 s on a quiet machine.
    v = verify(ref, other, core="z3", timeout_s=600)
    assert v.verdict == expect, f"{name}: the z3 core says {v.verdict} ({v.reason}), the own core {expect}"
