"""`ProgramFacts.calls` (callee name -> its calls) is the program's calls in `ops()` order,
indexed once: `shrink/counts` looked each callee's calls up by listing every op of the
program per look-up, quadratic in the program's size."""
from __future__ import annotations

import pytest

from conftest import TESTDATA
from tv_mlir.frontend.read import load_module_mlir
from tv_mlir.shrink.facts import ProgramFacts

FILES = ["core/llama_train_step.ref.mlir", "flax/fwdbwd.ref.mlir", "flax/fwdbwd.shardy.mlir",
         "shrink_rules/accum_skip.small.ref.mlir"]


@pytest.mark.parametrize("name", FILES)
def test_the_index_is_the_scan(name: str) -> None:
    m = load_module_mlir(str(TESTDATA / name)).module
    fa = ProgramFacts.of("ref", m)
    scanned: dict[str, list[object]] = {}
    for op in fa.ops():
        if op.name == "func.call":
            scanned.setdefault(op.attrs.get("callee", ""), []).append(op)
    assert scanned, "a program with calls"
    assert fa.calls.keys() == scanned.keys()
    for callee, ops in scanned.items():
        assert [id(o) for o in fa.calls[callee]] == [id(o) for o in ops], callee
