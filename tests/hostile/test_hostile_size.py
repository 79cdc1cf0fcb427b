"""The input size budget: a file, stream, stdin or device over the limit is exit 3 with one
line, decided without reading it whole (a regular file by its size, anything else after
limit + 1 bytes)."""
from __future__ import annotations

import io
import time

import pytest
from hostile import GOOD_A, GOOD_B, cli, json_error, one_error_line, padded

import tv_mlir
from tv_mlir.errors import UsageError
from tv_mlir.frontend.read import read_source
from tv_mlir.options import DEFAULT_MAX_INPUT_BYTES, MIB


def test_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_INPUT_BYTES == 64 * MIB == tv_mlir.Options().max_input_bytes


def test_file_over_the_limit_on_the_cli(tmp_path) -> None:
    big = tmp_path / "big.mlir"
    big.write_bytes(padded(GOOD_A.read_text(), 2 * MIB))
    p = cli("verify", "--json", "--max-input-mb", "1", str(big), str(GOOD_B))
    line = one_error_line(p, 3)
    assert "big.mlir" in line and "larger than the input limit of 1 MiB" in line
    assert json_error(p)["kind"] == "usage"
    # The environment variable sets the same limit; a larger one lets the file through.
    p = cli("verify", str(big), str(GOOD_B), extra_env={"TV_MLIR_MAX_INPUT_MB": "1"})
    assert "larger than the input limit" in one_error_line(p, 3)
    p = cli("verify", "--max-input-mb", "3", str(big), str(GOOD_B), extra_env={"TV_MLIR_MAX_INPUT_MB": "1"})
    assert p.returncode == 0, p.stderr


def test_endless_device_and_stdin_on_the_cli() -> None:
    t0 = time.monotonic()
    p = cli("verify", "--max-input-mb", "1", str(GOOD_A), "/dev/zero", timeout=30)
    assert "/dev/zero: larger than the input limit" in one_error_line(p, 3)
    p = cli("verify", "--max-input-mb", "1", "-", str(GOOD_B), stdin=b"\0" * (2 * MIB), timeout=30)
    assert "<stdin>: larger than the input limit" in one_error_line(p, 3)
    assert time.monotonic() - t0 < 30


def test_huge_sparse_file_is_refused_by_its_size(tmp_path) -> None:
    # 1 TiB of holes: reading it would never end; its size alone decides.
    huge = tmp_path / "huge.mlir"
    with open(huge, "wb") as f:
        f.truncate(2**40)
    t0 = time.monotonic()
    with pytest.raises(UsageError, match="larger than the input limit of 64 MiB"):
        tv_mlir.verify(huge, GOOD_B)
    assert time.monotonic() - t0 < 5


class _CountingStream(io.RawIOBase):
    """An endless stream that records how much was asked of it."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert size >= 0, "read to the end of an endless stream"
        self.asked.append(size)
        return b"x" * size


def test_stream_read_at_most_limit_plus_one() -> None:
    stream = _CountingStream()
    with pytest.raises(UsageError, match="larger than the input limit of 1000 bytes"):
        read_source(stream, limit=1000)
    assert stream.asked == [1001]
    with pytest.raises(UsageError, match="larger than the input limit"):
        tv_mlir.verify(io.StringIO("x" * 5000), GOOD_B, max_input_bytes=4096)
    assert tv_mlir.verify(GOOD_A, GOOD_B, max_input_bytes=4096).verdict == "equivalent"
