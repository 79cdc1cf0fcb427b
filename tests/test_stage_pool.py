"""tv_mlir.stages.pool: jobs run in the calling process, in spawned worker processes and on
Ray; a job that raises, passes its timeout or kills its worker gets an error result and the
other jobs go on. The job functions live in tests/_pool_jobs.py, importable by the workers."""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from pathlib import Path

import _pool_jobs as pj
import numpy as np
import pytest

from tv_mlir.errors import UsageError
from tv_mlir.stages.pool import Executor, Job, JobResult, run_jobs

LOCAL = Executor("local")
# Spawned workers import tv_mlir (and so jax) before their first job: seconds per test.
SLOW = pytest.mark.slow


@pytest.mark.parametrize("text, want", [
    ("local", Executor("local")),
    ("ray", Executor("ray")),
    ("ray:10.0.0.7:6379", Executor("ray", "10.0.0.7:6379")),
    ("ray:auto", Executor("ray", "auto")),
])
def test_parse_good(text, want):
    assert Executor.parse(text) == want


@pytest.mark.parametrize("text", ["", "Local", "ray:", "dask", "local:4", "processes"])
def test_parse_bad(text):
    with pytest.raises(UsageError) as e:
        Executor.parse(text)
    assert "\n" not in e.value.one_line() and "executor" in e.value.one_line()


def test_in_process_values_in_order_errors_and_on_done():
    seen: list[JobResult] = []
    jobs = [Job("a", pj.square, (3,)), Job("b", pj.fail, (1,)), Job("c", pj.total, (np.arange(5.0),)),
            Job("d", pj.pid)]
    rs = run_jobs(jobs, workers=1, executor=LOCAL, timeout_s=30, on_done=seen.append)
    assert [r.key for r in rs] == ["a", "b", "c", "d"]
    assert [r.ok for r in rs] == [True, False, True, True]
    assert rs[0].value == 9 and rs[2].value == 10.0
    assert rs[1].error == "ValueError: bad input 1" and rs[1].value is None
    assert rs[3].value == os.getpid()  # one worker: no process is started
    assert [r.key for r in seen] == ["a", "b", "c", "d"]


def test_in_process_timeout_stops_only_that_job():
    """One worker runs the jobs in this process; the stage timeout still holds there (a
    signal), the jobs after it run, and no alarm or handler is left behind."""
    import signal

    before = signal.getsignal(signal.SIGALRM)
    t0 = time.monotonic()
    jobs = [Job("slow", pj.sleep_then, (1, 60)), Job("a", pj.square, (4,)), Job("b", pj.sleep_then, (7, 0.01))]
    rs = run_jobs(jobs, workers=1, executor=LOCAL, timeout_s=0.5)
    assert time.monotonic() - t0 < 10
    assert not rs[0].ok and rs[0].error == "timed out after 0.5 s"
    assert [(r.ok, r.value) for r in rs[1:]] == [(True, 16), (True, 7)]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is before


def test_single_job_runs_here_even_with_workers():
    (r,) = run_jobs([Job("only", pj.pid)], workers=4, executor=LOCAL, timeout_s=30)
    assert r.ok and r.value == os.getpid()


@SLOW
def test_processes_values_in_order():
    seen: list[str] = []
    jobs = [Job(f"j{i}", pj.square, (i,)) for i in range(4)] + [Job("pid", pj.pid)]
    rs = run_jobs(jobs, workers=2, executor=LOCAL, timeout_s=60, on_done=lambda r: seen.append(r.key))
    assert [r.key for r in rs] == ["j0", "j1", "j2", "j3", "pid"]
    assert all(r.ok for r in rs), [r.error for r in rs]
    assert [r.value for r in rs[:4]] == [0, 1, 4, 9]
    assert rs[4].value != os.getpid()
    assert sorted(seen) == sorted(r.key for r in rs)
    assert multiprocessing.active_children() == []


@SLOW
def test_processes_timeout_kills_only_that_job():
    jobs = [Job("slow", pj.sleep_then, (1, 120)), Job("a", pj.square, (2,)), Job("b", pj.square, (5,))]
    rs = run_jobs(jobs, workers=2, executor=LOCAL, timeout_s=2)
    assert not rs[0].ok and rs[0].error == "timed out after 2 s"
    assert [(r.ok, r.value) for r in rs[1:]] == [(True, 4), (True, 25)]
    assert multiprocessing.active_children() == []


@SLOW
def test_processes_crash_and_exception_are_isolated():
    jobs = [Job("a", pj.square, (2,)), Job("dies", pj.die, (3,)), Job("bad", pj.fail, (7,)),
            Job("c", pj.total, (np.ones(3),))]
    rs = run_jobs(jobs, workers=2, executor=LOCAL, timeout_s=60)
    assert not rs[1].ok and rs[1].error == "worker crashed (exit code 3)"
    assert not rs[2].ok and rs[2].error == "ValueError: bad input 7"  # first line only
    assert [(r.ok, r.value) for r in (rs[0], rs[3])] == [(True, 4), (True, 3.0)]


@SLOW
def test_processes_interrupt_terminates_workers():
    def interrupt(r: JobResult) -> None:
        raise KeyboardInterrupt

    jobs = [Job("a", pj.square, (1,)), Job("slow", pj.sleep_then, (2, 120))]
    with pytest.raises(KeyboardInterrupt):
        run_jobs(jobs, workers=2, executor=LOCAL, timeout_s=300, on_done=interrupt)
    assert multiprocessing.active_children() == []


def test_ray_missing_is_a_usage_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(UsageError, match=r"pip install 'tv-mlir\[ray\]'"):
        run_jobs([Job("a", pj.square, (1,))], workers=1, executor=Executor("ray"), timeout_s=10)


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    # Ray's workers do not get pytest's sys.path; they inherit the environment of the raylet
    # that ray.init starts, so the job module's folder goes on PYTHONPATH for that moment.
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parent), old) if p)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    yield ray
    ray.shutdown()


RAY = Executor("ray")


@SLOW
def test_ray_values_in_order(ray_cluster):
    seen: list[str] = []
    jobs = [Job(f"j{i}", pj.square, (i,)) for i in range(4)] + [Job("sum", pj.total, (np.arange(4.0),))]
    rs = run_jobs(jobs, workers=2, executor=RAY, timeout_s=120, on_done=lambda r: seen.append(r.key))
    assert [r.key for r in rs] == ["j0", "j1", "j2", "j3", "sum"]
    assert all(r.ok for r in rs), [r.error for r in rs]
    assert [r.value for r in rs] == [0, 1, 4, 9, 6.0]
    assert sorted(seen) == sorted(r.key for r in rs)
    assert ray_cluster.is_initialized()  # started by the caller: left running


@SLOW
def test_ray_exception_and_crash(ray_cluster):
    jobs = [Job("bad", pj.fail, (1,)), Job("dies", pj.die, (3,)), Job("good", pj.square, (6,))]
    rs = run_jobs(jobs, workers=2, executor=RAY, timeout_s=120)
    assert not rs[0].ok and rs[0].error == "ValueError: bad input 1"
    assert not rs[1].ok and rs[1].error.startswith("worker crashed (")
    assert rs[2].ok and rs[2].value == 36


def _two_ray_workers_ready() -> None:
    """Have two Ray workers running tv_mlir's task wrapper before a job's clock starts: the
    first tasks of a fresh (or crash-restarted) worker wait for its start-up, tens of seconds
    on a loaded machine, and that wait counts against a job's timeout."""
    for _ in range(20):
        rs = run_jobs([Job(k, pj.pid_after, (0.5,)) for k in "ab"], workers=2, executor=RAY, timeout_s=600)
        if all(r.ok for r in rs) and rs[0].value != rs[1].value:
            return
    pytest.fail("Ray never ran two tasks at once on two workers")


@SLOW
def test_ray_timeout(ray_cluster):
    _two_ray_workers_ready()
    jobs = [Job("slow", pj.sleep_then, (1, 120)), Job("a", pj.square, (2,))]
    # With the workers up, the quick job takes milliseconds; 5 s leaves room for a machine
    # loaded past its cores. The slow one must be cancelled at its timeout, not run out.
    t0 = time.monotonic()
    rs = run_jobs(jobs, workers=2, executor=RAY, timeout_s=5)
    assert not rs[0].ok and rs[0].error == "timed out after 5 s"
    assert rs[1].ok and rs[1].value == 4
    assert time.monotonic() - t0 < 60
