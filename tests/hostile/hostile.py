"""Helpers for the hostile suite: the real CLI in a subprocess with a time bound, and the
inputs, generated here (nothing large is committed)."""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import TESTDATA

# The console script installed next to this interpreter (`make install`: .venv/bin/tv-mlir).
TV_MLIR = str(Path(sys.executable).parent / "tv-mlir")
GOOD_A = TESTDATA / "hand/add_commute.a.mlir"
GOOD_B = TESTDATA / "hand/add_commute.b.mlir"
# Every CLI run ends within this many seconds or the test fails (a hang is a failure).
BOUND_S = 60


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    e.pop("TV_MLIR_MAX_INPUT_MB", None)
    e.update(extra)
    return e


def cli(*args: str, cwd: Path | None = None, stdin: bytes | None = None, timeout: float = BOUND_S,
        extra_env: dict[str, str] | None = None, **kw: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([TV_MLIR, *args], input=stdin, capture_output="stdout" not in kw, cwd=cwd,
                          env=env(**(extra_env or {})), timeout=timeout, **kw)


def one_error_line(p: subprocess.CompletedProcess[bytes], code: int = 3) -> str:
    """The run ended with `code` and exactly one error line on stderr, no traceback."""
    err = p.stderr.decode(errors="replace")
    assert p.returncode == code, (p.returncode, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert lines[0].startswith("tv-mlir: "), err
    return lines[0]


def json_error(p: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    """The one JSON error object on stdout, consistent with the exit code."""
    out = p.stdout.decode().strip()
    assert len(out.splitlines()) == 1, out
    d = json.loads(out)
    assert d["verdict"] == "error" and d["exit_code"] == p.returncode, d
    assert isinstance(d["kind"], str) and isinstance(d["error"], str) and "\n" not in d["error"]
    return d


def children(pid: int) -> list[int]:
    """Live child processes of `pid` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for_stderr(proc: subprocess.Popen[bytes], needle: bytes, timeout: float = 30) -> bytes:
    """Read stderr lines until one holds `needle` (the run has reached that phase)."""
    assert proc.stderr is not None
    seen = b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([proc.stderr], [], [], left)[0]:
            break
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"run ended before {needle!r}: {seen.decode(errors='replace')}")
        seen += line
        if needle in line:
            return seen
    raise AssertionError(f"no {needle!r} within {timeout} s: {seen.decode(errors='replace')}")


def kill_all(pids: list[int]) -> None:
    """Test hygiene: whatever a failing run left behind does not outlive the test."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


# ---------------------------------------------------------------------------
# Generated modules

# floor(x)^3 + floor(y)^3 + floor(z)^3 == 42: integer solutions exist but have 17 digits,
# so z3 neither finds one nor proves there is none; it runs until its timeout. Floats are
# exact reals in the model, so this stays hard whatever the integer semantics are. Two
# outputs make two queries, so --jobs 2 starts two worker processes.
CUBES = """func.func public @main(%x: tensor<f32>, %y: tensor<f32>, %z: tensor<f32>) -> (tensor<i1>, tensor<i1>) {
  %c = stablehlo.constant dense<42.0> : tensor<f32>
  %fx = stablehlo.floor %x : tensor<f32>
  %fy = stablehlo.floor %y : tensor<f32>
  %fz = stablehlo.floor %z : tensor<f32>
  %x2 = stablehlo.multiply %fx, %fx : tensor<f32>
  %x3 = stablehlo.multiply %x2, %fx : tensor<f32>
  %y2 = stablehlo.multiply %fy, %fy : tensor<f32>
  %y3 = stablehlo.multiply %y2, %fy : tensor<f32>
  %z2 = stablehlo.multiply %fz, %fz : tensor<f32>
  %z3 = stablehlo.multiply %z2, %fz : tensor<f32>
  %s = stablehlo.add %x3, %y3 : tensor<f32>
  %t = stablehlo.add %s, %z3 : tensor<f32>
  %e = stablehlo.compare EQ, %t, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %n = stablehlo.not %e : tensor<i1>
  return %e, %n : tensor<i1>, tensor<i1>
}
"""
CUBES_OTHER = """func.func public @main(%x: tensor<f32>, %y: tensor<f32>, %z: tensor<f32>) -> (tensor<i1>, tensor<i1>) {
  %f = stablehlo.constant dense<false> : tensor<i1>
  %t = stablehlo.constant dense<true> : tensor<i1>
  return %f, %t : tensor<i1>, tensor<i1>
}
"""


def named_pair(x_name: str, y_name: str) -> tuple[str, str]:
    """Two programs whose inputs carry the given names (MLIR string escapes allowed) and
    whose two outputs both need the solver: output 0 differs only at x == 12345 (random runs
    miss it, the solver finds it), output 1 is equal (floor(y) > y never holds)."""
    sig = f'%x: tensor<f32> loc("{x_name}"), %y: tensor<f32> loc("{y_name}")'
    a = f"""func.func public @main({sig}) -> (tensor<f32>, tensor<f32>) {{
  %c = stablehlo.constant dense<12345.0> : tensor<f32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.compare EQ, %x, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %s = stablehlo.select %e, %one, %zero : tensor<i1>, tensor<f32>
  %fy = stablehlo.floor %y : tensor<f32>
  %g = stablehlo.compare GT, %fy, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %t = stablehlo.select %g, %one, %zero : tensor<i1>, tensor<f32>
  return %s, %t : tensor<f32>, tensor<f32>
}}
"""
    b = f"""func.func public @main({sig}) -> (tensor<f32>, tensor<f32>) {{
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  return %zero, %zero : tensor<f32>, tensor<f32>
}}
"""
    return a, b


def padded(text: str, size: int) -> bytes:
    """`text` followed by MLIR comments up to `size` bytes: a valid module of that size."""
    line = b"// " + b"x" * 60 + b"\n"
    data = text.encode()
    return data + line * ((size - len(data)) // len(line) + 1)


def main_in_process(capsys: Any, *args: str) -> tuple[int, str, str]:
    """tv_mlir.cli.main in this process (no interpreter start-up: for the many small cases;
    each category also has real-CLI runs): (exit code, stdout, stderr)."""
    from tv_mlir.cli import main

    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
