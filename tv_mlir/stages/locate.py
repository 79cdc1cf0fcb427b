"""Where the programs first differ inside a loop, from the lineage's random runs.

When the runs show the outputs differ, `run._first_unlinked` names the first op of the
other program whose value holds no reference value. For a scan over layers whose body is
wrong in one trip only (`jnp.where(i == 96, partial, psum(partial))`), that op is the whole
`while`: its results differ, and a name that says "the loop at the scan's line" says
nothing of the layer or the line of the bug. This module looks inside.

Both loops (the reference's loop is the one whose carried values the other's initial values
align with: `loops._align`, as for the induction) are run again, trip by trip, from their
initial values on the runs, with the values their bodies read from outside as the runs
computed them. The body values of the first trip are matched like top-level ones
(`lineage.find`): that is the body's lineage, what each value of the other body holds
while the two bodies agree. Then, trip by trip on one run, the other loop's carried values
are compared with the reference's under their layouts; at the first trip where one does
not hold, the answer is the first op of the other body (in its order, among the ops those
values depend on) whose value held its reference value in the first trip and no longer
does: the select of the seeded where, at its source line, in trip 97. When the first trip
itself differs, it is the first op there that holds no reference value (as at top level).

A name only: no proof reads it, and a wrong guess names a wrong line, never a wrong
verdict. Values that do not vary between the runs (a comparison of the trip counter, a
mask) are not taken as evidence: they match unrelated reference values by coincidence."""
from __future__ import annotations

from collections import ChainMap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tv_mlir.algebra import NumericAlgebra
from tv_mlir.errors import TvError
from tv_mlir.execute.spmd import Local
from tv_mlir.ir import Block, Op, Sharding
from tv_mlir.passes.unroll import counted
from tv_mlir.semantics.common import Budget, concrete_bool
from tv_mlir.stages import lineage
from tv_mlir.stages.extract import NotFormed, _types, source_loc
from tv_mlir.stages.loops import _align, _free
from tv_mlir.stages.plan import Side, region_uses

# The run walked past the first trip (of the lineage's runs, `lineage.RUNS`): one run is
# enough to see the trip where the loops part, and the walk costs up to a loop's whole run.
WALKED = lineage.KEY_RUN
# The trip counts `passes.unroll.counted` reports (its own default caps what it unrolls).
MAX_TRIPS = 1 << 16


@dataclass(frozen=True)
class Located:
    """The other program's op whose value first departs from its reference value, in trip
    `trip` (0-based) of the other's loop `loop` (`trips`: the loop's trip count when its
    text fixes it)."""

    op: Op
    loop: Op
    trip: int
    trips: int | None
    loc: str  # the op's location, or when it names no source line, the nearest operand's that does

    def stage(self) -> str:
        of = f" of {self.trips}" if self.trips else ""
        return f"the loop's body, trip {self.trip + 1}{of}"

    def divergence(self, program: str) -> dict[str, Any]:
        """The record a counterexample's `first_divergence` takes."""
        out = {"op": self.op.name, "loc": self.loc, "value": self.op.results[0] if self.op.results else "",
               "program": program, "stage": self.stage(), "loop": self.loop.loc, "trip": self.trip + 1}
        if self.loc != self.op.loc:
            out["own_loc"] = self.op.loc
        return out


class _Walk:
    """One loop on one run, a trip at a time: its body's values per trip. The interpreter
    starts at depth 0 so that the body's ops are its top-level ones and `lineage._Tracer`
    records them (per-device values as their tuples of parts); the values the body reads
    from outside are the run's, bound below its scope."""

    def __init__(self, side: Side, loop: Op, values: lineage.Values, run: int, max_unroll: int, max_elements: int):
        self.loop = loop
        module = side.module
        self.per_device = module.per_device
        self.n = module.num_devices
        budget = Budget(max_iterations=max_unroll, max_elements=max_elements, calls=[module.entry])
        self.tracer = lineage._Tracer(module, NumericAlgebra(), max_unroll, budget=budget)
        types = _types(side)
        outside = [v for r in loop.regions for v in _free(r) if v not in loop.operands] + list(loop.operands)
        env = {v: self._value(values[v][run]) for v in dict.fromkeys(outside)}
        self.tracer._env = ChainMap(env)
        self.tracer._types = ChainMap({v: types[v] for v in env})
        # As in a whole run: values computed from literals alone are `fixed` to the
        # numeric rules (`Interpreter._fixed`).
        self.tracer._fixed = ChainMap({v: True for v in env if side.kind.get(v) == "const"})
        self.carried = [env[v] for v in loop.operands]

    def _value(self, v: Any) -> Any:
        return Local(tuple(v)) if isinstance(v, tuple) else v

    def step(self) -> dict[str, Any] | None:
        """One more trip: the body's values (its arguments and every op's results), or None
        when the loop has ended."""
        cond, body = self.loop.regions
        t = self.tracer
        pred = t.run_block(cond, self.carried)[0]
        pred = pred.parts[0] if isinstance(pred, Local) else pred
        decided = concrete_bool(t.alg, np.asarray(pred).reshape(())[()])
        if not decided:
            return None
        t.run_budget.iteration(self.loop)
        t.seen = {}
        # The body's arguments are not kept: the previous trip's results, which a scan's
        # stacks make the loop's largest values (dropped here, each trip holds one copy).
        args, self.carried = self.carried, []
        self.carried = t.run_block(body, args)
        del args
        seen, t.seen = t.seen, {}
        return seen


def _whole(v: Any, s: Sharding | None, n: int) -> Any:
    """The global value a per-device value holds under layout `s` (None when copies that
    `s` declares equal differ); a global program's value is itself."""
    if s is None:
        return v if not isinstance(v, tuple) else (v[0] if all(lineage._close(v[0], x) for x in v) else None)
    parts = v if isinstance(v, tuple) else (v,) * n
    return lineage._assemble([np.asarray(p) for p in parts], s)


def _holds(o: Any, link: lineage.Link, r: Any, n: int) -> bool:
    """Whether the other's value `o` holds the reference value `r` under the link's layout
    (`lineage._close`, as the lineage compares). Each device's block is first compared with
    the reference's block in place (a scan's stacks, checked on every trip, cost 4x more
    assembled and compared element by element); only a block that is not plainly equal
    (a difference, or +-inf on both sides) is decided by the lineage's comparison."""
    if _blocks_hold(o, link.sharding, np.asarray(r), n):
        return True
    whole = _whole(o, link.sharding, n)
    return whole is not None and lineage._close(r, whole)


def _blocks_hold(o: Any, s: Sharding | None, r: np.ndarray, n: int) -> bool:
    """Every block (the first device holding it) within LOOSE of the reference's block,
    relative to the reference's scale (at least 1); False when unsure (partial sums, a
    shape that does not fit, non-finite values). Replicas are not compared: copies of a
    replicated value that part are a replica divergence, which the verdict's own replica
    obligations find; here they would only cost every trip a pass over every copy."""
    if s is None or s.unreduced or r.dtype == object or r.dtype.kind not in "fc" or not r.size:
        return False
    parts = o if isinstance(o, tuple) else (o,) * n
    local = np.shape(parts[0])
    if len(parts) != s.mesh.size or len(local) != r.ndim or any(
            d * s.shards(i) != r.shape[i] for i, d in enumerate(local)):
        return False
    with np.errstate(all="ignore"):
        tol = lineage.LOOSE * max(1.0, float(np.max(np.abs(r))))
        for d, sl, replica in lineage._blocks(s, local):
            if replica:
                continue  # one copy of each block: replicas that part are not this search's bug
            p = np.asarray(parts[d])
            if p.shape != local or p.dtype == object or not float(np.max(np.abs(r[sl] - p))) <= tol:
                return False
    return True


def _cone(block: Block, outputs: Sequence[str]) -> list[Op]:
    """The block's ops that `outputs` depend on, in the block's order."""
    defs = {r: op for op in block.ops for r in op.results}
    seen: set[int] = set()
    stack = list(outputs)
    while stack:
        op = defs.get(stack.pop())
        if op is None or id(op) in seen:
            continue
        seen.add(id(op))
        stack.extend(region_uses(op))
    return [op for op in block.ops if id(op) in seen]


def _varies(runs: Sequence[Any]) -> bool:
    """Whether a value differs between the runs (a function of the random inputs)."""
    def flat(v: Any) -> np.ndarray:
        return np.concatenate([np.ravel(np.asarray(p)) for p in v]) if isinstance(v, tuple) else np.ravel(
            np.asarray(v))
    first = flat(runs[0])
    return any(not np.array_equal(first, flat(x)) for x in runs[1:])


def _counterpart(r_side: Side, o_side: Side, links: dict[str, lineage.Link], ow: Op, r_vals: lineage.Values,
                 o_vals: lineage.Values) -> tuple[Op, list[int], list[Sharding | None]] | None:
    """The reference loop the other's loop `ow` stands for: the first whose carried values
    its initial values align with (`loops._align`), with the alignment."""
    for rw in r_side.flow:
        if rw.name != "stablehlo.while":
            continue
        try:
            align, layout = _align(r_side, o_side, links, rw, ow, r_vals, o_vals)
        except (NotFormed, KeyError, IndexError):
            continue
        return rw, align, layout
    return None


def in_loop(r_side: Side, o_side: Side, links: dict[str, lineage.Link], ow: Op, r_vals: lineage.Values,
            o_vals: lineage.Values, max_unroll: int, max_elements: int) -> Located | None:
    """Where inside the other program's loop `ow` its values first depart from the
    reference loop's on the runs `r_vals` / `o_vals` (the lineage's traces; see the
    module docstring), or None when that cannot be said (no aligned reference loop, the
    walked run shows no difference in the loop, a run the interpreter refuses)."""
    found = _counterpart(r_side, o_side, links, ow, r_vals, o_vals)
    if found is None:
        return None
    rw, align, layout = found
    runs = min([len(r_vals.get(v, ())) for v in rw.operands] + [len(o_vals.get(v, ())) for v in ow.operands])
    if runs == 0 or WALKED >= runs:
        return None
    n = o_side.module.num_devices
    rb, ob = rw.regions[1], ow.regions[1]
    trips = counted(ow, o_side.producer, max_trips=MAX_TRIPS)
    carried = {ob.args[p] for p in range(len(align))} | set(ob.returns) | set(rb.args) | set(rb.returns)
    # Positions the bodies change: one a body returns as it took it holds on every trip.
    moved = [(p, q) for p, q in enumerate(align) if q >= 0 and (ob.returns[p] != ob.args[p]
                                                                 or rb.returns[q] != rb.args[q])]
    try:
        r_walk = o_walk = r_now = o_now = None
        r_first: lineage.Values = {}
        o_first: lineage.Values = {}
        # The first trip on every run, one run at a time: the bodies' lineage. The carried
        # values (a scan's stacked activations, the largest values of the loop) are linked
        # by the alignment, so only the walked run keeps them.
        for k in range(runs):
            rk = _Walk(r_side, rw, r_vals, k, max_unroll, max_elements)
            ok = _Walk(o_side, ow, o_vals, k, max_unroll, max_elements)
            r_seen, o_seen = rk.step(), ok.step()
            if r_seen is None or o_seen is None:
                return None
            for vals, seen in ((r_first, r_seen), (o_first, o_seen)):
                for v, x in seen.items():
                    if v not in carried:
                        vals.setdefault(v, []).append(x)
            if k == WALKED:
                r_walk, o_walk, r_now, o_now = rk, ok, r_seen, o_seen
        assert r_walk is not None and o_walk is not None
        body_links = _body_links(rb, ob, r_first, o_first, o_side, align, layout)
        varying = {v for v, rs in o_first.items() if _varies(rs)} | {ob.returns[p] for p, _ in moved}
        del r_first, o_first  # only the walked run goes on
        trip = 0
        while True:
            assert r_now is not None and o_now is not None
            bad = [ob.returns[p] for p, q in moved if not _holds(
                o_now[ob.returns[p]], lineage.Link(rb.returns[q], layout[p]), r_now[rb.returns[q]], n)]
            if bad:
                op = _first_departure(ob, bad, body_links, varying, r_now, o_now, n, trip)
                return None if op is None else Located(op, ow, trip, trips.trips if trips else None, _sourced(ob, op))
            r_now = o_now = None  # the last trip's values go before the next trip's come
            r_now, o_now = r_walk.step(), o_walk.step()
            if r_now is None or o_now is None:
                return None  # the walked run's loops agree (or end apart: the condition decides)
            trip += 1
    except (TvError, KeyError, ValueError, IndexError, TypeError):
        # A value the runs did not keep, one the interpreter refuses, or values that do not
        # line up as the alignment says: a name is not worth failing the verification for.
        return None


def _body_links(rb: Block, ob: Block, r_first: lineage.Values, o_first: lineage.Values, o_side: Side,
                align: list[int], layout: list[Sharding | None]) -> dict[str, lineage.Link]:
    """What each value of the other body holds in the first trip: the carried ones by the
    alignment, the others as the lineage finds them among the reference body's values."""
    r_names = [v for op in rb.ops for v in op.results]
    o_names = [v for op in ob.ops for v in op.results]
    r_rank = {v: k / max(len(r_names), 1) for k, v in enumerate(r_names)}
    o_rank = {v: k / max(len(o_names), 1) for k, v in enumerate(o_names)}
    given = {ob.args[p]: rb.args[q] for p, q in enumerate(align) if q >= 0}
    reads = ({r: op.operands for op in rb.ops for r in op.results},
             {r: op.operands for op in ob.ops for r in op.results})
    links = lineage.find(r_first, o_first, o_side.module, [v for v in o_names if v in o_first],
                         [v for v in r_names if v in r_first], r_rank, o_rank, reads, given)
    # The carried values, before and after the trip, by the alignment (the induction's
    # hypothesis, which the first trip's check has just seen hold).
    for p, q in enumerate(align):
        if q >= 0:
            links[ob.returns[p]] = lineage.Link(rb.returns[q], layout[p])
            links[ob.args[p]] = lineage.Link(rb.args[q], layout[p])
    return links


def _sourced(block: Block, op: Op) -> str:
    """The op's location when it names a source line, else the nearest (breadth first) of the
    ops it reads in the block whose location does. An op inlined from a helper keeps the
    helper's location: jnp.where's select is `select_n`, and the line that calls it
    (`jnp.where(i == 96, ...)`) is on its predicate's compare."""
    if source_loc(op.loc):
        return op.loc
    defs = {r: o for o in block.ops for r in o.results}
    seen = {id(op)}
    frontier = [op]
    while frontier:
        nxt: list[Op] = []
        for o in frontier:
            for v in o.operands:
                d = defs.get(v)
                if d is None or id(d) in seen:
                    continue
                if source_loc(d.loc):
                    return d.loc
                seen.add(id(d))
                nxt.append(d)
        frontier = nxt
    return op.loc


def _first_departure(ob: Block, bad: list[str], links: dict[str, lineage.Link], varying: set[str],
                     r_now: dict[str, Any], o_now: dict[str, Any], n: int, trip: int) -> Op | None:
    """The first op, among those the departed carried values depend on, whose value held
    its reference value in the first trip and does not in this one; in the first trip
    itself, the first whose value holds none. Only values that vary between the runs."""
    cone = _cone(ob, bad)
    if trip > 0:
        for op in cone:
            if any(r in varying and (link := links.get(r)) is not None and link.ref in r_now
                   and not _holds(o_now[r], link, r_now[link.ref], n) for r in op.results):
                return op
    return next((op for op in cone if any(r in varying and r not in links for r in op.results)), None)
