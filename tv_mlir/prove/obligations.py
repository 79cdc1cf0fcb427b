"""What the two programs must agree on: each output, and each extra copy of a value one
program declares replicated (`ReplicaCheck`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.execute.spmd import ReplicaCheck
from tv_mlir.ir import Module


@dataclass
class Obligation:
    """A pair of arrays that must be equal element by element: an output of both programs,
    or two copies of a value one program declares replicated."""

    what: str  # "output 0", "replicas of output 0 in other.mlir: devices 0 and 3"
    kind: Kind
    # An output: the reference's and the other program's. Replicas: the copy taken into
    # the global value and the extra copy that must equal it.
    ref: np.ndarray
    other: np.ndarray
    output: int = 0  # the program output it is about (replicas: -1 when not an output)
    offset: tuple[int, ...] = ()  # where the arrays sit in the global value
    devices: tuple[int, int] | None = None
    side: str = ""  # for replicas: "ref" or "other"
    check: int = -1  # position in that side's replica check list
    position: int = 0  # in the list of obligations

    def global_index(self, idx: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(i + o for i, o in zip(idx, self.offset)) if self.offset else idx


def build_obligations(ref: Module, other: Module, ref_out: list[np.ndarray], other_out: list[np.ndarray],
                      ref_checks: list[ReplicaCheck], other_checks: list[ReplicaCheck]) -> list[Obligation]:
    """Outputs first (in order), then every replica obligation of either program."""
    out = [Obligation(f"output {i}", Kind.of(t), a, b, i) for i, (t, a, b) in
           enumerate(zip(ref.global_result_types(), ref_out, other_out))]
    for side, module, checks in (("other", other, other_checks), ("ref", ref, ref_checks)):
        returns = list(module.main.body.returns)
        for j, c in enumerate(checks):
            output = int(c.value.split()[1]) if c.value.startswith("output ") else \
                (returns.index(c.value) if c.value in returns else -1)
            label = f"output {output}" if output >= 0 else f"{c.what} ({c.loc})"
            axes = ", ".join(c.axes)
            kind = Kind.of(c.type)
            out.append(Obligation(f"replicas of {label} in {module.source} over {{{axes}}}: devices {c.device_a} "
                              f"and {c.device_b}", kind, c.a, c.b, output, c.offset,
                              (c.device_a, c.device_b), side, j))
    for k, t in enumerate(out):
        t.position = k
    return out
