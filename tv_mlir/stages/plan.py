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

import heapq
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

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
        for born, dead in self.live_changes():
            current.update(born)
            current.difference_update(dead)
            out.append(frozenset(current))
        return out

    def live_changes(self) -> list[tuple[list[str], list[str]]]:
        """Per flow op c: the values that become live across cut c + 1, and those that stop
        being live there (`live` without a set per cut: a 126-layer backward pass keeps a
        thousand activations live across most cuts)."""
        ending: dict[int, list[str]] = {}
        for v, last in self.last_use.items():
            ending.setdefault(last, []).append(v)
        return [([r for r in op.results if self.last_use.get(r, -1) > c], ending.get(c, []))
                for c, op in enumerate(self.flow)]

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
    # Sets as bits (one per reference flow value), kept up to date from cut to cut: a set
    # per cut costs its size, and a deep backward pass has thousands of cuts each with
    # thousands of live values.
    bit = {v: 1 << k for k, v in enumerate(ref.position)}
    ref_live = [0]
    mask = 0
    for born, dead in ref.live_changes():
        for v in born:
            mask |= bit[v]
        for v in dead:
            mask &= ~bit.get(v, 0)
        ref_live.append(mask)
    # Per cut of the other program: the reference flow values its live values hold (None
    # when one holds none, or only a constant) and the newest of their positions.
    targets: list[int | None] = [0]
    newest: list[int] = [-1]
    held: Counter[str] = Counter()  # reference value -> live values of ours holding it
    at: Counter[int] = Counter()  # reference position -> live values of ours holding a value there
    heap: list[int] = []  # negated positions in `at`, stale entries dropped lazily
    t_mask, bad = 0, 0
    live: set[str] = set()
    for born, dead in other.live_changes():
        for v, sign in [(v, 1) for v in born] + [(v, -1) for v in dead]:
            if (v in live) == (sign > 0):
                continue  # added twice, or removed without having been live
            if sign > 0:
                live.add(v)
            else:
                live.discard(v)
            link = links.get(v)
            if link is None or ref.kind.get(link.ref) == "const":
                bad += sign
                continue
            for r in (link.ref, *link.also):
                held[r] += sign
                if held[r] == (1 if sign > 0 else 0):
                    t_mask ^= bit.get(r, 0)
            # A value holding several equal reference values holds, at a cut, those made
            # before it: one is enough for the value (the oldest), and the cut's need is
            # only of values made before it.
            p = min(ref.position.get(r, -1) for r in (link.ref, *link.also))
            at[p] += sign
            if sign > 0 and at[p] == 1:
                heapq.heappush(heap, -p)
        while heap and at[-heap[0]] <= 0:
            heapq.heappop(heap)
        targets.append(t_mask if not bad else None)
        newest.append((-heap[0] if heap else -1) if not bad else 1 << 60)
    reachable = 0
    for t in targets:
        reachable |= t or 0
    cuts_r, cuts_o = [0], [0]
    n_r, n_o = len(ref.flow), len(other.flow)
    for i in range(1, n_r + 1):  # i == n_r: the reference is done, the other still has ops
        need = ref_live[i]
        if need & ~reachable:
            continue
        j0 = cuts_o[-1]
        admissible = partial(_admissible, targets, newest, need, i, j0 if i == cuts_r[-1] else -1)
        j = next((j for j in range(j0, min(n_o, j0 + WINDOW)) if admissible(j)), None)
        if j is not None:
            cuts_r.append(i)
            cuts_o.append(_before_loop(ref, other, i, j, min(n_o, j0 + WINDOW), admissible))
    cuts_r.append(n_r)
    cuts_o.append(n_o)
    # A cut with no op of either program since the previous one is the same cut.
    keep_r, keep_o = [cuts_r[0]], [cuts_o[0]]
    for a, b in zip(cuts_r[1:], cuts_o[1:]):
        if (a, b) != (keep_r[-1], keep_o[-1]):
            keep_r.append(a)
            keep_o.append(b)
    return Cuts(tuple(keep_r), tuple(keep_o))


def _admissible(targets: list[int | None], newest: list[int], need: int, i: int, repeat: int, j: int) -> bool:
    """Whether the other program's cut j may pair with reference cut i: its live values
    hold every reference value live across i, all made before i (`repeat`: the cut just
    taken, not to be taken again for the same i)."""
    t = targets[j]
    return t is not None and not need & ~t and newest[j] < i and j != repeat


def _before_loop(ref: Side, other: Side, i: int, j: int, end: int, admissible: Callable[[int], bool]) -> int:
    """The other program's cut for reference cut `i`, given `j`, its earliest admissible
    one: `j`, unless the reference's next op is a `while` and a later admissible cut before
    `end` puts the other's `while` next with no other loop skipped. Then the loop stage is
    one loop in each program and is proved by induction (stages/loops.py); with the
    earliest cut it would hold ops before the other's loop too (a copy of the carried
    value in another layout, say) and be unrolled. Either cut is sound: each stage proves
    its own outputs' lineage."""
    if i >= len(ref.flow) or ref.flow[i].name != "stablehlo.while" or other.flow[j].name == "stablehlo.while":
        return j
    for k in range(j + 1, end):
        if other.flow[k - 1].name == "stablehlo.while":
            break  # the ops up to k would hold a loop of their own
        if other.flow[k].name == "stablehlo.while":
            return k if admissible(k) else j
    return j


def scheduled(ref: Side, other: Side, links: dict[str, Link]) -> Side:
    """The other program with its flow ops in another topological order, following the
    reference's: a list schedule where each op is keyed by the earliest reference position
    its results hold (`Link.ref` and `also`), an op whose results hold none by its users'
    earliest key, ties in program order. XLA may compute a block in another order than
    the reference (the partitioned Llama layer makes V's projection and its GQA broadcast
    before Q and K): a cut pairs a prefix of each program, and once the other's prefix holds
    a value the reference makes last in the block, no cut inside the block is admissible.

    Any topological order computes the same values: the ops are pure, and a per-device
    program's order is every device's (a collective stays one op of all devices). The
    stages are slices of this order; each stage's module keeps its ops in program order
    (`extract._closure`), which is topological too."""
    flow = other.flow
    made = {r: k for k, op in enumerate(flow) for r in op.results}
    users: list[list[int]] = [[] for _ in flow]
    waiting = [0] * len(flow)
    for k, op in enumerate(flow):
        for p in {made[u] for u in region_uses(op) if u in made and made[u] != k}:
            users[p].append(k)
            waiting[k] += 1
    unheld = len(ref.flow) + 1  # after every reference position
    key = [unheld] * len(flow)
    for k in range(len(flow) - 1, -1, -1):
        held = [min(ref.position.get(r, -1) for r in (links[v].ref, *links[v].also))
                for v in flow[k].results if v in links]
        key[k] = min(held) if held else min((key[u] for u in users[k]), default=unheld)
    ready = [(key[k], k) for k in range(len(flow)) if not waiting[k]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, (key[u], u))
    if len(order) != len(flow):  # not a DAG of its flow ops: keep the program's order
        return other
    out = Side(other.module, other.kind, other.producer, [flow[k] for k in order], types=other.types,
               order=other.order)
    for c, op in enumerate(out.flow):
        for r in op.results:
            out.position[r] = c
        for v in region_uses(op):
            if other.kind.get(v) == "flow":
                out.last_use[v] = c  # ops come in order: the last one to use it stays
    for v in other.module.main.body.returns:
        if other.kind.get(v) == "flow":
            out.last_use[v] = len(out.flow)
    return out


def largest(cuts: Cuts) -> int:
    """The most ops (both programs') of one stage of the cut."""
    return max((b - a + d - c for a, b, c, d in zip(cuts.ref, cuts.ref[1:], cuts.other, cuts.other[1:])),
               default=0)
