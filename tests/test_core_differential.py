"""The own symbolic core (`--core own`, issue 11) against the z3 core: the same verdict on
every bundled pair. The z3 core's verdicts are held to each manifest's expectation by
test_pairs.py, test_verify.py and test_sharded.py, so the own core is held to the same
expectations here (one run per pair instead of two). Marked slow in conftest.py."""
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
def test_own_core_same_verdict(name: str, ref: Path, other: Path, expect: str) -> None:
    v = verify(ref, other, core="own")
    assert v.verdict == expect, f"{name}: own core says {v.verdict} ({v.reason}), the z3 core {expect}"
