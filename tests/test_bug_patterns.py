"""Public sharding bug patterns (testdata/bug_patterns/, written by testdata/gen_bug_patterns.py):
XLA's partitioned module of each correct program is equivalent to its single-device reference,
and a hand-made mutation of that module reproducing the bug's mechanism is not-equivalent with
a counterexample replayed on XLA at the programs' own sizes.

- shift: `a.at[:-1].set(a[1:])` sharded along the shifted dim (jax 18434); bug: the one-row
  halo's collective_permute with its source_target_pairs reversed.
- conv: a strided conv with the image height sharded (jax 16894); bugs: the halo from the
  wrong neighbour, and the local strided window grid offset by a row on every shard.
- matmul_replicated / matmul_rows: one contraction-sharded matmul under two out_shardings
  (tt-xla 902); bugs: the partial sums all-reduced over the wrong mesh axis, and each device
  keeping another shard's rows. matmul_rows_big is the same at 256x512 @ 512x128, verified at
  shrunk sizes (its bug found there and confirmed at the original sizes).
- fft: a sharded FFT (jax 16909), complex values read as real pairs and the transform as
  contractions with DFT matrices (passes/complex.py); its cosines are uninterpreted, so the
  verdict lists the approximation; bug: a shard's slice taken at the wrong offset. fft_big is
  the same at (64, 256), its bug found at the programs' own sizes.
- shift_big: the shift at f32[4096,1024] (issue 15), verified at 16 x 1 (scatter window
  and offset table rules); bugs: the halo from the wrong neighbour and from the wrong end.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tv_mlir.api import verify

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "testdata" / "bug_patterns"

CORRECT = ["shift", "conv", "matmul_replicated", "matmul_rows", "matmul_rows_big"]
BUGS = [("shift", "reversed_halo"), ("conv", "reversed_halo"), ("conv", "window_offset"),
        ("matmul_replicated", "wrong_groups"), ("matmul_rows", "wrong_rows"), ("matmul_rows_big", "wrong_rows"),
        ("fft", "wrong_slice"), ("fft_big", "wrong_slice"),
        # realistic size, shrunk through the scatter rule and the offset table (the correct
        # twin and conv_big take 10-30 s: make bench, section patterns)
        ("shift_big", "reversed_halo"), ("shift_big", "wrong_end")]


def _ref(name: str) -> Path:
    return DATA / f"{name}.ref.mlir"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_partitioned_program_is_equivalent(name: str) -> None:
    v = verify(_ref(name), DATA / f"{name}.partitioned.mlir")
    assert v.verdict == "equivalent", v.reason
    assert not v.unsupported and not v.approximations
    if name.endswith("_big"):
        assert v.shrink is not None and v.shrink["applied"], v.shrink


@pytest.mark.parametrize("name,bug", BUGS)
def test_bug_mechanism_is_caught_and_confirmed_on_xla(name: str, bug: str) -> None:
    mutated = DATA / f"{name}.{bug}.partitioned.mlir"
    # The mutation is a one-line edit of XLA's own partitioned module.
    correct_lines = (DATA / f"{name}.partitioned.mlir").read_text().splitlines()
    mutated_lines = mutated.read_text().splitlines()
    assert len(correct_lines) == len(mutated_lines)
    assert sum(a != b for a, b in zip(correct_lines, mutated_lines, strict=True)) == 1
    v = verify(_ref(name), mutated)
    assert v.verdict == "not-equivalent", v.reason
    c = v.counterexample
    assert c is not None and c.confirmed
    assert c.confirmed_at == "original sizes"
    assert any(r.backend == "xla" and r.confirmed for r in c.replay), c.replay


def test_cli_json_reports_where_the_counterexample_was_confirmed() -> None:
    out = subprocess.run([sys.executable, "-m", "tv_mlir", "verify", "--json", str(_ref("shift")),
                          str(DATA / "shift.reversed_halo.partitioned.mlir")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 1, out.stderr[-2000:]
    d = json.loads(out.stdout)
    assert d["verdict"] == "not-equivalent"
    assert d["counterexample"]["confirmed_at"] == "original sizes"
    assert {r["backend"] for r in d["counterexample"]["replay"] if r["confirmed"]} >= {"xla"}


def test_sharded_fft_is_equivalent_with_cosine_as_its_approximation() -> None:
    text = (DATA / "fft.partitioned.mlir").read_text()
    assert "stablehlo.fft" in text and "stablehlo.all_gather" in text
    v = verify(_ref("fft"), DATA / "fft.partitioned.mlir")
    assert v.verdict == "equivalent", v.reason
    assert "cosine" in v.approximations, v.approximations
