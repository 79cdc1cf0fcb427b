"""How the text report writes a witness's inputs (report._fmt_input): small arrays whole,
mostly-zero ones as their non-zero entries, at most MAX_LISTED of those (a witness replayed
at the original sizes of an 8B-wide plan has tens of millions of entries)."""
from __future__ import annotations

import numpy as np

from tv_mlir import report


def test_small_and_dense_arrays_are_written_whole() -> None:
    assert report._fmt_input([1, 2, 3]) == "[1, 2, 3]"
    assert report._fmt_input(list(range(1, 11))) == "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def test_mostly_zero_arrays_list_their_nonzero_entries() -> None:
    x = np.zeros((3, 4))
    x[2, 1] = -1.5
    assert report._fmt_input(x.tolist()) == "zeros(3x4) except [2, 1] = -1.5"
    assert report._fmt_input([False] * 9 + [True]) == "zeros(10) except [9] = true"
    assert report._fmt_input(["inf"] + [0.0] * 9) == 'zeros(10) except [0] = "inf"'
    assert report._fmt_input([0] * 12) == "zeros(12)"


def test_a_huge_witness_lists_a_bounded_number_of_entries() -> None:
    x = np.zeros(4000, dtype=np.float32)
    x[::10] = 1.0
    text = report._fmt_input(x)
    assert text.count("= 1.0") == report.MAX_LISTED
    assert text.endswith(f"... and {400 - report.MAX_LISTED} more non-zero entries")
