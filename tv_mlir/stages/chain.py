"""The chain of cuts of a pair, and its stages as spans of it: span(k0, k1) runs both
programs from cut k0 to cut k1 + 1, takes the values live across cut k0 as inputs and
returns those live across cut k1 + 1 (the programs' results after the last cut). A span of
one link is an ordinary stage; a longer one is what a stage that fails at free inputs is
proved again as (stages/run.py): the values it took as free inputs are then computed."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tv_mlir.ir import Module, Op, Sharding
from tv_mlir.stages.extract import StagePair, build
from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import Cuts, Side


def op_order(side: Side) -> Callable[[str], int]:
    """A value's position among the program's ops (-1: an argument)."""
    index = {r: n for n, op in enumerate(side.module.main.body.ops) for r in op.results}
    return lambda v: index.get(v, -1)


@dataclass
class Chain:
    ref: Module
    other: Module  # the other program as flattened for cutting
    r_side: Side
    o_side: Side
    links: dict[str, Link]
    cuts: Cuts
    hoisted: set[str]  # the other's prologue values the stages take as given
    ref_given: set[str]  # their reference values
    _order: Callable[[str], int] = field(init=False)
    _sharing: list[str] = field(init=False)  # flow values holding more than one reference value

    def __post_init__(self) -> None:
        self._order = op_order(self.o_side)  # once per chain: per stage it would be quadratic
        self._sharing = sorted((v for v, k in self.links.items() if k.also and v in self.o_side.position),
                               key=self._order)

    @property
    def length(self) -> int:
        return len(self.cuts.ref) - 1

    def ops(self, k0: int, k1: int) -> tuple[Sequence[Op], Sequence[Op]]:
        i0, i1 = self.cuts.ref[k0], self.cuts.ref[k1 + 1]
        j0, j1 = self.cuts.other[k0], self.cuts.other[k1 + 1]
        return self.r_side.flow[i0:i1], self.o_side.flow[j0:j1]

    def outputs(self, k0: int, k1: int) -> tuple[list[str], list[str], list[Sharding | None]]:
        """The span's outputs (reference, other, the other's layouts): the values made in
        it and live across its last cut, or the programs' results after the last cut."""
        if k1 == self.length - 1:
            o_out = list(self.other.main.body.returns)
            r_out = list(self.ref.main.body.returns)
            shard: list[Sharding | None] = (list(self.other.result_shardings) if self.other.per_device
                                            else [None] * len(o_out))
            return r_out, o_out, shard
        i0, i1 = self.cuts.ref[k0], self.cuts.ref[k1 + 1]
        j0, j1 = self.cuts.other[k0], self.cuts.other[k1 + 1]
        # Live across cut j1 and made at or after cut j0: a result of flow op p, j0 <= p < j1,
        # last used at or after j1 (`Side.live`'s sets, read off the span's own ops: a set
        # per cut held a thousand values across most of a 126-layer backward pass).
        last = self.o_side.last_use
        made = sorted((r for op in self.o_side.flow[j0:j1] for r in op.results if last.get(r, -1) >= j1),
                      key=self._order)
        pairs: list[tuple[str, str]] = []
        for v in made:
            link = self.links[v]
            # Its own reference value unless that is made after the cut (a value holding
            # several, `Link.also`, may be cut at before its own), and every other one it
            # holds that is live across the cut.
            if self._made_before(link.ref, i1):
                pairs.append((v, link.ref))
            pairs += [(v, r) for r in link.also if self._made_before(r, i1) and self._live(r, i1)]
        # A value made earlier that holds a reference value made here (`Link.also`): the
        # pair is new at this cut, so this span proves it (its input against the value the
        # reference computes from an equal one it holds).
        for v in self._passing(j0, j1):
            link = self.links[v]
            pairs += [(v, r) for r in (link.ref, *link.also)
                      if i0 <= self.r_side.position.get(r, -1) < i1 and self._live(r, i1)]
        return [r for _, r in pairs], [v for v, _ in pairs], [self.links[v].sharding for v, _ in pairs]

    def _made_before(self, r: str, i: int) -> bool:
        """Whether reference value `r` exists at reference cut `i` (a non-flow value always)."""
        return self.r_side.position.get(r, -1) < i

    def _live(self, r: str, i: int) -> bool:
        """Whether reference flow value `r` is live across reference cut `i`."""
        return r in self.r_side.position and self.r_side.position[r] < i <= self.r_side.last_use.get(r, -1)

    def _passing(self, j0: int, j1: int) -> list[str]:
        """The other's flow values live across both cut j0 and cut j1 that hold reference
        values besides their own, in program order."""
        o = self.o_side
        return [v for v in self._sharing if o.position[v] < j0 and o.last_use.get(v, -1) >= j1]

    def span(self, name: str, k0: int, k1: int) -> StagePair:
        """The stage from cut k0 to cut k1 + 1 (NotFormed when its values do not line up)."""
        r_ops, o_ops = self.ops(k0, k1)
        r_out, o_out, shard = self.outputs(k0, k1)
        return build(name, self.r_side, self.o_side, self.links, r_ops, o_ops, r_out, o_out, shard,
                     self.hoisted, self.ref_given)
