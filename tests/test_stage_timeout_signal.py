"""The CLI's signal guard and an in-process stage's time limit (stages/pool.py uses SIGALRM):
the alarm is not an interruption. The guard's watcher hears every signal through the wakeup
fd; it took the alarm for Ctrl-C and ended a run that went on past its grace time with exit
142 (seen on the flax train step: a stage timed out, the whole proof then ran)."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import time
from tv_mlir.cli import GRACE_S, _SignalGuard
from tv_mlir.stages.pool import _JobTimeout, _time_limit

with _SignalGuard(lambda exc: 99) as guard:
    try:
        with _time_limit(0.1):
            time.sleep(5)
    except _JobTimeout:
        pass
    time.sleep(GRACE_S + 1.5)  # the run goes on after the stage's timeout
    print("alive", guard.finish())
"""


def test_a_stage_time_limit_does_not_end_the_cli_run() -> None:
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.split() == ["alive", "True"], (p.returncode, p.stdout, p.stderr[-500:])
