"""The stage a bug is in, when nothing links past it.

A bug in layer 97 of 126 leaves every value after it unlinked (it matches no reference
value on the lineage's runs), so the chain's last link runs from the last admissible cut
to the programs' outputs: thirty forward layers, the loss and the whole backward pass, far
too large to prove. But the first unlinked value (`run._first_unlinked`, the residual add
that takes the MLP's unreduced partial sum) is the output of one layer's op whose
counterpart in the reference is known by structure: the same op at the same source
location, in the same occurrence (the 97th residual add at `gen_depth.py:100` of each
program). The *divergence stage* is the last link cut short there: from the last cut to
that value, claiming it holds its counterpart under the layout the earlier occurrences'
values hold theirs in (the 96th add's link; `counterpart`). Its proof either refutes the claim with a
counterexample at the stage's inputs (the bug, in a stage of a few ops, named with its
source lines), or proves it (the candidate was wrong, or the lineage missed a link), and
then nothing is reported from it.

Evidence only: the stage is proved like any other, and its verdict only chooses which
stage a failed pair names; no `equivalent` rests on it (a pair whose outputs differ on the
runs is never made equivalent by a stage that ends before the outputs)."""
from __future__ import annotations

from collections.abc import Sequence

from tv_mlir.ir import Op, Sharding
from tv_mlir.stages.chain import Chain
from tv_mlir.stages.extract import NotFormed, StagePair, _types, build
from tv_mlir.stages.plan import Side, region_uses


def _where(op: Op) -> tuple[str, str] | None:
    """The op's name and source position (`file:line:col` after jax's `@`), or None when
    its location names no source line."""
    loc = op.loc or ""
    at = loc.rsplit(" @ ", 1)[-1] if " @ " in loc else ""
    return (op.name, at) if ":" in at else None


def _occurrences(side: Side, key: tuple[str, str]) -> list[Op]:
    """The flow ops with this name and source position, in the program's order."""
    return [op for op in side.module.main.body.ops
            if op.results and side.kind.get(op.results[0]) == "flow" and _where(op) == key]


def counterpart(chain: Chain, at: Op) -> tuple[str, Sharding | None] | None:
    """The reference value `at`'s first result stands for, and the layout it should hold it
    in: the same occurrence of the same op at the same source position, when both programs
    have as many such ops and the earlier occurrences are linked to the reference's (the
    structure lines up up to the bug), all in one layout: the layout it should have."""
    key = _where(at)
    if key is None or not at.results:
        return None
    mine, theirs = _occurrences(chain.o_side, key), _occurrences(chain.r_side, key)
    if len(mine) != len(theirs) or not any(op is at for op in mine):
        return None
    n = next(k for k, op in enumerate(mine) if op is at)
    pairs = [(link, ref) for op, ref in zip(mine[:n], theirs) if (link := chain.links.get(op.results[0])) is not None]
    if any(link.ref != ref.results[0] for link, ref in pairs):
        return None  # the occurrences do not line up
    links = [link for link, _ in pairs]
    layouts = {link.sharding for link in links}
    # Two or more earlier occurrences, all in one layout: a source line that serves several
    # values in different layouts (the backward's gradient adds) names none.
    if len(links) < 2 or len(layouts) != 1:
        return None
    return theirs[n].results[0], layouts.pop()


def _ancestors(side: Side, ops: Sequence[Op], value: str) -> list[Op]:
    """The ops of `ops` that `value` depends on, in their order."""
    inside = {r: op for op in ops for r in op.results}
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        op = inside.get(v)
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        stack.extend(region_uses(op))
    return [op for op in ops if id(op) in seen]


def divergence_stage(chain: Chain, at: Op) -> StagePair | None:
    """The last link from its first cut to `at` (the first unlinked value of the other
    program), claiming `at` holds its counterpart; None when there is no counterpart or the
    values do not line up as a stage."""
    found = counterpart(chain, at)
    if found is None:
        return None
    ref_value, layout = found
    v = at.results[0]
    r_side, o_side = chain.r_side, chain.o_side
    k = chain.length - 1
    i0, j0 = chain.cuts.ref[k], chain.cuts.other[k]
    i, j = r_side.position.get(ref_value, -1), o_side.position.get(v, -1)
    if i < i0 or j < j0:
        return None  # made before the link (the cut would have held it)
    r_t, o_t = _types(r_side).get(ref_value), _types(o_side).get(v)
    if r_t is None or o_t is None:
        return None
    if layout is None:
        if r_t.shape != o_t.shape:
            return None
    elif len(layout.dims) != len(o_t.shape) or layout.global_type(o_t).shape != r_t.shape:
        return None
    r_ops = _ancestors(r_side, r_side.flow[i0:i + 1], ref_value)
    o_ops = _ancestors(o_side, o_side.flow[j0:j + 1], v)
    name = f"stage {k + 1} of {chain.length} up to its first unlinked value"
    try:
        return build(name, r_side, o_side, chain.links, r_ops, o_ops, [ref_value], [v], [layout], chain.hoisted,
                     chain.ref_given)
    except NotFormed:
        return None
