"""What shape shrinking needs to know of one program, as read: definitions and uses of
values, which splat constants play a size-like role (index arithmetic, divisors), what an
index computation is made of, and which constants meet positions (iota-derived values)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tv_mlir.ir import Module, Op, Sharding
from tv_mlir.semantics.ops import (
    DEVICE_IDS,
    DIVISIONS,
    MESH_ARITHMETIC,
    MESH_STEPS,
    POSITION_ARITH,
    POSITION_FLOW,
    REDUCING_COLLECTIVES,
    SPLAT_PRESERVING,
    VALUE_IDENTITIES,
)


@dataclass
class ProgramFacts:
    program: str
    module: Module
    defs: dict[str, tuple[Op, int]] = field(default_factory=dict)
    uses: dict[str, list[Op]] = field(default_factory=dict)
    region_arg: dict[str, tuple[Op, int, int]] = field(default_factory=dict)  # arg -> (owner, region, index)
    callers: dict[str, list[tuple[Op, int]]] = field(default_factory=dict)  # func arg -> (call, index)
    calls: dict[str, list[Op]] = field(default_factory=dict)  # callee name -> its calls, in `ops()` order
    func_of_arg: dict[str, str] = field(default_factory=dict)
    entry_args: set[str] = field(default_factory=set)
    unreachable: set[str] = field(default_factory=set)  # values of functions nothing calls
    needed: set[str] = field(default_factory=set)  # values some entry result depends on (`needed_values`)
    # value -> (function, position) of its first place among a function's returns (the
    # entry's left out; functions in module order): `returned_by`.
    returned: dict[str, tuple[str, int]] = field(default_factory=dict)
    _ops: tuple[Op, ...] | None = field(default=None, repr=False)  # `ops`, listed on first use
    _iota_only: set[str] | None = field(default=None, repr=False)  # `iota_only`, built on first use
    _normal: object | None = field(default=None, repr=False)  # zero_types.normal_form, made on first use

    @classmethod
    def of(cls, program: str, module: Module) -> ProgramFacts:
        f = cls(program, module)
        f.entry_args = set(module.main.body.args)
        reachable, todo = set(), [module.entry]
        while todo:
            name = todo.pop()
            if name in reachable or name not in module.funcs:
                continue
            reachable.add(name)
            todo.extend(op.attrs.get("callee", "") for op in module.funcs[name].body.walk() if op.name == "func.call")
        for fn in module.funcs.values():
            if fn.name not in reachable:
                f.unreachable.update(fn.body.args)
                for op in fn.body.walk():
                    f.unreachable.update(op.results)
                    f.unreachable.update(a for r in op.regions for a in r.args)
        for fn in module.funcs.values():
            for a in fn.body.args:
                f.func_of_arg[a] = fn.name
            for op in fn.body.walk():
                for k, r in enumerate(op.results):
                    f.defs[r] = (op, k)
                for v in op.operands:
                    f.uses.setdefault(v, []).append(op)
                for ri, region in enumerate(op.regions):
                    for k, a in enumerate(region.args):
                        f.region_arg[a] = (op, ri, k)
                    for v in region.returns:
                        f.uses.setdefault(v, []).append(op)
                if op.name == "func.call":
                    f.calls.setdefault(op.attrs.get("callee", ""), []).append(op)
                    callee = module.funcs.get(op.attrs.get("callee", ""))
                    if callee is not None:
                        for k, a in enumerate(callee.body.args):
                            f.callers.setdefault(a, []).append((op, k))
            if fn.name != module.entry:
                for k, r in enumerate(fn.body.returns):
                    f.returned.setdefault(r, (fn.name, k))
        f.needed = needed_values(module)
        return f

    def ops(self) -> tuple[Op, ...]:
        """Every op of every function, in module order (nested regions' ops after their
        owner). Listed once, like the maps above: the analyses ask for it a few dozen
        times per program (a full walk each, ~7% of the flax step's shrink planning)."""
        if self._ops is None:
            self._ops = tuple(op for fn in self.module.funcs.values() for op in fn.body.walk())
        return self._ops

    def returned_by(self, v: str) -> tuple[str, int] | None:
        """The function other than the entry that returns `v` (the first in module order)
        and the position of `v` among its returns (the first), or None."""
        return self.returned.get(v)

    def sources(self, op: Op) -> list[str]:
        """What an op's results are computed from, for forward passes over `ops()`: its
        operands, its regions' returns, and a call's callee body returns."""
        out = list(op.operands) + [v for r in op.regions for v in r.returns]
        if op.name == "func.call":
            callee = self.module.funcs.get(op.attrs.get("callee", ""))
            if callee is not None:
                out += list(callee.body.returns)
        return out

    def device_derived(self, value: str) -> bool:
        """Computed from partition_id/replica_id by integer arithmetic (mesh coordinates).
        A worklist, not recursion: an arithmetic chain may be thousands of ops long."""
        seen: set[str] = set()
        todo = [value]
        while todo:
            v = todo.pop()
            if v in seen or v not in self.defs:
                continue
            seen.add(v)
            op, _ = self.defs[v]
            if op.name in DEVICE_IDS:
                return True
            # Mesh-coordinate arithmetic only: a product with a size (shard * rows) is an
            # offset, whose constants are sizes.
            if op.name in MESH_ARITHMETIC:
                todo.extend(op.operands)
        return False

    def mesh_arithmetic(self, use: Op, pos: int) -> bool:
        """A constant at operand `pos` of `use` that only steps through mesh coordinates
        ((axis_index + 4) % 4, pid / 1 % 4)."""
        if use.name not in MESH_STEPS:
            return False
        if use.name in DIVISIONS and pos != 1:
            return False
        return any(self.device_derived(o) for k, o in enumerate(use.operands) if k != pos)


def splat(op: Op) -> float | int | None:
    value = op.attrs.get("value")
    if value is None or not isinstance(value, np.ndarray) or value.size == 0:
        return None
    if np.iscomplexobj(value):
        # Not a size: passes/complex.py splits it into parts after planning, and a literal
        # left at its original value keeps two different ones different.
        return None
    flat = value.reshape(-1)
    if value.size > 1 and not (flat == flat[0]).all():
        return None
    x = flat[0]
    if isinstance(x, (np.bool_, bool)):
        return None
    return int(x) if np.issubdtype(value.dtype, np.integer) else float(x)


@dataclass
class Constant:
    program: str
    value_name: str
    value: float | int
    is_int: bool
    loc: str
    role: str  # index / divisor / reciprocal / offset
    # Rule (i): when every use of a float divisor (reciprocal) divides (multiplies) a sum
    # reduction, the sums: (the reduce's operand, its reduced dims, the devices an
    # all-reduce of the sum adds up: 1 without one) per use; None when some use is
    # anything else (a constant shared with a scale, a divide of a non-sum).
    means: tuple[tuple[str, tuple[int, ...], int], ...] | None = None
    # Rule (a), integer division: an integer constant that divides or takes the remainder
    # of program values (not mesh steps): truncation at its rewritten value must stay one.
    truncates: bool = False
    # Rule (a), classes of one size: a float divisor whose every use divides a value
    # computed from iotas and constants alone (RoPE's `arange(0, d, 2) / d`): position
    # arithmetic, a size reading like an integer clamp's (constants.POSITION_FLOATS).
    positional: bool = False


def needed_values(module: Module) -> set[str]:
    """The values the entry's results depend on: backwards from them through the ops,
    into called functions by the results their callers need (one set per function, the
    union over its call sites) and out by the arguments that set needs. An op with regions
    that is needed needs everything in them. A residual a forward function returns for a
    backward one that never reads it (jax's `_where` saving a zero tensor) is not needed."""
    needed: set[str] = set()
    wanted: dict[str, set[int]] = {module.entry: set(range(len(module.main.body.returns)))}
    changed = True
    while changed:
        changed = False
        for name, rets in list(wanted.items()):
            fn = module.funcs.get(name)
            if fn is None:
                continue
            body = fn.body
            fresh = {body.returns[k] for k in rets} - needed
            if fresh:
                needed |= fresh
                changed = True
            for op in reversed(body.ops):
                if not any(r in needed for r in op.results):
                    continue
                if op.name == "func.call" and op.attrs.get("callee", "") in module.funcs:
                    callee = module.funcs[op.attrs["callee"]]
                    ks = {k for k, r in enumerate(op.results) if r in needed}
                    if not ks <= wanted.get(callee.name, set()):
                        wanted.setdefault(callee.name, set()).update(ks)
                        changed = True
                    used = [v for v, a in zip(op.operands, callee.body.args) if a in needed]
                else:
                    used = list(op.operands)
                    for region in op.regions:
                        used.extend(region.args)
                        used.extend(region.returns)
                        for inner in region.walk():
                            used.extend(inner.operands)
                            used.extend(inner.results)
                            for nested in inner.regions:
                                used.extend(nested.args)
                                used.extend(nested.returns)
                fresh = set(used) - needed
                if fresh:
                    needed |= fresh
                    changed = True
    return needed


def role_constants(facts: ProgramFacts) -> list[Constant]:
    out = []
    for op in facts.ops():
        if op.name != "stablehlo.constant":
            continue
        v = splat(op)
        if v is None:
            continue
        t = op.result_types[0]
        name = op.results[0]
        uses = through_broadcasts(facts, name)
        if t.is_int:
            arithmetic = [(u, pos) for u, pos in uses if not facts.mesh_arithmetic(u, pos)]
            if arithmetic:
                truncates = any(u.name in ("stablehlo.divide", "stablehlo.remainder") and pos == 1
                                and not facts.mesh_arithmetic(u, pos)
                                for u, pos in through_broadcasts(facts, name, calls=True))
                out.append(Constant(facts.program, name, v, True, op.loc, "index", truncates=truncates))
        elif t.is_float and v != 0:
            if uses and all(device_count(facts, u, pos, v) for u, pos in uses):
                # Rule (f): pmean's divide by the number of devices it summed over is not
                # a size (a local batch of 8 on 8 devices must not rewrite it).
                continue
            if any(u.name == "stablehlo.divide" and pos == 1 for u, pos in uses):
                positions = iota_only(facts)
                positional = all(u.name == "stablehlo.divide" and pos == 1 and u.operands[0] in positions
                                 for u, pos in uses)
                out.append(Constant(facts.program, name, v, False, op.loc, "divisor",
                                    mean_uses(facts, uses, "divisor"), positional=positional))
            elif any(u.name == "stablehlo.multiply" and facts.device_derived(u.operands[1 - pos]) for u, pos in uses):
                # Rule (b): a float partition offset (axis_index * 512.0 + iota) is a size
                # like its integer form, not a reciprocal.
                out.append(Constant(facts.program, name, v, False, op.loc, "offset"))
            elif any(u.name == "stablehlo.multiply" for u, _ in uses):
                out.append(Constant(facts.program, name, v, False, op.loc, "reciprocal",
                                    mean_uses(facts, uses, "reciprocal")))
            elif SEEDS and uses and _seed_value(v) and all(_seed_use(u, pos) for u, pos in uses):
                # XLA folds a mean's seed (the loss's cotangent 1) into its transpose: +-1/n
                # at every position the mean summed, divided by the softmax's sum per token
                # or added at the label (the cross-entropy's backward): a reciprocal of n
                # spread over them (docs/shrinking.md, rule i "transposed means").
                out.append(Constant(facts.program, name, v, False, op.loc, "reciprocal",
                                    _spread_numerators(facts, uses)))
            else:
                role = _far_role(facts, name, v)
                if role is not None:
                    out.append(Constant(facts.program, name, v, False, op.loc, role))
    return out


def iota_only(facts: ProgramFacts) -> set[str]:
    """Values computed from iotas and splat constants alone, at least one iota among them
    (positions and their arithmetic: no program input, no device id, no loop or call)."""
    if facts._iota_only is None:
        found: set[str] = set()
        constant: set[str] = set()
        for op in facts.ops():
            if op.regions or op.name == "func.call" or not op.results:
                continue
            if op.name == "stablehlo.iota":
                found.update(op.results)
            elif op.name == "stablehlo.constant":
                if splat(op) is not None:
                    constant.update(op.results)
            elif op.operands and all(o in found or o in constant for o in op.operands):
                (found if any(o in found for o in op.operands) else constant).update(op.results)
        facts._iota_only = found
    return facts._iota_only


# Constant arithmetic a constant's value passes through on its way to a use (jax stages
# `jnp.asarray(1 / h) + jnp.asarray(1 / h)` inside jit as an add of two constants).
_CONSTANT_ARITH = frozenset({"stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.divide",
                             "stablehlo.negate"})


def _far_role(facts: ProgramFacts, name: str, v: float | int) -> str | None:
    """The role of a float constant that meets no divide or multiply directly but reaches
    one through constant arithmetic (a factor built as 1/h + 1/h), as a called function's
    argument (`divide(s, 4096.0)` in a jitted helper) or carried unchanged into a loop
    (a constant a `fori_loop` body closes over): "divisor" when its value
    ends up dividing data (the denominator of a divide, or of a constant expression that
    multiplies), "reciprocal" when it ends up multiplying; None otherwise (and for a
    device count, rule f). Rule (a)'s multipliers (`linear.py`) read the same paths."""
    const: dict[str, bool] = {}

    def constant_expr(x: str) -> bool:
        if x not in const:
            const[x] = False  # no cycles in SSA; a guard all the same
            d = facts.defs.get(x)
            const[x] = d is not None and (d[0].name == "stablehlo.constant" or (
                d[0].name in _CONSTANT_ARITH | SPLAT_PRESERVING and all(constant_expr(o) for o in d[0].operands)))
        return const[x]

    finals: list[tuple[Op, int, bool]] = []
    todo, seen = [(name, False)], set()
    while todo:
        x, flipped = todo.pop()
        if (x, flipped) in seen:
            continue
        seen.add((x, flipped))
        for u in facts.uses.get(x, []):
            for pos, o in enumerate(u.operands):
                if o != x:
                    continue
                callee = facts.module.funcs.get(u.attrs.get("callee", "")) if u.name == "func.call" else None
                if u.name in SPLAT_PRESERVING:
                    todo.extend((r, flipped) for r in u.results)
                elif callee is not None and pos < len(callee.body.args):
                    todo.append((callee.body.args[pos], flipped))
                elif u.name == "stablehlo.while" and len(u.regions) == 2 and pos < len(u.regions[1].returns) \
                        and u.regions[1].returns[pos] == u.regions[1].args[pos]:
                    # Carried unchanged into the loop (a value its body closes over).
                    todo.extend((r.args[pos], flipped) for r in u.regions)
                elif u.name in _CONSTANT_ARITH and all(constant_expr(w) for w in u.operands if w != x):
                    todo.extend((r, flipped != (u.name == "stablehlo.divide" and pos == 1)) for r in u.results)
                else:
                    finals.append((u, pos, flipped))
    if finals and all(device_count(facts, u, pos, v) for u, pos, _ in finals):
        return None
    divides = [f for u, pos, f in finals if u.name == "stablehlo.divide" and pos == 1]
    multiplies = [f for u, pos, f in finals if u.name == "stablehlo.multiply"]
    if any(not f for f in divides) or any(multiplies):
        return "divisor"
    if any(not f for f in multiplies) or any(divides):
        return "reciprocal"
    return None


# Rule (i) across devices: a mean divisor of an all-reduced partial sum names the local
# sum's classes times the devices added (docs/shrinking.md). A switch for the tests.
ACROSS_DEVICES = True
# Rule (i), transposed means: a sum over dims of one element is no sum but a move, so a
# mean's backward (`reduce_{[.., 1]}(ct) / n`, then spread along the summed positions) is
# read by what it spreads over, not as a sum of one element that n cannot count
# (docs/shrinking.md, rule i "transposed means"). A switch for the tests.
UNIT_SUMS = True
# Rule (i), folded seeds: a float constant whose every use is a divide's numerator or a
# scatter-add's updates is read as a reciprocal spread over the positions it reaches them
# at (XLA's partitioned cross-entropy backward: -1/8192 added at each token's label,
# 1/8192 divided by each token's softmax sum). A switch for the tests.
SEEDS = True


def mean_uses(facts: ProgramFacts, uses: list[tuple[Op, int]], role: str) \
        -> tuple[tuple[str, tuple[int, ...], int], ...] | None:
    """Rule (i): the sums a constant takes the mean of, one per use (`through_broadcasts`
    uses): a divisor's every use is the denominator of a divide whose numerator is a sum
    reduction, a reciprocal's every use a factor of a multiply whose other factor is one.
    None when any use is not (the constant then also plays another role)."""
    out = []
    for u, pos in uses:
        if role == "divisor" and u.name == "stablehlo.divide" and pos == 1:
            other = u.operands[0]
        elif role == "reciprocal" and u.name == "stablehlo.multiply" and len(u.operands) == 2:
            other = u.operands[1 - pos]
        else:
            return None
        summed = summed_across(facts, other) if ACROSS_DEVICES else None
        found = summed or _one_device(sum_reduced(facts, other))
        if found is None:
            spread = spread_along(facts, u.results[0])
            found = None if spread is None else (spread[0], spread[1], SPREAD)
        if found is None:
            return None
        out.append(found)
    return tuple(out) or None


# `Constant.means`' device count of a transposed mean (`spread_along`): the cotangent
# divided by the count and spread over the summed positions, on one device, over dims that
# may be the shards of a global class (XLA's backward of a partitioned mean spreads over
# its local columns and divides by the global count): constants.mean_classes reads the
# count through the plan's scale relations.
SPREAD = 0


def _seed_value(v: float | int) -> bool:
    """+-1/n for an integer n of 8 or more (float32's rounding of it): a count's reciprocal,
    not a small literal a numerator scales by (2.0 / x, 0.5 / x)."""
    if not math.isfinite(v) or v == 0 or abs(v) >= 1:
        return False
    n = 1.0 / abs(float(v))
    return round(n) >= 8 and abs(n - round(n)) <= 1e-6 * n


def _seed_use(u: Op, pos: int) -> bool:
    """A use linear in the constant that keeps it per position: a divide's numerator, or
    the updates of a scatter-add."""
    if u.name == "stablehlo.divide":
        return pos == 0
    return u.name == "stablehlo.scatter" and len(u.operands) == 3 and pos == 2 and len(u.regions) == 1 \
        and len(u.regions[0].ops) == 1 and u.regions[0].ops[0].name == "stablehlo.add"


def _spread_numerators(facts: ProgramFacts, uses: list[tuple[Op, int]]) \
        -> tuple[tuple[str, tuple[int, ...], int], ...] | None:
    """Rule (i), transposed means with a folded seed: per use (`_seed_use`), the splat
    operand the constant reaches it as and that operand's dims of more than one element,
    which the constant is spread over (`SPREAD`); None when a use spreads over nothing."""
    out = []
    for u, pos in uses:
        dims = tuple(k for k, n in enumerate(_shape_of(facts, u.operands[pos]) or ()) if n > 1)
        if not dims:
            return None
        out.append((u.operands[pos], dims, SPREAD))
    return tuple(out)


def _one_device(found: tuple[str, tuple[int, ...]] | None) -> tuple[str, tuple[int, ...], int] | None:
    return None if found is None else (found[0], found[1], 1)


def summed_across(facts: ProgramFacts, value: str) -> tuple[str, tuple[int, ...], int] | None:
    """Rule (i) across devices: (operand, reduced dims, g) when `value` is, through
    broadcasts, reshapes, converts and value identities, an `all_reduce` with an `add` body
    over replica groups of g devices each (several multiply) of a sum reduction
    (`sum_reduced`): a partitioned mean's numerator, the local sums added over the shards.
    None when there is no all-reduce on the way (`sum_reduced` then reads the sum)."""
    devices = 1
    while value in facts.defs:
        op, k = facts.defs[value]
        if op.name in SPLAT_PRESERVING | VALUE_IDENTITIES:
            value = op.operands[0]
            continue
        if op.name != "stablehlo.all_reduce" or len(op.operands) != 1 or not _adds_body(op):
            break
        g = group_size(op)
        if g is None:
            return None
        devices *= g
        value = op.operands[0]
    if devices == 1:
        return None
    found = sum_reduced(facts, value)
    return None if found is None else (found[0], found[1], devices)


def _adds_body(op: Op) -> bool:
    if len(op.regions) != 1:
        return False
    body = op.regions[0]
    return len(body.ops) == 1 and body.ops[0].name == "stablehlo.add" \
        and sorted(body.ops[0].operands) == sorted(body.args) and tuple(body.returns) == body.ops[0].results


def spread_along(facts: ProgramFacts, value: str) -> tuple[str, tuple[int, ...]] | None:
    """(broadcast result, its new dims) when `value`, through converts, reshapes, value
    identities, sums and broadcasts over size-1 dims only, is broadcast along new dims of
    more than one element: the transpose of a sum, as a mean's gradient writes it
    (`broadcast(ct / n)` spreads the cotangent over the n summed positions)."""
    for _ in range(64):  # a chain of moves, never a cycle; bounded all the same
        users = facts.uses.get(value, [])
        if len(users) != 1:
            return None
        u = users[0]
        t = u.result_types[0] if u.result_types else None
        if t is None or u.operands[0] != value:
            return None
        if u.name == "stablehlo.broadcast_in_dim":
            kept = set(u.attrs.get("broadcast_dimensions", ()))
            new = tuple(d for d in range(len(t.shape)) if d not in kept and t.shape[d] > 1)
            if new:
                return u.results[0], new
        elif u.name == "stablehlo.reduce" and len(u.operands) == 2:
            dims = u.attrs.get("dimensions", ())
            operand = facts.defs.get(value)
            shape = operand[0].result_types[operand[1]].shape if operand else ()
            if not shape or any(shape[d] != 1 for d in dims):
                return None  # a sum over more than one element: no move
        elif u.name not in SPLAT_PRESERVING | VALUE_IDENTITIES:
            return None
        value = u.results[0]
    return None


def _shape_of(facts: ProgramFacts, v: str) -> tuple[int, ...] | None:
    """v's shape: an op's result, a function's or a region's argument."""
    d = facts.defs.get(v)
    if d is not None:
        return d[0].result_types[d[1]].shape if len(d[0].result_types) > d[1] else None
    if v in facts.func_of_arg:
        fn = facts.module.funcs.get(facts.func_of_arg[v])
        body = fn.body if fn is not None else None
    elif v in facts.region_arg:
        owner, ri, _ = facts.region_arg[v]
        body = owner.regions[ri]
    else:
        return None
    if body is None or v not in body.args:
        return None
    return body.arg_types[body.args.index(v)].shape


def _unit_reduce(facts: ProgramFacts, op: Op) -> bool:
    """A reduce whose reduced dims all have one element, with an add body and a splat 0
    init: its result is its operand's one element per position."""
    shape = _shape_of(facts, op.operands[0])
    dims = tuple(op.attrs.get("dimensions", ()))
    if shape is None or not dims or any(shape[x] != 1 for x in dims):
        return False
    body = op.regions[0]
    if len(body.ops) != 1 or body.ops[0].name != "stablehlo.add":
        return False
    init = _constant_behind(facts, op.operands[1])
    return init is not None and init[1] == 0


def sum_reduced(facts: ProgramFacts, value: str) -> tuple[str, tuple[int, ...]] | None:
    """(operand, reduced dims) when `value` is, through broadcasts, reshapes, converts and
    value identities, the result of a sum: a `reduce` of one operand whose body is one
    `add` of its two arguments and whose init is a splat 0."""
    while value in facts.defs:
        op, k = facts.defs[value]
        if op.name in SPLAT_PRESERVING | VALUE_IDENTITIES:
            value = op.operands[0]
            continue
        if op.name != "stablehlo.reduce" or len(op.operands) != 2 or k != 0 or len(op.regions) != 1:
            return None
        if UNIT_SUMS and _unit_reduce(facts, op):
            # A sum over one element is that element (x + 0): a move, as a reshape is
            # (JAX's transpose of a broadcast to [.., 1] writes one before a mean's divide).
            value = op.operands[0]
            continue
        body = op.regions[0]
        if len(body.ops) != 1 or body.ops[0].name != "stablehlo.add" \
                or sorted(body.ops[0].operands) != sorted(body.args) or tuple(body.returns) != body.ops[0].results:
            return None
        init = _constant_behind(facts, op.operands[1])
        if init is None or init[1] != 0:
            return None
        return op.operands[0], tuple(op.attrs.get("dimensions", ()))
    return None


def device_count(facts: ProgramFacts, use: Op, pos: int, value: float | int) -> bool:
    """The constant at operand `pos` of `use` divides (or, as its reciprocal, multiplies)
    the result of a cross-device sum over groups of exactly `value` devices: a mean over
    devices (pmean, a mean over a mesh axis), whose divisor is a device count."""
    if use.name == "stablehlo.divide" and pos == 1:
        count = float(value)
    elif use.name == "stablehlo.multiply" and value:
        count = 1.0 / float(value)
    else:
        return False
    other = use.operands[1 - pos]
    while other in facts.defs:
        op, _ = facts.defs[other]
        if op.name in REDUCING_COLLECTIVES:
            n = group_size(op)
            return n is not None and abs(n - count) <= 1e-6 * n
        if op.name not in SPLAT_PRESERVING | VALUE_IDENTITIES:
            return False
        other = op.operands[0]
    return False


def group_size(op: Op) -> int | None:
    """Devices per replica group of a collective, when its groups are a plain table."""
    groups = op.attrs.get("replica_groups")
    if isinstance(groups, np.ndarray) and groups.ndim == 2 and groups.shape[1] > 0:
        return int(groups.shape[1])
    return None


def through_broadcasts(facts: ProgramFacts, value: str, calls: bool = False) -> list[tuple[Op, int]]:
    """Uses of a value, looking through broadcasts/converts/reshapes: (op, operand position).
    `calls`: and into called functions, as the uses of the callee's argument (jnp's
    `floor_divide` and `remainder` are private functions taking the divisor)."""
    out: list[tuple[Op, int]] = []
    todo, seen = [value], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        for u in facts.uses.get(v, []):
            callee = facts.module.funcs.get(u.attrs.get("callee", "")) if calls and u.name == "func.call" else None
            if u.name in SPLAT_PRESERVING:
                todo.extend(u.results)
            elif callee is not None:
                todo.extend(a for a, o in zip(callee.body.args, u.operands) if o == v)
            else:
                out.extend((u, k) for k, o in enumerate(u.operands) if o == v)
    return out


def block_offset_constants(facts: ProgramFacts, value: str) -> list[str]:
    """Names of the constants of an offset's integer computation (not through float data)
    that count elements: below a product with a constant (`m * rows`, the multiplier
    named) the other factor `m` counts blocks (a device or ring-step index,
    `(axis + s + 4) % 4`): its constants are left out. A multiplier of 0 or +-1 is no
    block size and does not cut. Block counts do not change when the classes shrink
    (one divisor keeps every shard count), so only the multiplier must be a size."""
    out, todo, seen = [], [value], set()
    while todo:
        v = todo.pop()
        if v in seen or v not in facts.defs:
            continue
        seen.add(v)
        op, _ = facts.defs[v]
        if op.name == "stablehlo.constant":
            out.append(v)
            continue
        if not op.result_types or op.result_types[0].is_float:
            continue
        if op.name == "stablehlo.multiply":
            found = [(k, _constant_behind(facts, o)) for k, o in enumerate(op.operands)]
            cut = [(k, c) for k, c in found if c is not None and c[1] not in (0, 1, -1)]
            if len(cut) == 1:
                k, (name, _) = cut[0]
                out.append(name)
                continue
        todo.extend(op.operands)
    return out


def arg_sources(fa: ProgramFacts, v: str) -> list[str] | str | None:
    """Where a function or loop argument's values come from: the callers' operands (a
    function argument), the loop's initial operand (a `while` argument the body returns
    unchanged, through calls), "counter" (a `while` argument the body steps by a constant,
    `i + 1`, from an initial value of constants and device ids: a loop index), or None
    (an entry argument, or a loop-carried value)."""
    if v in fa.func_of_arg:
        calls = fa.callers.get(v, [])
        return [call.operands[k] for call, k in calls if k < len(call.operands)] or None
    if v not in fa.region_arg:
        return None
    owner, _, k = fa.region_arg[v]
    if owner.name != "stablehlo.while" or len(owner.regions) < 2 or k >= len(owner.operands):
        return None
    body = owner.regions[1]
    mine, ret = body.args[k], _callee_value(fa, body.returns[k])
    if _caller_value(fa, ret) == mine:
        return [owner.operands[k]]
    if ret in fa.defs:
        op, _ = fa.defs[ret]
        if op.name == "stablehlo.add":
            others = [o for o in op.operands if _caller_value(fa, o) != mine]
            if len(others) == 1 and len(others) < len(op.operands) and _constant_behind(fa, others[0]) is not None \
                    and index_sources(fa, owner.operands[k]) <= {"constant", "device"}:
                return "counter"
    return None


def _callee_value(fa: ProgramFacts, v: str) -> str:
    """A call's result -> the value its callee returns (through nested calls)."""
    for _ in range(16):
        if v not in fa.defs:
            return v
        op, k = fa.defs[v]
        callee = fa.module.funcs.get(op.attrs.get("callee", "")) if op.name == "func.call" else None
        if callee is None or k >= len(callee.body.returns):
            return v
        v = callee.body.returns[k]
    return v


def _caller_value(fa: ProgramFacts, v: str) -> str:
    """A function argument with a single call site -> that call's operand (repeatedly)."""
    for _ in range(16):
        calls = fa.callers.get(v, [])
        if len(calls) != 1 or calls[0][1] >= len(calls[0][0].operands):
            return v
        v = calls[0][0].operands[calls[0][1]]
    return v


def index_sources(fa: ProgramFacts, value: str, through_calls: bool = False) -> set[str]:
    """What an index computation is made of: constant, device (ids), counter (a loop
    index, `arg_sources`), input (integer program inputs, loop-carried values), iota,
    float (computed from float data). Function and loop arguments are followed to the
    values they are called or started with; `through_calls`: a call's result to the value
    its callee returns (else a call with a float operand counts as float)."""
    out: set[str] = set()
    todo, seen = [value], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in fa.entry_args:
            out.add("input")
            continue
        if v in fa.func_of_arg or v in fa.region_arg:
            came = arg_sources(fa, v)
            if came == "counter":
                out.add("counter")
            elif isinstance(came, list):
                todo.extend(came)
            else:
                out.add("input")
            continue
        if v not in fa.defs:
            continue
        op, k = fa.defs[v]
        callee = fa.module.funcs.get(op.attrs.get("callee", "")) if op.name == "func.call" else None
        if through_calls and callee is not None:
            todo.append(callee.body.returns[k])
        elif op.name == "stablehlo.constant":
            out.add("constant")
        elif op.name in DEVICE_IDS:
            out.add("device")
        elif op.name == "stablehlo.iota":
            out.add("iota")
        elif any(fa.module and _is_float(fa, o) for o in op.operands):
            out.add("float")
        else:
            todo.extend(op.operands)
    return out


def _is_float(fa: ProgramFacts, value: str) -> bool:
    if value in fa.defs:
        op, k = fa.defs[value]
        return op.result_types[k].is_float
    return False


# Ops whose results are elements of some of their operands, moved or picked, never
# combined: a position table gathered by token ids, a slice of it, a max of positions.
# A position they carry is still a position (at the same scale), so a constant it meets
# afterwards names a position as it would before the move (rule b, docs/shrinking.md).
# -> the operands whose elements reach the results (a gather's indices, a dynamic slice's
# offsets do not: they address, their values are not moved).
_MOVED_FIRST = frozenset({"stablehlo.gather", "stablehlo.dynamic_slice", "stablehlo.slice", "stablehlo.reverse",
                          "stablehlo.real_dynamic_slice"})
_MOVED_ALL = frozenset({"stablehlo.concatenate", "stablehlo.sort", "stablehlo.all_gather", "stablehlo.all_to_all",
                        "stablehlo.collective_permute", "stablehlo.collective_broadcast",
                        "stablehlo.optimization_barrier"}) | VALUE_IDENTITIES


def moved_operands(op: Op) -> tuple[int, ...]:
    """The operand positions whose elements the op moves or picks into its results
    (`_MOVED_FIRST`, `_MOVED_ALL`, a max/min `reduce`'s inputs, a dynamic update's operand
    and update, a pad's operand and padding value, a scatter's operand and updates); ()
    for any other op."""
    n = len(op.operands)
    if op.name in _MOVED_FIRST:
        return (0,)
    if op.name in _MOVED_ALL:
        return tuple(range(n))
    if op.name in ("stablehlo.dynamic_update_slice", "stablehlo.pad"):
        return (0, 1)
    if op.name == "stablehlo.scatter" and n % 2 == 1:
        k = n // 2  # inputs..., indices, updates...
        return tuple(range(k)) + tuple(range(k + 1, n))
    if op.name in ("stablehlo.reduce", "stablehlo.reduce_window") and op.regions:
        body = op.regions[0].ops
        if body and all(b.name in ("stablehlo.maximum", "stablehlo.minimum") for b in body):
            return tuple(range(n // 2))
    return ()


def region_flow(op: Op) -> list[tuple[str, tuple[str, ...]]]:
    """Where a loop's or branch's values go: (target, sources) pairs, the target holding
    one of the sources' values. A `while`'s region arguments k (cond and body) take its
    operand k and the body's return k (the next round's value), its result k the same; a
    `case`/`if` result k is one of the branches' returns k (values from above need no
    flow: a region sees them directly). Positions carried into a loop are positions
    inside it (rule b: `fori_loop` bodies that mask `pos >= 1000` with `pos` carried)."""
    out: list[tuple[str, tuple[str, ...]]] = []
    if op.name == "stablehlo.while" and len(op.regions) == 2:
        body = op.regions[1]
        for k, operand in enumerate(op.operands):
            sources = (operand,) + ((body.returns[k],) if k < len(body.returns) else ())
            for region in op.regions:
                if k < len(region.args):
                    out.append((region.args[k], sources))
            if k < len(op.results):
                out.append((op.results[k], sources))
    elif op.name in ("stablehlo.case", "stablehlo.if"):
        for k, r in enumerate(op.results):
            out.append((r, tuple(region.returns[k] for region in op.regions if k < len(region.returns))))
    return out


def call_flow(fa: ProgramFacts, op: Op) -> list[tuple[str, tuple[str, ...]]]:
    """A call's (target, sources) pairs: the callee's arguments take the operands, the
    call's results the callee's returns."""
    callee = fa.module.funcs.get(op.attrs.get("callee", "")) if op.name == "func.call" else None
    if callee is None:
        return []
    out: list[tuple[str, tuple[str, ...]]] = [(a, (o,)) for a, o in zip(callee.body.args, op.operands)]
    return out + [(r, (ret,)) for r, ret in zip(op.results, callee.body.returns)]


def position_constants(fa: ProgramFacts) -> list[tuple[str, int]]:
    """Constants (name, |value| rounded up) combined with values computed from an iota:
    window bounds, shifts. Non-integer floats and floats past `position_reach` (mask
    fills) are not positions."""
    derived: set[str] = set()
    out = []
    limit = position_reach(largest_dim(fa.module))
    # Twice, as `positions.named_positions`: positions cross into called functions and
    # loops, and back out through their results and the next round's arguments.
    for op in fa.ops() * 2:
        if op.name == "stablehlo.iota":
            derived.update(op.results)
            continue
        for target, sources in region_flow(op) + call_flow(fa, op):
            if any(v in derived for v in sources):
                derived.add(target)
        if any(op.operands[k] in derived for k in moved_operands(op)):
            derived.update(op.results)  # a moved position (a gather of a position table)
            continue
        if op.name not in POSITION_FLOW or not any(o in derived for o in op.operands):
            continue
        derived.update(op.results)
        if op.name == "stablehlo.select" and not any(o in derived for o in op.operands[1:]):
            continue
        if op.name not in POSITION_ARITH and op.name != "stablehlo.select":
            continue
        for o in op.operands:
            found = _constant_behind(fa, o)
            if found is None:
                continue
            name, value = found
            if isinstance(value, float) and (not value.is_integer() or abs(value) > limit):
                continue
            out.append((name, int(abs(value))))
    return list(dict.fromkeys(out))  # the second pass finds the first's again


# A float constant next to positions names a position up to this many times the largest
# dim of the program (a sum of two positions, a global offset plus a local position), and
# at least up to 2^16. Past that it is a mask fill (-1e9, finfo.min) or a scale, which no
# position reaches: naming it would pin the positions for nothing. A fixed 2^16 left a
# 131072-long context's window at 70000.0 unnamed (red-team batch 3, `long_ctx`).
FLOAT_REACH = 4


def position_reach(largest: int) -> int:
    """How far a float constant next to positions can name one (see FLOAT_REACH)."""
    return max(1 << 16, FLOAT_REACH * largest) if FLOAT_REACH else 1 << 16


def largest_dim(module: Module) -> int:
    """The largest dim size of any value of the program (its arguments and op results)."""
    best = 0
    for fn in module.funcs.values():
        for t in fn.body.arg_types:
            best = max([best, *t.shape])
        for op in fn.body.walk():
            for t in op.result_types:
                best = max([best, *t.shape])
    return best


def constant_behind(fa: ProgramFacts, value: str) -> tuple[str, float | int] | None:
    """(the constant's value name, its splat value) when `value` is a splat constant
    through broadcasts, converts and reshapes; None otherwise."""
    return _constant_behind(fa, value)


def _constant_behind(fa: ProgramFacts, value: str) -> tuple[str, float | int] | None:
    while value in fa.defs:
        op, _ = fa.defs[value]
        if op.name == "stablehlo.constant":
            v = splat(op)
            return None if v is None else (value, v)
        if op.name not in SPLAT_PRESERVING:
            return None
        value = op.operands[0]
    return None


def only_device(fa: ProgramFacts, name: str) -> bool:
    uses = through_broadcasts(fa, name)
    return bool(uses) and all(fa.mesh_arithmetic(u, pos) for u, pos in uses)


__all__ = ['ACROSS_DEVICES', 'FLOAT_REACH', 'Constant', 'ProgramFacts', 'largest_dim', 'position_reach',
           'arg_sources', 'block_offset_constants', 'call_flow',
           'constant_behind', 'device_count', 'group_size', 'index_sources', 'mean_uses', 'moved_operands',
           'iota_only', 'only_device', 'position_constants', 'region_flow', 'role_constants', 'splat', 'sum_reduced',
           'summed_across', 'through_broadcasts']


def passed_whole(fa: ProgramFacts, v: str) -> str:
    """The value passed in for `v` where `v` is a manual computation's argument that every
    device receives whole (replicated), through nested ones; else `v` itself."""
    while v in fa.region_arg:
        owner, _, k = fa.region_arg[v]
        shardings = owner.attrs.get("in_shardings") or ()
        if owner.name != "sdy.manual_computation" or k >= len(shardings) or k >= len(owner.operands) \
                or not isinstance(shardings[k], Sharding) or any(shardings[k].dims) or shardings[k].unreduced:
            return v
        v = owner.operands[k]
    return v
