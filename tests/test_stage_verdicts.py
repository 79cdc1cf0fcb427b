"""Whole verdicts in the proof cache (stages/verdicts.py): a warm run of an unchanged pair
reads its kept `equivalent` and nothing else; a changed byte, a changed option that says
what is claimed, or a bad entry is a miss; nothing but a staged `equivalent` is kept."""
from __future__ import annotations

from pathlib import Path

import pytest

from tv_mlir import api
from tv_mlir.api import verify
from tv_mlir.stages import verdicts
from tv_mlir.verdict import Verdict

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "testdata" / "core"
SHARDED = ROOT / "testdata" / "sharded"
QUICK = dict(full_size_check="off", stage_min_elements=0, second_witness=False)


@pytest.fixture
def prepared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The switch on (tests/conftest.py turns it off), and a count of the programs prepared."""
    monkeypatch.setenv(verdicts.SWITCH, "1")
    calls: list[int] = []
    real = api.prepare

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "prepare", counted)
    return calls


def _kept(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.json") if '"whole verdict"' in p.read_text()]


def test_a_warm_run_reads_the_kept_verdict(tmp_path: Path, prepared: list[int]) -> None:
    args = (CORE / "decoder_L1.ref.mlir", CORE / "decoder_L1.shardy.mlir")
    cold = verify(*args, cache_dir=str(tmp_path), **QUICK)
    assert cold.verdict == "equivalent" and cold.stages["used"] and cold.stages["proved"] > 0
    assert len(_kept(tmp_path)) == 1 and prepared
    prepared.clear()
    warm = verify(*args, cache_dir=str(tmp_path), progress=False, **QUICK)  # how to run: the same key
    assert warm.verdict == "equivalent" and warm.stats["verdict_from_cache"] and not prepared
    assert warm.stages["proved"] == 0 and warm.stages["cached"] == cold.stages["count"]
    n = cold.stages["count"]
    assert f"proved in {n} stages (0 proved, 0 reused, {n} from the cache)" in warm.reason, warm.reason
    assert warm.outputs == cold.outputs
    # What is claimed changed: a miss (the stages come from their own cache entries).
    again = verify(*args, cache_dir=str(tmp_path), strict_dtypes=True, **QUICK)
    assert prepared and "verdict_from_cache" not in again.stats
    # A changed byte of one program: a miss.
    prepared.clear()
    copy = tmp_path / "other.mlir"
    copy.write_text(args[1].read_text() + "\n// the same program, other bytes\n")
    assert "verdict_from_cache" not in verify(args[0], copy, cache_dir=str(tmp_path), **QUICK).stats
    assert prepared
    # A bad entry: a miss, and written again.
    for p in _kept(tmp_path):
        p.write_text('{"schema": 1, "record": {"kind": "whole verdict", "verdict": {"verdict": 1}}}')
    prepared.clear()
    assert "verdict_from_cache" not in verify(*args, cache_dir=str(tmp_path), **QUICK).stats and prepared
    assert "verdict_from_cache" in verify(*args, cache_dir=str(tmp_path), **QUICK).stats


def test_only_a_staged_equivalent_is_kept(tmp_path: Path, prepared: list[int]) -> None:
    k = "ab" * 32
    opts = api.resolve_options(None, {"cache_dir": str(tmp_path)})
    staged = {"used": True, "count": 3, "proved": 3, "reused": 0, "cached": 0, "list": []}
    for v in (Verdict("not-equivalent", "a bug", stages=staged), Verdict("unknown", "a timeout", stages=staged),
              Verdict("equivalent", "proved whole", stages={"used": False})):
        verdicts.keep(opts, k, v)
    assert not _kept(tmp_path)
    verdicts.keep(opts, k, Verdict("equivalent", "proved", stages=staged))
    assert len(_kept(tmp_path)) == 1 and verdicts.lookup(opts, k) is not None


def test_the_key_holds_both_programs(tmp_path: Path, prepared: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """mlp_tp proved, then its bug twin (the other program only differs) with the same
    cache: not-equivalent. A key that left the other program's bytes out hands the bug
    twin the kept `equivalent`."""
    ref, ok, bug = (SHARDED / "mlp_tp.ref.mlir", SHARDED / "mlp_tp.shardy.mlir",
                    SHARDED / "mlp_tp_bug_missing_psum.shardy.mlir")
    assert verify(ref, ok, cache_dir=str(tmp_path), **QUICK).verdict == "equivalent"
    assert _kept(tmp_path)
    assert verify(ref, bug, cache_dir=str(tmp_path), **QUICK).verdict == "not-equivalent"
    real = verdicts.key
    monkeypatch.setattr(verdicts, "key", lambda r, o, s, options: real(r, r, s, options))
    assert verify(ref, ok, cache_dir=str(tmp_path / "mutant"), **QUICK).verdict == "equivalent"
    assert verify(ref, bug, cache_dir=str(tmp_path / "mutant"), **QUICK).verdict == "equivalent"
