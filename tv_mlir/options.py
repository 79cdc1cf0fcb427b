"""All user options in one frozen object that travels through the pipeline."""
from __future__ import annotations

from dataclasses import dataclass


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
