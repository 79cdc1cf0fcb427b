"""XLA in a child process, so that XLA cannot take the verifier down with it.

XLA's compiler stops on an internal CHECK failure by aborting the process that runs it
(SIGABRT: no exception, no verdict, a core dump). A partitioned module with a sharding
the SPMD partitioner does not support (an `unreduced` axis over a dimension that the
shrunk sizes no longer divide) is enough. `IsolatedXlaRunner` has the methods of
`XlaRunner` and runs them in one long-lived child process (jax is imported once, the
compiled modules stay cached there); a child that dies turns into `XlaRunError` naming
XLA's failed check, which every caller already reads as "XLA could not run this", and
the next call starts a new child.

The child is `python -m tv_mlir.execute.xla_child`, not a multiprocessing child: those
re-import the caller's main module, and a user's script that calls `verify` at top level
would run again in every child. Requests and replies are pickled over the child's
stdin and a private copy of its stdout (numpy arrays and index tuples; nothing that is
ever stored); the child's stdout and stderr (XLA's log lines) go to a temporary file, read
back only to name the failed check."""
from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

from tv_mlir.execute.xla import Blocks, XlaRunError, XlaRunner, host_device_flags


@dataclass
class IsolatedXlaRunner(XlaRunner):
    """`XlaRunner`'s `run`, `run_spmd` and `run_global`, in a child process (nothing of
    the parent's own compile cache is used)."""

    _proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    # (method, module digest) -> why the child died on it: a failed CHECK fails again, and
    # each new child costs an import of jax (seconds), so such a module is not sent again.
    _fatal: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False)
    _owner: int = field(default_factory=os.getpid, init=False, repr=False)  # the process the child serves

    def run(self, module: str | bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return self._call("run", module, list(inputs))

    def run_spmd(self, module: str | bytes, per_device_inputs: Sequence[Sequence[np.ndarray]], *,
                 per_device_program: bool = False) -> list[list[np.ndarray]]:
        return self._call("run_spmd", module, [list(x) for x in per_device_inputs],
                          per_device_program=per_device_program)

    def run_global(self, module: str | bytes, inputs: Sequence[np.ndarray], num_devices: int,
                   result_shapes: Sequence[tuple[int, ...]]) -> tuple[list[np.ndarray], Blocks]:
        return self._call("run_global", module, list(inputs), num_devices, [tuple(s) for s in result_shapes])

    def forget(self) -> None:
        """Drop the child's compiled modules (the end of one verification), keeping the
        child and its jax for the next."""
        proc = self._proc
        if proc is None or proc.poll() is not None or self._owner != os.getpid():
            return
        assert proc.stdin is not None and proc.stdout is not None
        try:
            pickle.dump(("forget", (), {}), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
            pickle.load(proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            self._died()
        except BaseException:
            self._abandon()  # as in `_call`: no reply may be left unread
            raise

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and self._owner == os.getpid():
            try:
                assert proc.stdin is not None
                proc.stdin.close()  # the child's loop ends at end of input
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter shutdown the modules it needs may be gone
            pass

    # -- the protocol ------------------------------------------------------------
    def _start(self) -> subprocess.Popen[bytes]:
        # The device count must be in XLA_FLAGS before the child loads XLA.
        host_device_flags()
        self._log = tempfile.TemporaryFile()
        env = dict(os.environ)
        # The child imports this package as the parent did (a source tree, an install).
        env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), env.get("PYTHONPATH", "")] if p)
        with warnings.catch_warnings():
            # jax warns at every fork of a process that loaded it; this one execs at once.
            warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
            self._proc = subprocess.Popen([sys.executable, "-m", "tv_mlir.execute.xla_child"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=self._log, env=env)
        return self._proc

    def _call(self, method: str, module: str | bytes, *args: Any, **kwargs: Any) -> Any:
        key = (method, hashlib.sha256(module.encode() if isinstance(module, str) else module).hexdigest())
        fatal = self._fatal.get(key)
        if fatal is not None:
            raise XlaRunError(fatal)
        if self._owner != os.getpid():
            # A forked process (a stage worker) shares the parent's pipes to the child: it
            # must not write to them, so it starts a child of its own.
            self._proc, self._log, self._owner = None, None, os.getpid()
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        try:
            pickle.dump((method, (module, *args), kwargs), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
            status, payload = pickle.load(proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            fatal = self._fatal[key] = f"XLA stopped the process that ran it ({self._died()})"
            raise XlaRunError(fatal) from None
        except BaseException:
            # Interrupted between the request and its reply (a timeout's signal, Ctrl-C):
            # the reply left in the pipe would be read as the next request's answer,
            # another module's outputs. The child goes; the next call starts a new one.
            self._abandon()
            raise
        if status == "ok":
            return payload
        if isinstance(payload, Exception):
            raise payload
        raise XlaRunError(str(payload))

    def _abandon(self) -> None:
        """Kill the child whatever it is doing, and forget it."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _died(self) -> str:
        """Why the child ended: XLA's failed check when its log names one."""
        proc, self._proc = self._proc, None
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
        reason = f"exit status {code}" if code is None or code >= 0 else f"signal {-code}"
        log, self._log = self._log, None
        if log is not None:
            log.seek(0)
            lines = log.read().decode(errors="replace").splitlines()
            log.close()
            checks = [ln for ln in lines if "Check failed" in ln or ln.startswith("F")]
            if checks:
                return f"{reason}: {' '.join(checks[0].split())[:400]}"
        return reason


def shared_runner() -> IsolatedXlaRunner:
    """This process's XLA child, started on first use and kept: starting one imports jax
    in it (seconds), which every verification of a session (the test suite, a stage
    runner, a CI job checking many pairs) would otherwise pay again. Like jax's own
    backend it belongs to the process; a forked process gets its own (`_call`). Callers
    `forget` the compiled modules when a verification ends."""
    runner = _SHARED.get(os.getpid())
    if runner is None:
        runner = _SHARED[os.getpid()] = IsolatedXlaRunner()
    return runner


# One XLA child per process (see `shared_runner`): a resource like an open connection,
# not state any result depends on.
_SHARED: dict[int, IsolatedXlaRunner] = {}


def _serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    from tv_mlir.execute.xla import XlaRunner

    runner = XlaRunner()
    while True:
        try:
            method, args, kwargs = pickle.load(requests)
        except EOFError:
            return
        if method == "forget":
            runner = XlaRunner()  # its compiled modules go with the old one
            pickle.dump(("ok", None), replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
            continue
        try:
            reply: tuple[str, Any] = ("ok", getattr(runner, method)(*args, **kwargs))
        except Exception as exc:  # sent back and raised there: the parent decides
            try:
                pickle.dumps(exc)
                reply = ("err", exc)
            except Exception:
                reply = ("err", f"{type(exc).__name__}: {exc}")
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


if __name__ == "__main__":
    # Replies go to a private copy of stdout; anything else written to stdout (a library's
    # print) goes to the log with stderr, so it cannot corrupt a reply.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    _serve(sys.stdin.buffer, out)
