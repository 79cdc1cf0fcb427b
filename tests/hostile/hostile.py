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


def unknown_reason(p: subprocess.CompletedProcess[bytes]) -> str:
    """The run ended `unknown` (exit 2) with its report on stdout, nothing on stderr: the
    report's reason (text or --json)."""
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, (p.returncode, err)
    assert not err.strip(), err
    out = p.stdout.decode()
    if out.lstrip().startswith("{"):
        d = json.loads(out)
        assert d["verdict"] == "unknown" and d["unsupported"], d
        return str(d["reason"])
    assert out.startswith("verdict: unknown\n"), out[:300]
    return next(line for line in out.splitlines() if line.startswith("reason:"))


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
    """Read stderr until a whole line holds `needle` (the run has reached that phase).
    Reads the pipe itself, not through the file object: a readline that takes two lines
    from the pipe keeps the second in its buffer, where select does not see it (the
    needle then showed only with the next line, after a 30 s solver timeout)."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise AssertionError(f"run ended before {needle!r}: {seen.decode(errors='replace')}")
        seen += chunk
        if needle in seen[:seen.rfind(b"\n") + 1]:
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


# ---------------------------------------------------------------------------
# Generated modules for the budgets (tv_mlir/options.py): deep nesting, recursion, call
# bombs, long loops, long chains, huge splats, narrow types.

SCALAR = "tensor<f32>"

# The reference for `nested`: every branch of its cases and ifs computes abs(x).
NESTED_REF = f"""func.func public @main(%i: tensor<i32>, %p: tensor<i1>, %x: {SCALAR}) -> {SCALAR} {{
  %y = stablehlo.abs %x : {SCALAR}
  return %y : {SCALAR}
}}
"""


def nested(depth: int, kind: str = "case") -> str:
    """`depth` cases (on a data index, so every branch runs) or ifs (on a data predicate)
    nested in their first branch; every branch computes abs(x), so the module is NESTED_REF."""
    head = '"stablehlo.case"(%i)' if kind == "case" else '"stablehlo.if"(%p)'
    sig = "(tensor<i32>)" if kind == "case" else "(tensor<i1>)"
    lines = [f"func.func public @main(%i: tensor<i32>, %p: tensor<i1>, %x: {SCALAR}) -> {SCALAR} {{"]
    lines += [f"%r{d} = {head} ({{" for d in range(depth)]
    lines += [f"%leaf = stablehlo.abs %x : {SCALAR}", f"stablehlo.return %leaf : {SCALAR}"]
    for d in reversed(range(depth)):
        lines += ["}, {", f"%o{d} = stablehlo.abs %x : {SCALAR}", f"stablehlo.return %o{d} : {SCALAR}",
                  f"}}) : {sig} -> {SCALAR}"]
        lines.append(f"stablehlo.return %r{d} : {SCALAR}" if d else f"return %r0 : {SCALAR}")
    return "\n".join(lines) + "\n}\n"


ABS = f"""func.func public @main(%x: {SCALAR}) -> {SCALAR} {{
  %y = stablehlo.abs %x : {SCALAR}
  return %y : {SCALAR}
}}
"""


def calls(kind: str) -> str:
    """'direct': @f calls itself; 'mutual': @f calls @g calls @f."""
    g = "f" if kind == "direct" else "g"
    text = f"""func.func public @main(%x: {SCALAR}) -> {SCALAR} {{
  %y = func.call @f(%x) : ({SCALAR}) -> {SCALAR}
  return %y : {SCALAR}
}}
func.func private @f(%x: {SCALAR}) -> {SCALAR} {{
  %y = func.call @{g}(%x) : ({SCALAR}) -> {SCALAR}
  return %y : {SCALAR}
}}
"""
    if kind == "mutual":
        text += f"""func.func private @g(%x: {SCALAR}) -> {SCALAR} {{
  %a = stablehlo.abs %x : {SCALAR}
  %y = func.call @f(%a) : ({SCALAR}) -> {SCALAR}
  return %y : {SCALAR}
}}
"""
    return text


def call_bomb(depth: int) -> str:
    """f<depth> calls f<depth-1> twice, ..., f0 is abs: 2**depth copies of abs once inlined."""
    funcs = [f"""func.func public @main(%x: {SCALAR}) -> {SCALAR} {{
  %y = func.call @f{depth}(%x) : ({SCALAR}) -> {SCALAR}
  return %y : {SCALAR}
}}
func.func private @f0(%x: {SCALAR}) -> {SCALAR} {{
  %y = stablehlo.abs %x : {SCALAR}
  return %y : {SCALAR}
}}"""]
    for d in range(1, depth + 1):
        funcs.append(f"""func.func private @f{d}(%x: {SCALAR}) -> {SCALAR} {{
  %a = func.call @f{d - 1}(%x) : ({SCALAR}) -> {SCALAR}
  %b = func.call @f{d - 1}(%a) : ({SCALAR}) -> {SCALAR}
  return %b : {SCALAR}
}}""")
    return "\n".join(funcs) + "\n"


def loops(trips: int, levels: int) -> str:
    """`levels` while loops nested in each other's bodies, each running `trips` times
    (trips ** levels iterations in all); the innermost body takes abs(x)."""
    i32 = "tensor<i32>"

    def loop(level: int, acc: str) -> list[str]:
        if level == levels:
            return [f"%a{level} = stablehlo.abs {acc} : {SCALAR}"]
        k = level
        return [f"%c{k} = stablehlo.constant dense<0> : {i32}",
                f"%w{k}:2 = stablehlo.while(%i{k} = %c{k}, %v{k} = {acc}) : {i32}, {SCALAR}",
                "cond {",
                f"%n{k} = stablehlo.constant dense<{trips}> : {i32}",
                f"%p{k} = stablehlo.compare LT, %i{k}, %n{k}, SIGNED : ({i32}, {i32}) -> tensor<i1>",
                f"stablehlo.return %p{k} : tensor<i1>",
                "} do {",
                f"%one{k} = stablehlo.constant dense<1> : {i32}",
                f"%j{k} = stablehlo.add %i{k}, %one{k} : {i32}",
                *loop(level + 1, f"%v{k}"),
                f"stablehlo.return %j{k}, %a{level + 1} : {i32}, {SCALAR}",
                "}",
                f"%a{level} = stablehlo.abs %w{k}#1 : {SCALAR}"]

    body = "\n".join(loop(0, "%x"))
    return f"func.func public @main(%x: {SCALAR}) -> {SCALAR} {{\n{body}\nreturn %a0 : {SCALAR}\n}}\n"


def chain(n: int, bug: bool = False) -> str:
    """v0 = x + y, v_k = v_(k-1) + y: n dependent adds; with `bug` the middle one multiplies."""
    t = "tensor<4xf32>"
    lines = [f"func.func public @main(%x: {t}, %y: {t}) -> {t} {{", f"%v0 = stablehlo.add %x, %y : {t}"]
    for k in range(1, n):
        op = "multiply" if bug and k == n // 2 else "add"
        lines.append(f"%v{k} = stablehlo.{op} %v{k - 1}, %y : {t}")
    return "\n".join(lines) + f"\nreturn %v{n - 1} : {t}\n}}\n"
