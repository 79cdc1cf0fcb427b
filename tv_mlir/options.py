"""All user options in one frozen object that travels through the pipeline. Values are
checked when the object is made (also by `dataclasses.replace`), so the Python API and the
CLI reject the same bad values with the same `UsageError`."""
from __future__ import annotations

import math
from dataclasses import dataclass

from tv_mlir.errors import UsageError

MIB = 2**20
# Inputs (files, streams, stdin) larger than this are refused before they are read whole:
# jaxlib's parser needs several times the text's size, and a 200 MB module does not get a
# verdict in any useful time anyway. `--max-input-mb` / TV_MLIR_MAX_INPUT_MB raise it.
DEFAULT_MAX_INPUT_BYTES = 64 * MIB


@dataclass(frozen=True)
class Options:
    timeout_s: float = 60.0  # per solver query
    jobs: int = 1  # parallel solver processes
    pipeline: str = "default"  # a named pipeline (tv_mlir/passes/pipelines/NAME.txt) or a pipeline file
    shrink: bool = True
    max_unroll: int = 100_000  # while-loop iterations before `unknown`
    replay: bool = True  # replay counterexamples on the float64 interpreter and XLA (always when approximated)
    progress: bool = False  # phase lines on stderr
    sweep: bool = True  # cut points and merging of proven-equal intermediate values
    strict_dtypes: bool = False  # precision findings make the verdict not-equivalent
    # The symbolic core: "own" (the project's hash-consed terms, issue 11) or "z3" (terms
    # built in z3, the earlier core; tests/test_core_differential.py holds it to the same
    # verdicts until it is removed).
    core: str = "own"
    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES  # per input file, stream or stdin

    def __post_init__(self) -> None:
        _check_positive_number("timeout_s", self.timeout_s)
        _check_positive_int("jobs", self.jobs)
        _check_positive_int("max_unroll", self.max_unroll)
        _check_positive_int("max_input_bytes", self.max_input_bytes)
        if not isinstance(self.pipeline, str):
            raise UsageError(f"option pipeline must be a name or a file path (str), got {type(self.pipeline).__name__}")


def _check_positive_number(name: str, value: object) -> None:
    # bool is an int subclass; True seconds is a mistake, not 1 s. nan and inf would reach
    # z3 as a timeout in milliseconds (int(nan) raises, inf never ends).
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    if not ok:
        raise UsageError(f"option {name} must be a finite number > 0, got {value!r}")


def _check_positive_int(name: str, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UsageError(f"option {name} must be an integer >= 1, got {value!r}")
