"""Rule (b), float window bounds past 2^16 (`facts.position_reach`, switch
`facts.FLOAT_REACH`; docs/shrinking.md, "Red-team batch 3"): a float constant compared with
positions names a position up to four times the program's largest dim, not only up to 2^16.
The pair is helper-36's `long_ctx` (testdata/shrink_rules/gen_redteam3.py): float positions
`>= 70000.0` damped in a 131072-long context, the bug twin damps none."""
from __future__ import annotations

import json

import pytest

from tests.conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.options import Options
from tv_mlir.shrink import facts
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import ShrinkPlan, plan

D = TESTDATA / "shrink_rules"
MANIFEST = {(e["pair"], e["variant"]): e for e in json.loads((D / "manifest_redteam3.json").read_text())}


def _plan(pair: str, kind: str) -> ShrinkPlan:
    e = MANIFEST[(pair, "small")]
    files = (str(D / e["files"][k]) for k in ("ref", kind))
    return plan(*(_raw(f, prepare(f, Options())).module for f in files))


def _positions(p: ShrinkPlan) -> int:
    return next(e.verified for e in p.entries if e.original == 131072)


@pytest.mark.parametrize("kind", ["ok", "bug"])
def test_a_float_window_past_2_16_keeps_the_positions_past_it(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _positions(_plan("long_ctx", kind)) > 70000
    # The loosened rule (floats named up to 2^16 only): the positions shrink below the
    # window, where the reference damps nothing either, and the bug twin is `equivalent`
    # (tests/test_redteam.py held that as a hole).
    monkeypatch.setattr(facts, "FLOAT_REACH", 0)
    assert _positions(_plan("long_ctx", kind)) < 70000


def test_mask_fills_are_no_positions() -> None:
    # -1e9 and finfo.min fills are past any reach; 70000.0 is within 4 x 131072.
    assert facts.position_reach(131072) == 4 * 131072
    assert facts.position_reach(16) == 1 << 16
    assert facts.position_reach(131072) < 1e9
