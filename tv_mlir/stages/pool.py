"""Runs independent proof jobs (stage proofs) in parallel, each isolated: a job whose worker
crashes or passes its timeout gets an error result and the other jobs go on."""
from __future__ import annotations

import contextlib
import math
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from tv_mlir.errors import UsageError

# A fresh spawned worker imports tv_mlir and then the job's own modules (jax, z3) before the
# job starts; that time is not the job's, so its clock starts at the worker's "start" message,
# and this much longer again is allowed before it (a worker that hangs while importing).
_STARTUP_GRACE_S = 120.0


@dataclass(frozen=True)
class Job:
    key: str  # unique per run (a stage hash)
    fn: Callable[..., Any]  # a module-level function: pickled by reference for the workers
    args: tuple[Any, ...] = ()


@dataclass
class JobResult:
    key: str
    ok: bool
    value: Any = None
    error: str = ""  # one line
    time_s: float = 0.0


@dataclass(frozen=True)
class Executor:
    kind: str  # "local" or "ray"
    address: str | None = None  # a Ray cluster's address, None for a local Ray instance

    @classmethod
    def parse(cls, text: str) -> Executor:
        if text in ("local", "ray"):
            return cls(text)
        if text.startswith("ray:") and len(text) > 4:
            return cls("ray", text[4:])
        raise UsageError(f"unknown executor {text!r}: expected local, ray, ray:HOST:PORT or ray:auto")


def _exc_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


def run_jobs(jobs: Sequence[Job], *, workers: int, executor: Executor, timeout_s: float,
             on_done: Callable[[JobResult], None] | None = None) -> list[JobResult]:
    """The results in the order of `jobs`; `on_done` sees each as it finishes, in this process."""
    done = on_done or (lambda r: None)
    if executor.kind == "ray":
        return _run_ray(jobs, max(1, workers), executor.address, timeout_s, done)
    if workers <= 1 or len(jobs) <= 1:
        return _run_here(jobs, timeout_s, done)
    return _run_local(jobs, workers, timeout_s, done)


def _guarded(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool, Any]:
    """(True, fn's value) or (False, the one line of its exception); also the Ray task."""
    try:
        return True, fn(*args)
    except Exception as e:
        return False, _exc_line(e)


def _result(key: str, ok: bool, out: Any, t0: float) -> JobResult:
    return JobResult(key, ok, out if ok else None, "" if ok else out, time.monotonic() - t0)


class _JobTimeout(BaseException):
    """Raised into a job running in this process when its time is up. A BaseException, so
    that the job's own `except Exception` (and `_guarded`) let it through."""


@contextlib.contextmanager
def _time_limit(timeout_s: float) -> Iterator[None]:
    """_JobTimeout in the body after timeout_s seconds, by SIGALRM. Only the main thread
    receives signals; elsewhere (and without setitimer) the job's own solver timeouts are
    its only bound. A solver call in C finishes its own (short) timeout before the signal
    handler runs."""
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer")
            or not math.isfinite(timeout_s)):
        yield
        return

    def fire(signum: int, frame: Any) -> None:
        raise _JobTimeout

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_here(jobs: Sequence[Job], timeout_s: float, done: Callable[[JobResult], None]) -> list[JobResult]:
    # No process start-up cost for one worker or one job; the time limit is a signal.
    results = []
    for job in jobs:
        t0 = time.monotonic()
        try:
            with _time_limit(timeout_s):
                ok, out = _guarded(job.fn, job.args)
        except _JobTimeout:
            ok, out = False, f"timed out after {timeout_s:g} s"
        results.append(_result(job.key, ok, out, t0))
        done(results[-1])
    return results


def _worker_main(conn: Connection) -> None:
    # Ctrl-C reaches the whole process group; the parent decides what stops (it terminates us).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while (job := conn.recv()) is not None:  # unpickling the job imports its function's module
        conn.send(None)  # "started": the job's clock starts now, after the imports
        reply = _guarded(*job)
        try:
            conn.send(reply)
        except Exception as e:  # an unpicklable return value; send() pickles before writing
            conn.send((False, f"result not sendable: {_exc_line(e)}"))


@dataclass
class _Worker:
    proc: BaseProcess
    conn: Connection
    job: int = -1  # index of the job it runs, -1 when idle
    t0: float = 0.0  # when the job was sent, then when the worker said "start"
    deadline: float = 0.0

    def stop(self) -> None:
        self.proc.terminate()  # SIGTERM first, SIGKILL if it does not go
        self.proc.join(2)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def _run_local(jobs: Sequence[Job], workers: int, timeout_s: float,
               done: Callable[[JobResult], None]) -> list[JobResult]:
    # spawn, not fork: the jobs import jax, which is not fork-safe. Our own pool, not
    # ProcessPoolExecutor, because one dead worker breaks that whole pool.
    ctx = multiprocessing.get_context("spawn")
    results: list[JobResult | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))[::-1]  # popped from the end: in order
    pool: list[_Worker] = []

    def finish(w: _Worker, ok: bool, out: Any, retire: bool = False) -> None:
        r = results[w.job] = _result(jobs[w.job].key, ok, out, w.t0)
        w.job = -1
        if retire:  # a fresh worker is started for the remaining jobs
            w.stop()
            pool.remove(w)
        done(r)

    def crashed(w: _Worker) -> None:  # EOF on its pipe: it died
        w.proc.join(5)
        finish(w, False, f"worker crashed (exit code {w.proc.exitcode})", retire=True)

    try:
        while pending or any(w.job >= 0 for w in pool):
            while pending and (len(pool) < workers or any(w.job < 0 for w in pool)):
                if not (idle := [w for w in pool if w.job < 0]):
                    parent, child = ctx.Pipe()
                    proc = ctx.Process(target=_worker_main, args=(child,), daemon=True)
                    proc.start()
                    child.close()  # so that the parent sees EOF when the worker dies
                    pool.append(_Worker(proc, parent))
                w = idle[0] if idle else pool[-1]
                w.job, w.t0 = pending.pop(), time.monotonic()
                w.deadline = w.t0 + timeout_s + _STARTUP_GRACE_S
                try:
                    w.conn.send((jobs[w.job].fn, jobs[w.job].args))
                except (BrokenPipeError, ConnectionResetError):  # it died while starting
                    crashed(w)
                except Exception as e:  # unpicklable arguments; send() pickles before writing
                    finish(w, False, f"job not sendable: {_exc_line(e)}")
            busy = [w for w in pool if w.job >= 0]
            ready = wait([w.conn for w in busy], timeout=max(0.0, min(w.deadline for w in busy) - time.monotonic()))
            for w in busy:
                if w.conn in ready:
                    try:
                        reply = w.conn.recv()
                    except (EOFError, OSError):
                        crashed(w)
                        continue
                    if reply is None:
                        w.t0 = time.monotonic()
                        w.deadline = w.t0 + timeout_s
                    else:
                        finish(w, *reply)
                elif time.monotonic() >= w.deadline:
                    finish(w, False, f"timed out after {timeout_s:g} s", retire=True)
        for w in pool:  # the clean end: each worker leaves its loop
            with contextlib.suppress(OSError):
                w.conn.send(None)
            w.proc.join(5)
    finally:
        for w in pool:
            w.stop()  # also after an exception (KeyboardInterrupt), which goes on
    return [r for r in results if r is not None]


def _run_ray(jobs: Sequence[Job], workers: int, address: str | None, timeout_s: float,
             done: Callable[[JobResult], None]) -> list[JobResult]:
    try:
        import ray
        from ray import exceptions as rx
    except ImportError:
        raise UsageError("the ray executor needs the ray package: pip install 'tv-mlir[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        where = {"address": address} if address else {"num_cpus": workers, "include_dashboard": False}
        ray.init(**where, log_to_driver=False, ignore_reinit_error=True)
    # Functions travel by reference: a cluster's nodes need tv_mlir (and its jobs' modules) installed.
    remote = ray.remote(max_retries=0, num_cpus=1)(_guarded)
    results: list[JobResult | None] = [None] * len(jobs)
    pending = list(range(len(jobs)))[::-1]
    running: dict[Any, tuple[int, float]] = {}  # ref -> (job index, submit time)
    try:
        while pending or running:
            # At most `workers` in flight, so that a task's clock does not run while it queues.
            while pending and len(running) < workers:
                i = pending.pop()
                running[remote.remote(jobs[i].fn, jobs[i].args)] = (i, time.monotonic())
            wake = min(t for _, t in running.values()) + timeout_s - time.monotonic()
            ready, _ = ray.wait(list(running), num_returns=1, timeout=max(0.0, wake))
            now = time.monotonic()
            for ref in list(running):
                i, t0 = running[ref]
                if ref in ready:
                    try:
                        ok, out = ray.get(ref)  # fn's own exceptions are caught in the task
                    except Exception as e:  # Ray's: the worker died, or the task could not start
                        c = getattr(e, "cause", None)  # a RayTaskError wraps the real one
                        cause = c if isinstance(c, BaseException) else e
                        crashed = isinstance(cause, (rx.WorkerCrashedError, rx.OutOfMemoryError, rx.NodeDiedError))
                        ok, out = False, f"worker crashed ({type(cause).__name__})" if crashed else _exc_line(cause)
                elif now - t0 >= timeout_s:
                    ray.cancel(ref, force=True)
                    ok, out = False, f"timed out after {timeout_s:g} s"
                else:
                    continue
                del running[ref]
                results[i] = r = _result(jobs[i].key, ok, out, t0)
                done(r)
    finally:
        for ref in running:  # only after an exception: leave nothing running on the cluster
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()
    return [r for r in results if r is not None]
