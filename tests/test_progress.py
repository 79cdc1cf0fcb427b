"""--progress prints a line per phase and, during a long symbolic execution, a line every
few seconds saying how far it is (a run of minutes must not look like a hang)."""
from __future__ import annotations

import re

import pytest

import tv_mlir
from conftest import TESTDATA
from tv_mlir import progress as progress_mod


def test_symbolic_execution_ticks(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(progress_mod, "TICK_S", 0.0)
    d = TESTDATA / "sharded"
    # One whole proof only (the second witness of a shrunk pair runs the programs again; a
    # staged proof's stages are silent, the stage bar reports them).
    v = tv_mlir.verify(d / "attn_tp.ref.mlir", d / "attn_tp.shardy.mlir", progress=True, second_witness=False,
                       stages=False)
    assert v.verdict == "equivalent"
    err = capsys.readouterr().err
    ref_ticks = [ln for ln in err.splitlines() if ln.startswith("tv-mlir: symbolic execution of the reference: op ")]
    other_ticks = [ln for ln in err.splitlines() if "symbolic execution of the other program: op " in ln]
    assert ref_ticks and other_ticks, err
    assert "values merged" in other_ticks[-1]
    # Ops counted in order, never past the program's ops.
    seen = [re.search(r": op (\d+) of (\d+) ", ln) for ln in ref_ticks]
    counts = [int(m.group(1)) for m in seen if m]
    assert len(counts) == len(ref_ticks) and counts == sorted(counts)
    assert all(0 < counts[-1] <= int(m.group(2)) for m in seen if m)


def test_no_ticks_without_progress(capsys: pytest.CaptureFixture[str]) -> None:
    d = TESTDATA / "sharded"
    tv_mlir.verify(d / "attn_tp.ref.mlir", d / "attn_tp.shardy.mlir")
    assert "symbolic execution of the reference" not in capsys.readouterr().err
