"""Job functions for tests/test_stage_pool.py, in a module of their own so that spawned
workers (and Ray workers) import them by reference without importing the test module."""
from __future__ import annotations

import os
import time

import numpy as np


def square(x: int) -> int:
    return x * x


def total(a: np.ndarray) -> float:
    return float(np.sum(a))


def fail(x: int) -> int:
    raise ValueError(f"bad input {x}\nsecond line")


def sleep_then(x: int, seconds: float) -> int:
    time.sleep(seconds)
    return x


def die(code: int) -> int:
    os._exit(code)


def pid() -> int:
    return os.getpid()


def pid_after(seconds: float) -> int:
    """The worker's pid, after holding it for `seconds`: two of these at once need two workers."""
    time.sleep(seconds)
    return os.getpid()
