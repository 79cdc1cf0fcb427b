"""Rule (b) of docs/shrinking.md: every constant combined with a position bounds the
class the position runs along. A position is a value computed from an `iota` by
position arithmetic (`POSITION_FLOW`); its *scale* is how many units of the value one
position step is (`pos * 0.001` has scale 0.001), so a constant c met at scale s names
position |c| / s: `pos * 0.001 >= 1` names 1000, as `pos >= 1000` does. A factor k that
multiplies or divides a position names max(|k|, 1/|k|). Constants met through a
partition offset (`axis_index * 511.0 + iota`: the constants of the offset's arithmetic
over device ids) are named the same way. Positions also pass through ops that move or
pick elements (`facts.moved_operands`: a gather of a position table by token ids, a
slice, a max): `take(arange(S), ids) >= 1000` names 1000 as `arange(S) >= 1000` does,
and into loops and out of branches (`facts.region_flow`: a `fori_loop` body that masks
`pos >= 1000` with `pos` carried in names 1000)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tv_mlir.ir import Op
from tv_mlir.semantics.ops import DEVICE_IDS, POSITION_ARITH, POSITION_FLOW, SPLAT_PRESERVING
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts, moved_operands, only_device, position_reach, region_flow, splat

# Ops that relate positions of two operands as one coordinate (distances, order).
COMBINING = frozenset({"stablehlo.subtract", "stablehlo.add", "stablehlo.compare"})
# Rule (b), shifts: a position (or a partition offset) shifted by a constant k is
# multiplied or divided by 2^k (`(tp << 4) + i` is `tp * 16 + i`, `pos >> 3` is `pos // 8`),
# so the constant names 2^k, as a factor does. Off: shifts end an offset's arithmetic and
# a shift amount names k.
SHIFTS = True
_SHIFT_OPS = frozenset({"stablehlo.shift_left", "stablehlo.shift_right_logical", "stablehlo.shift_right_arithmetic"})
# The arithmetic of a partition offset: device ids and constants through these.
_OFFSET_ARITH = SPLAT_PRESERVING | {"stablehlo.multiply", "stablehlo.add", "stablehlo.subtract",
                                    "stablehlo.divide", "stablehlo.remainder"}


def _power(value: float) -> float:
    """2^k for a shift amount k (0 when k is no small non-negative integer)."""
    return float(1 << int(value)) if float(value).is_integer() and 0 <= value < 31 else 0.0


@dataclass(frozen=True)
class NamedPosition:
    program: str
    constant: str  # the constant's value name
    position: int  # the position it names, rounded up
    classes: frozenset[int]  # the iota classes of the positions it meets


def named_positions(fa: ProgramFacts, a: DimAnalysis,
                    combined: set[frozenset[int]] | None = None,
                    seeds: dict[str, frozenset[int]] | None = None) -> list[NamedPosition]:
    """`combined`, when given, collects the sets of iota classes that one op combines from
    different operands (`COMBINING`: the mask's `i - j`, a compare `i <= j`). `seeds`, when
    given: the positions are these values (program inputs whose assumed range ends at the
    size of the given classes, ranged.py), not the iotas."""
    # Past `facts.position_reach` a named position is a mask fill or a scale, not a window.
    reach = position_reach(max((c.size for c in a.classes), default=0))
    derived: dict[str, tuple[float, frozenset[int]]] = {}  # value -> (scale, iota classes)
    out: list[NamedPosition] = []
    memo: dict[str, tuple[tuple[tuple[str, float], ...], bool] | None] = {}
    if seeds is not None:
        derived.update((v, (1.0, cs)) for v, cs in seeds.items())

    def name(constant: str, value: float, scale: float, classes: frozenset[int]) -> None:
        if not value or not math.isfinite(value) or not scale:
            return
        p = abs(value) / scale
        if p <= reach:
            out.append(NamedPosition(fa.program, constant, math.ceil(p - 1e-9), classes))

    # Twice: positions cross into functions (jnp.clip, jnp.where are private funcs taking
    # the position and the constants as arguments) and back out through their results.
    ops = fa.ops()
    for _ in range(2):
        _pass(fa, a, ops, derived, memo, name, combined, iotas=seeds is None)
    return list(dict.fromkeys(out))


def combined_positions(fa: ProgramFacts, a: DimAnalysis) -> set[frozenset[int]]:
    """Rule (b), one coordinate: the sets of iota classes whose positions an op of
    `COMBINING` takes from different operands (a sliding-window mask's `q_pos - k_pos`,
    a causal `q_pos >= k_pos`). The plan keeps those of one original size at one size."""
    combined: set[frozenset[int]] = set()
    named_positions(fa, a, combined)
    return combined  # the second pass names the first's again


def _pass(fa: ProgramFacts, a: DimAnalysis, ops: Sequence[Op], derived: dict[str, tuple[float, frozenset[int]]],
          memo: dict[str, tuple[tuple[tuple[str, float], ...], bool] | None],
          name: Callable[[str, float, float, frozenset[int]], None],
          combined: set[frozenset[int]] | None = None, iotas: bool = True) -> None:
    for op in ops:
        if op.name == "stablehlo.iota" and iotas:
            d = int(op.attrs.get("iota_dimension", 0))
            derived[op.results[0]] = (1.0, frozenset({a.class_of[(fa.program, op.results[0], d)]}))
            continue
        ins = [derived.get(o) for o in op.operands]
        if op.name == "func.call" and any(ins):
            callee = fa.module.funcs.get(op.attrs.get("callee", ""))
            if callee is not None:
                for arg, found in zip(callee.body.args, ins):
                    if found is not None:
                        derived[arg] = found
                for r, ret in zip(op.results, callee.body.returns):
                    if ret in derived:
                        derived[r] = derived[ret]
            continue
        for target, sources in region_flow(op) + _manual_flow(op):
            # Positions carried into a loop (or out of a branch) are positions there,
            # at the scale they went in with.
            carried = [derived[v] for v in sources if v in derived]
            if carried:
                derived[target] = (min(d[0] for d in carried), frozenset().union(*(d[1] for d in carried)))
        moved = [d for d in (ins[k] for k in moved_operands(op)) if d is not None]
        if moved:
            # Positions moved or picked (a gather of a position table by token ids): the
            # same positions at the same scale, whatever addresses them.
            for r in op.results:
                derived[r] = (min(d[0] for d in moved), frozenset().union(*(d[1] for d in moved)))
            continue
        if op.name not in POSITION_FLOW or not any(ins):
            continue
        classes = frozenset().union(*(d[1] for d in ins if d))
        scale = min(d[0] for d in ins if d)
        if combined is not None and op.name in COMBINING and len(classes) > 1 \
                and sum(1 for d in ins if d) > 1:
            combined.add(classes)
        if op.name == "stablehlo.select" and not any(ins[1:]):
            # Only the predicate is a position: the branches are data or fills.
            for r in op.results:
                derived[r] = (scale, classes)
            continue
        if op.name in POSITION_ARITH:
            for k, o in enumerate(op.operands):
                if ins[k]:
                    continue
                for cname, cvalue in _offset_constants(fa, o, memo=memo):
                    if SHIFTS and op.name in _SHIFT_OPS and k == 1:
                        name(cname, _power(cvalue), 1.0, classes)  # a factor 2^k
                    elif op.name == "stablehlo.multiply" or (op.name == "stablehlo.divide" and k == 1):
                        # A factor: names where the product reaches one unit, and itself.
                        name(cname, max(abs(cvalue), 1.0 / abs(cvalue)) if cvalue else 0.0, 1.0, classes)
                    else:
                        name(cname, cvalue, scale, classes)
            factor = _factor(fa, op, ins, memo)
            if factor is not None:
                scale = scale * factor if op.name in ("stablehlo.multiply", "stablehlo.shift_left") \
                    else scale / factor
        for r in op.results:
            derived[r] = (scale, classes)


def _manual_flow(op: Op) -> list[tuple[str, tuple[str, ...]]]:
    """A manual computation's (target, sources) pairs: its body's argument k holds a block
    of operand k's elements (the same values, a shard of the positions), its result k the
    blocks its body returns. Ids assumed in the vocabulary are still such ids inside a
    shard_map (ranged.py)."""
    if op.name != "sdy.manual_computation" or not op.regions:
        return []
    body = op.regions[0]
    out: list[tuple[str, tuple[str, ...]]] = [(arg, (o,)) for arg, o in zip(body.args, op.operands)]
    return out + [(r, (ret,)) for r, ret in zip(op.results, body.returns)]


def _factor(fa: ProgramFacts, op: Op, ins: list[tuple[float, frozenset[int]] | None],
            memo: dict[str, tuple[tuple[tuple[str, float], ...], bool] | None]) -> float | None:
    """|k| of `pos * k` or `pos / k` with a constant k, else None (the scale is kept)."""
    shift = SHIFTS and op.name in _SHIFT_OPS
    if op.name == "stablehlo.multiply":
        others = [o for o, d in zip(op.operands, ins) if not d]
    elif (op.name == "stablehlo.divide" or shift) and ins[0] and not ins[1]:
        others = [op.operands[1]]
    else:
        return None
    if len(others) != 1:
        return None
    found = _offset_constants(fa, others[0], device=False, memo=memo)
    if len(found) != 1 or not found[0][1]:
        return None
    return _power(found[0][1]) or None if shift else abs(float(found[0][1]))


def _offset_constants(fa: ProgramFacts, value: str, device: bool = True,
                      memo: dict[str, tuple[tuple[tuple[str, float], ...], bool] | None] | None = None) \
        -> list[tuple[str, float]]:
    """The splat constants of a constant expression, or of a partition offset (arithmetic
    over device ids and constants, when `device`); [] when the value depends on data.
    `memo` (value -> (constants, has a device id), or None for data) keeps a long chain
    linear: every value is looked at once per program."""
    memo = {} if memo is None else memo
    stack = [value]
    while stack:
        v = stack[-1]
        if v in memo:
            stack.pop()
            continue
        op = fa.defs[v][0] if v in fa.defs else None
        if op is None and fa.callers.get(v):
            # A function's argument: the constants its callers pass (jnp.clip's bounds).
            todo = [call.operands[k] for call, k in fa.callers[v] if call.operands[k] not in memo]
            if todo:
                stack.extend(todo)
                continue
            parts = [memo[call.operands[k]] for call, k in fa.callers[v]]
            memo[v] = None if any(p is None for p in parts) else \
                (tuple(c for p in parts if p for c in p[0]), any(p[1] for p in parts if p))
        elif op is None:
            memo[v] = None  # an argument of the entry (data)
        elif op is None:
            memo[v] = None
        elif op.name == "stablehlo.constant":
            c = splat(op)
            # mesh steps (pid / 1 % 4) are not offsets
            memo[v] = None if c is None else (((v, float(c)),) if not only_device(fa, v) else (), False)
        elif op.name in DEVICE_IDS:
            memo[v] = ((), True)
        elif op.name in _OFFSET_ARITH or (SHIFTS and op.name in _SHIFT_OPS):
            todo = [o for o in op.operands if o not in memo]
            if todo:
                stack.extend(todo)
                continue
            parts = [memo[o] for o in op.operands]
            if any(p is None for p in parts):
                memo[v] = None
            else:
                if op.name in _SHIFT_OPS and parts[1] is not None:
                    # the amount k stands for the factor 2^k
                    parts[1] = (tuple((c, _power(x)) for c, x in parts[1][0]), parts[1][1])
                memo[v] = (tuple(c for p in parts if p for c in p[0]), any(p[1] for p in parts if p))
        else:
            memo[v] = None
        stack.pop()
    found = memo[value]
    if found is None or (found[1] and not device):
        return []
    return list(dict.fromkeys(found[0]))


__all__ = ["COMBINING", "NamedPosition", "combined_positions", "named_positions"]
