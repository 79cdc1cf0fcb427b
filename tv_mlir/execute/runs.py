"""Numeric runs made once and read twice: the stage cut's lineage runs of a pair, handed to
the whole proof of the same pair when the cut is not used (`stages/run.py`, a plan with one
dominant stage), so that the proof's fingerprint runs do not compute them again
(`driver._numeric_runs`). Only evidence travels this way: the runs nominate merges and
show random counterexamples, which the proof then proves or checks exactly."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tv_mlir.ir import Module


@dataclass
class Run:
    """One run of a program on one input set, as `prove.fingerprints.numeric_trace` records
    it: every top-level value by name (a per-device op's results as `name@device`, every
    device), the outputs, the replica checks."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: list[np.ndarray] = field(default_factory=list)
    checks: list[Any] = field(default_factory=list)


@dataclass
class KnownRuns:
    """Runs of the pair `ref`, `other` (these very module objects) on `input_sets[k]`, per
    input set index k."""

    ref: Module
    other: Module
    input_sets: dict[int, list[np.ndarray]]
    ref_runs: dict[int, Run]
    other_runs: dict[int, Run]

    def usable(self, ref: Module, other: Module, input_sets: list[list[np.ndarray]]) -> list[int]:
        """The input set indices whose runs are of these programs on these very inputs."""
        if ref is not self.ref or other is not self.other:
            return []
        return [k for k, given in self.input_sets.items()
                if k < len(input_sets) and k in self.ref_runs and k in self.other_runs
                and _same_inputs(given, input_sets[k])]

    def take(self, ref: Module, other: Module, input_sets: list[list[np.ndarray]]
             ) -> tuple[dict[int, Run], dict[int, Run]]:
        """The usable runs of each program, by input set index; read once: every run is
        dropped from here (the ones not taken are memory the proof need not hold)."""
        at = self.usable(ref, other, input_sets)
        taken = {k: self.ref_runs[k] for k in at}, {k: self.other_runs[k] for k in at}
        self.input_sets.clear()
        self.ref_runs.clear()
        self.other_runs.clear()
        return taken


def _same_inputs(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y)
                                    for x, y in zip(a, b))


__all__ = ["KnownRuns", "Run"]
