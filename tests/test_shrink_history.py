"""A plan must not depend on how, or after what, it was asked for. Reported as a state
leak: `testdata/flax/fwd.partitioned` planned with ffn 32 (local 8) shrunk to 16 (local 4)
by the plan snapshot tool (every testdata pair in one process) and with nothing shrunk in
a fresh process. Bisected, it is no leak across pairs: in one process, after every folder
before it, after itself and fresh, the snapshot tool gives the same plan (392 pairs, one
process against one process per folder: no difference). What differs is the caller: the
tool runs `check_signatures` before `plan`, a fresh script or the tests' helpers
(`plan(_raw(ref, prepare(ref)).module, ...)`) did not, and an unclassified module keeps
`per_device`'s default (a global program), so an XLA per-device entry's shard arguments
(ffn 8) met the reference's global ones (32) as a signature tie and pinned both. Every
`.partitioned` pair of testdata/sharded_big planned differently by the two paths; verify
always classifies first, so no verdict changed. `plan` now classifies modules that were
not (`classify.is_classified`, `classify_pair`)."""
from __future__ import annotations

import tv_mlir
from tests.conftest import TESTDATA
from tv_mlir.api import prepare
from tv_mlir.frontend.classify import check_signatures
from tv_mlir.options import Options
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import plan

FWD = ("flax/fwd.ref.mlir", "flax/fwd.partitioned.mlir")
# verify's plan of FWD (classified first): the classes that shrink (original, verified).
FWD_SHRUNK = [(32, 16), (8, 4)]
BEFORE = [("big/big200.a.mlir", "big/big200.b.mlir"), ("core/decoder_L4.ref.mlir", "core/decoder_L4.gspmd.mlir"),
          ("depth/stack8b_L2.ref.mlir", "depth/stack8b_L2.shardy.mlir"),
          ("flax/fwd.ref.mlir", "flax/fwd.shardy.mlir")]


def _plan(ref: str, other: str, classify: bool = True) -> list[tuple[int, int, str]]:
    r_path, o_path = str(TESTDATA / ref), str(TESTDATA / other)
    r, o = prepare(r_path, Options()), prepare(o_path, Options())
    if classify:
        check_signatures(r, o)
    p = plan(_raw(r_path, r).module, _raw(o_path, o).module)
    return [(e.original, e.verified, e.where) for e in p.entries]


def _shrunk(entries: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    return [(a, b) for a, b, _ in entries if a != b]


def test_a_plan_does_not_depend_on_whether_the_caller_classified() -> None:
    # Before the fix: [] without check_signatures (ffn kept at 32 by a false signature tie).
    unclassified = _plan(*FWD, classify=False)
    assert _shrunk(unclassified) == FWD_SHRUNK
    assert unclassified == _plan(*FWD)
    mlp = ("sharded_big/mlp_tp.ref.mlir", "sharded_big/mlp_tp.partitioned.mlir")
    assert _plan(*mlp, classify=False) == _plan(*mlp)


def test_a_plan_does_not_depend_on_the_pairs_planned_before() -> None:
    first = _plan(*FWD)
    assert _shrunk(first) == FWD_SHRUNK
    for pair in BEFORE:
        _plan(*pair)
    assert _plan(*FWD) == first


def test_a_verdict_taken_twice_in_one_process_is_the_same() -> None:
    ref, other = (str(TESTDATA / "shrink_rules" / f"pole_nan.small.{k}.mlir") for k in ("ref", "ok"))
    options = {"full_size_check": "off", "second_witness": False}
    a = tv_mlir.verify(ref, other, **options)
    tv_mlir.verify(str(TESTDATA / "shrink_rules" / "count_max.small.ref.mlir"),
                   str(TESTDATA / "shrink_rules" / "count_max.small.bug.mlir"), **options)
    b = tv_mlir.verify(ref, other, **options)
    assert a.verdict == b.verdict == "equivalent"
    assert _untimed(a.shrink) == _untimed(b.shrink)


def _untimed(x: object) -> object:
    # Everything but the wall times.
    if isinstance(x, dict):
        return {k: _untimed(v) for k, v in x.items() if k != "time_s"}
    if isinstance(x, list | tuple):
        return [_untimed(v) for v in x]
    return x
