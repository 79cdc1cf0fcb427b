"""Rule (b)'s assumed ranges through a device's offset (docs/shrinking.md, "Red-team batch 5",
device offsets; testdata/gen_device_offsets.py, every twin run on XLA at its original sizes):
`local = ids - axis_index * vl` compared with literals splits every shard's block at its own
place; id_splits.py keeps such splits as lost ones (the class whole) unless every constant,
the offset's among them, moves with a size (`local < vl`: the shards' own rule). Held by the
plan, by the plan with the reading off (the vocabulary shrinks to where the bug hides), and by
the verdicts: the bug twin `not-equivalent` confirmed at the original sizes with the rules
alone, the correct twin `equivalent` and shrunk."""
from __future__ import annotations

import json

import pytest

import tv_mlir
from tests.conftest import RULES_OFF, TESTDATA, assert_confirmed_at_original_sizes
from tv_mlir.api import prepare
from tv_mlir.assume import resolve
from tv_mlir.options import Options
from tv_mlir.shrink import id_splits
from tv_mlir.shrink.pair import _raw
from tv_mlir.shrink.plan import plan

D = TESTDATA / "device_offsets"
MANIFEST = {e["pair"]: e for e in json.loads((D / "manifest.json").read_text())}
ASSUME = {"arg1": (0, 512)}


def _files(kind: str) -> tuple[str, str]:
    e = MANIFEST["range_device"]
    return str(D / e["files"]["ref"]), str(D / e["files"][kind])


def _vocabulary(kind: str = "bug") -> int:
    ref, other = _files(kind)
    r, o = _raw(ref, prepare(ref, Options())).module, _raw(other, prepare(other, Options())).module
    ranges = resolve([(k, lo, hi) for k, (lo, hi) in ASSUME.items()], r.input_names(), r.global_arg_types())
    return next(e.verified for e in plan(r, o, ranges=ranges).entries if e.where.startswith("emb dim 0"))


def test_manifest_lists_the_pair_ran_on_xla() -> None:
    e = MANIFEST["range_device"]
    assert e["ran_on_xla"] and e["sizes"]["vocab"] == 512 and e["assume"] == {"arg1": "vocab"}


def test_a_mask_after_the_device_offset_keeps_the_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    # local + 1000 < 1100 splits each 128-row block at 100: at least 4 (100 + 2) rows. Off
    # (forms dropped at the subtract of a computed number), 8 rows: local < 100 always.
    assert _vocabulary() >= 408
    monkeypatch.setattr(id_splits, "DEVICE_OFFSETS", False)
    assert _vocabulary() <= 100


def test_the_shards_own_mask_still_shrinks() -> None:
    # 0 <= local < vl and clip(local, 0, vl - 1): every constant moves with the vocabulary.
    assert _vocabulary("ok") <= 16


def test_bug_twin_is_found_by_the_rules() -> None:
    v = tv_mlir.verify(*_files("bug"), assume=ASSUME, timeout_s=60, cache=False, **RULES_OFF)
    assert_confirmed_at_original_sizes(v)


def test_correct_twin_is_equivalent() -> None:
    v = tv_mlir.verify(*_files("ok"), assume=ASSUME, timeout_s=60, cache=False)
    assert v.verdict == "equivalent", v.reason
