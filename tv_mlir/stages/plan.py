"""Where the two flat programs are cut into stages.

Every top-level op is one of:
- *const*: depends on no argument (constants, iotas, masks, device ids): copied into every
  stage that uses it, so a stage never takes it as an input;
- *prologue*: moves arguments' data only (a layer's slice of stacked weights, a reshape,
  an FSDP all-gather of a weight: LAYOUT ops of arguments and of prologue values): computed
  once, before the stages; the other program's prologue
  values that hold a reference value (their lineage) are proved by the prologue stage and
  given to the stages as inputs, the rest are copied into the stages that use them;
- *flow*: everything else (the activations), in program order.

A cut after `i` flow ops of the reference and `j` of the other program is admissible when
every flow value of the other program live across it holds a reference value defined
before the reference's cut, and those reference values cover every reference flow value
live across it: then the stage between two cuts has matched inputs and proves its
outputs' lineage. Cuts are chosen greedily in program order (for each reference cut, the
earliest admissible other cut after the previous one)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tv_mlir.ir import Block, Module, Op, TensorType
from tv_mlir.semantics.ops import VALUE_IDENTITIES
from tv_mlir.stages.lineage import Link

# Ops that only move, copy or convert data: a chain of them from an argument is the
# argument laid out for one use (a layer's weights), which the stages take as an input so
# that layers reading different weights are the same stage.
LAYOUT = frozenset(f"stablehlo.{n}" for n in (
    "slice", "dynamic_slice", "reshape", "transpose", "broadcast_in_dim", "convert", "concatenate",
    "all_gather", "all_to_all", "collective_permute", "copy")) | VALUE_IDENTITIES

# How far past the previous cut the other program's cut is looked for, in flow ops.
WINDOW = 256


def region_uses(op: Op) -> list[str]:
    """Values the op reads: its operands and what its regions read from outside."""
    used = list(op.operands)
    if op.regions:
        defined: set[str] = set()
        inner: list[str] = []
        stack: list[Block] = list(op.regions)
        while stack:
            b = stack.pop()
            defined.update(b.args)
            for o in b.ops:
                inner.extend(o.operands)
                defined.update(o.results)
                stack.extend(o.regions)
            inner.extend(b.returns)
        used += [v for v in dict.fromkeys(inner) if v not in defined]
    return used


@dataclass
class Side:
    """One flat program, classified."""

    module: Module
    kind: dict[str, str] = field(default_factory=dict)  # value -> arg | const | prologue | flow
    producer: dict[str, Op] = field(default_factory=dict)
    flow: list[Op] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)  # flow value -> index of its op in `flow`
    last_use: dict[str, int] = field(default_factory=dict)  # flow value -> last flow op index using it
    types: dict[str, TensorType] | None = None  # every value's type (filled on first use)
    order: dict[int, int] | None = None  # id(op) -> its index in the block (filled on first use)

    @classmethod
    def of(cls, module: Module) -> Side:
        side = cls(module)
        body = module.main.body
        for a in body.args:
            side.kind[a] = "arg"
        for op in body.ops:
            kinds = {side.kind.get(v, "const") for v in region_uses(op)}
            if not kinds & {"arg", "prologue", "flow"}:
                k = "const"
            elif op.name in LAYOUT and not kinds & {"flow"}:
                k = "prologue"
            else:
                k = "flow"
            for r in op.results:
                side.kind[r] = k
                side.producer[r] = op
            if k == "flow":
                for r in op.results:
                    side.position[r] = len(side.flow)
                for v in region_uses(op):
                    if side.kind.get(v) == "flow":
                        side.last_use[v] = len(side.flow)
                side.flow.append(op)
        for v in body.returns:
            if side.kind.get(v) == "flow":
                side.last_use[v] = len(side.flow)
        return side

    def live(self) -> list[frozenset[str]]:
        """The flow values live across each cut 0..len(flow): defined before it, used after."""
        out: list[frozenset[str]] = [frozenset()]
        current: set[str] = set()
        ending: dict[int, list[str]] = {}
        for v, last in self.last_use.items():
            ending.setdefault(last, []).append(v)
        for c, op in enumerate(self.flow):
            for r in op.results:
                if self.last_use.get(r, -1) > c:
                    current.add(r)
            current.difference_update(ending.get(c, ()))
            out.append(frozenset(current))
        return out

    def cone(self, values: Iterable[str], kinds: frozenset[str]) -> list[Op]:
        """The ops of the given kinds that compute `values`, in program order."""
        seen: set[int] = set()
        stack = [v for v in values if self.kind.get(v) in kinds]
        while stack:
            v = stack.pop()
            op = self.producer[v]
            if id(op) in seen:
                continue
            seen.add(id(op))
            stack.extend(u for u in region_uses(op) if self.kind.get(u) in kinds)
        return [op for op in self.module.main.body.ops if id(op) in seen]


@dataclass(frozen=True)
class Cuts:
    ref: tuple[int, ...]  # flow positions, from 0 to len(ref.flow)
    other: tuple[int, ...]


def choose_cuts(ref: Side, other: Side, links: dict[str, Link]) -> Cuts:
    ref_live = ref.live()
    other_live = other.live()
    targets: list[frozenset[str] | None] = []
    newest: list[int] = []
    for live in other_live:
        ts: set[str] = set()
        last = -1
        for v in live:
            link = links.get(v)
            if link is None or ref.kind.get(link.ref) == "const":
                ts = set()
                last = 1 << 60
                break
            ts.add(link.ref)
            last = max(last, ref.position.get(link.ref, -1))
        targets.append(frozenset(ts) if last < 1 << 60 else None)
        newest.append(last)
    reachable = set().union(*(t for t in targets if t is not None)) if targets else set()
    cuts_r, cuts_o = [0], [0]
    n_r, n_o = len(ref.flow), len(other.flow)
    for i in range(1, n_r + 1):  # i == n_r: the reference is done, the other still has ops
        need = ref_live[i]
        if not need <= reachable:
            continue
        j0 = cuts_o[-1]
        for j in range(j0, min(n_o, j0 + WINDOW)):
            t = targets[j]
            if t is not None and need <= t and newest[j] < i:
                if j == j0 and i == cuts_r[-1]:
                    continue
                cuts_r.append(i)
                cuts_o.append(j)
                break
    cuts_r.append(n_r)
    cuts_o.append(n_o)
    # A cut with no op of either program since the previous one is the same cut.
    keep_r, keep_o = [cuts_r[0]], [cuts_o[0]]
    for a, b in zip(cuts_r[1:], cuts_o[1:]):
        if (a, b) != (keep_r[-1], keep_o[-1]):
            keep_r.append(a)
            keep_o.append(b)
    return Cuts(tuple(keep_r), tuple(keep_o))
