"""Streams and signals on the real CLI: a closed or full stdout is one error line and exit 3;
SIGINT is 130 and SIGTERM 143, promptly, with every solver worker process killed and reaped."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import (
    CUBES,
    CUBES_OTHER,
    GOOD_A,
    GOOD_B,
    TV_MLIR,
    alive,
    children,
    cli,
    env,
    kill_all,
    one_error_line,
    wait_for_stderr,
)

A, B = str(GOOD_A), str(GOOD_B)


def test_closed_pipe_on_stdout() -> None:
    r, w = os.pipe()
    os.close(r)  # `| head -c0`: the reader is gone before anything is written
    try:
        p = cli("verify", A, B, stdout=w, stderr=subprocess.PIPE)
    finally:
        os.close(w)
    assert "cannot write to stdout: Broken pipe" in one_error_line(p, 3)


def test_full_disk_and_closed_stdout() -> None:
    with open("/dev/full", "wb") as full:
        p = cli("verify", "--json", A, B, stdout=full, stderr=subprocess.PIPE)
    assert "cannot write to stdout: No space left on device" in one_error_line(p, 3)
    p = subprocess.run([TV_MLIR, "verify", A, B], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env(),
                       timeout=60, preexec_fn=lambda: os.close(1))  # started with stdout closed (>&-)
    assert "cannot write to stdout" in one_error_line(p, 3)


@pytest.fixture(scope="module")
def cubes(tmp_path_factory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("cubes")
    (d / "a.mlir").write_text(CUBES)
    (d / "b.mlir").write_text(CUBES_OTHER)
    return str(d / "a.mlir"), str(d / "b.mlir")


def _solving(cubes: tuple[str, str], jobs: int, *extra: str, new_session: bool = False) -> subprocess.Popen[bytes]:
    """A run that has reached the solver (queries that take the whole 30 s timeout)."""
    proc = subprocess.Popen([TV_MLIR, "verify", "--progress", "--timeout", "30", "--jobs", str(jobs), *extra, *cubes],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(), start_new_session=new_session)
    try:
        # Generous: on a loaded machine the phases before the solver have taken over 30 s.
        wait_for_stderr(proc, b"tv-mlir: solving 2 queries", timeout=120)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    time.sleep(0.5)  # into z3 (or the worker processes)
    if proc.poll() is not None:  # the query was meant to run for 30 s
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"the run ended before the signal: {out.decode()} {err.decode()}")
    return proc


def _ended(proc: subprocess.Popen[bytes], leftovers: list[int], within: float = 10) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a run that must end within `within` seconds; on
    failure the run and `leftovers` are killed."""
    try:
        out, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        kill_all([proc.pid, *leftovers])
        proc.communicate(timeout=10)
        raise AssertionError(f"still running {within} s after the signal") from None
    return proc.returncode, out.decode(), err.decode()


def _reaped(workers: list[int]) -> None:
    time.sleep(0.2)
    left = [w for w in workers if alive(w)]
    kill_all(left)
    assert not left, "worker processes left behind"


@pytest.mark.parametrize("jobs,sig,code", [(1, signal.SIGINT, 130), (2, signal.SIGTERM, 143)],
                         ids=["jobs1-SIGINT", "jobs2-SIGTERM"])
def test_signal_during_solving(cubes, jobs: int, sig: int, code: int) -> None:
    proc = _solving(cubes, jobs)
    workers = children(proc.pid)
    proc.send_signal(sig)
    rc, out, err = _ended(proc, workers)
    _reaped(workers)
    assert len(workers) == (2 if jobs == 2 else 0), workers
    assert rc == code, (out, err)
    assert err.strip().splitlines()[-1] == f"tv-mlir: interrupted ({signal.Signals(sig).name})"
    assert "Traceback" not in err and out == ""


def test_ctrl_c_to_the_process_group_with_json(cubes) -> None:
    # A terminal's Ctrl-C reaches the workers too: they must not print anything.
    proc = _solving(cubes, 2, "--json", new_session=True)
    workers = children(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    rc, out, err = _ended(proc, workers)
    _reaped(workers)
    assert rc == 130 and "Traceback" not in err and "KeyboardInterrupt" not in err, (rc, out, err)
    assert json.loads(out) == {"verdict": "error", "exit_code": 130, "kind": "interrupted",
                               "error": "interrupted (SIGINT)"}


STUCK = """
import hashlib, multiprocessing, sys, time
from tv_mlir import api, cli

def stuck(*args, **kwargs):
    child = multiprocessing.Process(target=time.sleep, args=(60,), daemon=True)
    child.start()
    print(f"child {child.pid}", file=sys.stderr, flush=True)
    hashlib.pbkdf2_hmac("sha256", b"x", b"y", 10**9)  # minutes in C code that never looks at signals
    raise AssertionError("not interrupted")

api.verify = stuck
sys.exit(cli.main(["verify", "a.mlir", "b.mlir"]))
"""


def test_signal_while_stuck_in_c_code(tmp_path: Path) -> None:
    """The main thread cannot raise while inside C code; the CLI still ends within its grace
    period, with the contract's code and no child left."""
    proc = subprocess.Popen([sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env(), cwd=tmp_path)
    seen = wait_for_stderr(proc, b"child ")
    child = int(seen.split(b"child ")[1].split()[0])
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    rc, _, err = _ended(proc, [child], within=8)
    _reaped([child])
    assert rc == 143 and err.strip() == "tv-mlir: interrupted (SIGTERM)"
