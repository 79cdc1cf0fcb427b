"""Rule l, trip counters (docs/shrinking.md, "Trip counters"): the integer constants that
only count a loop's trips and place its slices.

A scan over stacked layers (`lax.scan`, `fori_loop`) is `while (i < L) { slice(w, i) ...;
i = i + 1 }`: the counter starts the per-layer `dynamic_slice` / `dynamic_update_slice`
along the stack's layer dim, and the bound L is that dim's size. Rule (a) reads every
integer constant as a possible size of any class of its value (or that value plus
2..NEAR): the 405B stack's 126 layers are 128 heads - 2 and head_dim - 2 as well, so the
bound pinned both, and hidden = heads x head_dim with them (2.5 T elements).

`index_groups` joins scalar integer values along `add`, `subtract`, calls (operands with
the callee's arguments, results with its returns) and loop-carried positions (initial
value, body and condition argument, next value, result). A group is kept only when every
use of every member is one of: such a join, a start index of a dynamic slice or update
(recorded: the sliced value and dim), a `compare` whose result is a loop condition's
answer or only chooses between members by `select` (jax's wrap of a negative index,
`i < 0 ? i + L : i`; both sides of the compare, both choices and the select join), or a
scalar `compare` of a member with an integer literal whose answer goes anywhere (a scan's
`where(i == 96, ...)`: the answer is a truth value of the group alone; `TRIP_PREDICATES`). Any
other use (a multiply, a convert, a broadcast, an entry result, a region's return other
than a loop's) drops the group, and so does a member made by anything but a constant, an
add, subtract or convert of integer scalars, a select between them, a loop or a call
(`MEMBER_DEFS`: a reduce's count of H's elements joined through `k - i` or a choice
`i + 11 < k` would make the group read a size of H).

Why a constant of a kept group names only the classes of its group's sliced dims: the
program reads the constant's value only through sums, differences and choices that end
as start positions along those dims, and through the number of trips the loop makes. Neither
depends on the size of any other class, so the program at any size of the other classes
reads the same literal the same way, and the literal is not a size of them in the program
(not guessed from its value). Whether it is a size of a sliced dim's class is left to rule
(a) as before (rewritten with it, pinned if ambiguous among those classes). A constant that
also meets anything else is in no kept group and is read as before.
"""
from __future__ import annotations

from collections.abc import Iterator

from tv_mlir.ir import Block, Module, Op, TensorType
from tv_mlir.semantics.ops import DYNAMIC_SLICES
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import Constant, ProgramFacts, splat

# The switch is for the tests that show what the rule decides.
TRIP_COUNTERS = True
# A member compared with an integer literal, the answer used anywhere (`_tests_a_literal`);
# off, such a compare drops the group as any other use does (as before).
TRIP_PREDICATES = True
# Members made only from members (`_closed`): a group with a value made by anything else
# (a reduce's count of H's elements, a program input) escapes. Off: membership is by use
# only, and `k - i == 11` with k = sum(ones(H)) kept its group (red-team batch 5,
# trip_count_sub and trip_choose: H shrank below 12 where the bug hid).
MEMBER_DEFS = True
# Region arguments are member definitions too (`MEMBER_DEFS`): a scalar integer argument of
# a region other than a loop's (joined with what it carries) or a function's (joined with
# its callers' operands) escapes. Off: a manual computation's argument was made by no op
# the rule checked, and a count of H passed into a shard_map met the counter there
# (red-team batch 6, trip_manual: H shrank below 12 where the bug hid).
REGION_ARGS = True
# Rule (a)'s order: a trip constant is no literal for the size values of other classes
# (`trips_apart`); off, every size value keeps its order with it, as before.
TRIP_ORDER = True

_JOIN = frozenset({"stablehlo.add", "stablehlo.subtract", "stablehlo.convert"})


class _Groups:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}
        self.escapes: set[str] = set()
        self.slices: dict[str, set[tuple[str, int]]] = {}

    def find(self, v: str) -> str:
        self.parent.setdefault(v, v)
        root = v
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[v] != root:
            self.parent[v], v = root, self.parent[v]
        return root

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        if rb in self.escapes:
            self.escapes.add(ra)
        self.slices.setdefault(ra, set()).update(self.slices.pop(rb, set()))

    def escape(self, v: str) -> None:
        self.escapes.add(self.find(v))

    def slice(self, v: str, node: tuple[str, int]) -> None:
        self.slices.setdefault(self.find(v), set()).add(node)


def _blocks(module: Module) -> Iterator[tuple[Block, Op | None, int]]:
    """Every block with the op that owns it and its region index (None for a function)."""
    stack: list[tuple[Block, Op | None, int]] = [(fn.body, None, 0) for fn in module.funcs.values()]
    while stack:
        block, owner, k = stack.pop()
        yield block, owner, k
        for op in block.ops:
            stack.extend((r, op, i) for i, r in enumerate(op.regions))


def _scalar_ints(module: Module) -> set[str]:
    out: set[str] = set()

    def add(names: tuple[str, ...], types: tuple[TensorType, ...]) -> None:
        out.update(n for n, t in zip(names, types) if t.shape == () and t.is_int and not t.is_bool)

    for block, _, _ in _blocks(module):
        add(block.args, block.arg_types)
        for op in block.ops:
            add(op.results, op.result_types)
    return out


def _step(f: ProgramFacts, v: str, depth: int = 0) -> tuple[str, int] | None:
    """`v` as (x, c) with v = x + c for an integer constant c, looking through calls."""
    d = f.defs.get(v)
    if d is None or depth > 8:
        return None
    op, k = d
    if op.name == "stablehlo.add":
        for x, y in (op.operands, op.operands[::-1]):
            c = _int_constant(f, y)
            if c is not None:
                return x, c
    elif op.name == "func.call" and op.attrs.get("callee", "") in f.module.funcs:
        callee = f.module.funcs[op.attrs["callee"]].body
        inner = _step(f, callee.returns[k], depth + 1)
        if inner is not None and inner[0] in callee.args:
            return op.operands[callee.args.index(inner[0])], inner[1]
    return None


def _int_constant(f: ProgramFacts, v: str) -> int | None:
    d = f.defs.get(v)
    c = splat(d[0]) if d is not None and d[0].name == "stablehlo.constant" else None
    return int(c) if c is not None and float(c).is_integer() else None


def _tests_a_literal(f: ProgramFacts, operands: list[str]) -> bool:
    """A scalar compare of a member with an integer literal (`i == 96`, a scan's seeded
    `where(i == 96, ...)`), whose answer may go anywhere (`TRIP_PREDICATES`): the literal
    joins the group. The answer is a truth value of the counter and the literal alone, so
    it reads neither as a size of another class; joined, the literal names the group's
    dims, and rule (a) keeps it in order with their sizes (layer 96 stays a layer)."""
    return TRIP_PREDICATES and any(_int_constant(f, v) is not None for v in operands)


def _closed(op: Op, ints: set[str], module: Module) -> bool:
    """Whether `op` makes its integer scalars from the group's own values only (`MEMBER_DEFS`):
    a constant, an add, subtract or convert of integer scalars, a select between them, a
    loop's or a call's results (joined with what the loop carries and the callee returns).
    A reduce, a multiply, a convert of a float, a branch's answer make a value that may hold
    a size of another class (sum(ones(H)) is H), which the group's argument cannot read."""
    if op.name in ("stablehlo.constant", "stablehlo.while"):
        return True
    if op.name in _JOIN:
        return all(v in ints for v in op.operands)
    if op.name == "stablehlo.select":
        return all(v in ints for v in op.operands[1:])
    return op.name == "func.call" and op.attrs.get("callee", "") in module.funcs


def _lockstep(f: ProgramFacts, loop: Op) -> list[tuple[int, int]]:
    """Carried positions that hold one value on every trip: the same constant start and
    the same constant step (a fori_loop's own counter and the index it passes its body)."""
    body = loop.regions[1]
    seen: dict[tuple[int, int], int] = {}
    out = []
    for p, init in enumerate(loop.operands):
        start, step = _int_constant(f, init), _step(f, body.returns[p])
        if start is None or step is None or step[0] != body.args[p]:
            continue
        key = (start, step[1])
        if key in seen:
            out.append((seen[key], p))
        else:
            seen[key] = p
    return out


def index_groups(f: ProgramFacts) -> dict[str, frozenset[tuple[str, int]]]:
    """Scalar integer value -> the (value, dim) starts its kept group places (a group
    with no slice is left out: a pure trip counter names nothing to tie it to)."""
    if not TRIP_COUNTERS:
        return {}
    module = f.module
    ints = _scalar_ints(module)
    g = _Groups()
    for v in ints:
        g.find(v)
    answers: set[str] = set()  # loop conditions' answers
    uses: dict[str, list[Op]] = {}
    for block, owner, k in _blocks(module):
        if owner is not None and owner.name == "stablehlo.while" and k == 0:
            answers.update(block.returns)
        for op in block.ops:
            for v in op.operands:
                uses.setdefault(v, []).append(op)

    def chooses(p: str) -> bool:
        # A predicate that only chooses between counters (jax's wrap of a negative
        # index, `i < 0 ? i + L : i`) or answers a loop condition.
        return all(u.name == "stablehlo.select" and u.operands[0] == p and u.results[0] in ints
                   for u in uses.get(p, [])) and (p in answers or p in uses)
    if MEMBER_DEFS:
        # A program input is no literal's function: a group holding one escapes.
        for v in module.main.body.args:
            if v in ints:
                g.escape(v)
    if MEMBER_DEFS and REGION_ARGS:
        # A region's argument is made by its op, from the op's operands (a manual
        # computation's) or from elements it reduces, sorts or scatters: no member's sum,
        # difference or choice, so it escapes (a count of H entering a shard_map).
        for block, owner, _ in _blocks(module):
            if owner is not None and owner.name != "stablehlo.while":
                for v in block.args:
                    if v in ints:
                        g.escape(v)
    for block, owner, _ in _blocks(module):
        for op in block.ops:
            used = [v for v in op.operands if v in ints]
            if MEMBER_DEFS and not _closed(op, ints, module):
                for r in op.results:
                    if r in ints:
                        g.escape(r)
            if op.name in DYNAMIC_SLICES:
                first = 1 if op.name == "stablehlo.dynamic_slice" else 2
                for d, v in enumerate(op.operands[first:]):
                    if v in ints:
                        g.slice(v, (op.operands[0], d))
                for v in op.operands[:first]:
                    if v in ints:
                        g.escape(v)
            elif op.name in _JOIN and op.results[0] in ints:
                for v in used:
                    g.join(v, op.results[0])
            elif op.name == "stablehlo.compare" and len(used) == 2 and \
                    (chooses(op.results[0]) or _tests_a_literal(f, used)):
                g.join(used[0], used[1])
            elif op.name == "stablehlo.select" and op.results[0] in ints:
                for v in op.operands[1:]:
                    g.join(v, op.results[0])
            elif op.name == "func.call" and op.attrs.get("callee", "") in module.funcs:
                callee = module.funcs[op.attrs["callee"]].body
                for v, a in zip(op.operands, callee.args):
                    if v in ints:
                        g.join(v, a)
                for r, ret in zip(op.results, callee.returns):
                    if r in ints:
                        g.join(r, ret)
            elif op.name == "stablehlo.while":
                cond, body = op.regions
                for p, v in enumerate(op.operands):
                    if v in ints:
                        for w in (cond.args[p], body.args[p], body.returns[p], op.results[p]):
                            g.join(v, w)
                for p, q in _lockstep(f, op):
                    g.join(body.args[p], body.args[q])
            else:
                for v in used:
                    g.escape(v)
        # Returns: a called function's and a loop body's join above; any other escapes
        # (an entry result, a reduction's or a branch's answer).
        if owner is None:
            fn_is_entry = block is module.main.body
            if fn_is_entry:
                for v in block.returns:
                    if v in ints:
                        g.escape(v)
        elif not (owner.name == "stablehlo.while"):
            for v in block.returns:
                if v in ints:
                    g.escape(v)
    out: dict[str, frozenset[tuple[str, int]]] = {}
    for v in ints:
        r = g.find(v)
        if r not in g.escapes and g.slices.get(r):
            out[v] = frozenset(g.slices[r])
    return out


def trip_constants(a: DimAnalysis, facts: list[ProgramFacts], constants: list[Constant]
                   ) -> dict[tuple[str, str], frozenset[int]]:
    """(program, constant) -> the classes it can name: those of the dims its kept group
    starts slices along (`index_groups`); constants of no kept group are left out."""
    out: dict[tuple[str, str], frozenset[int]] = {}
    groups = {fa.program: index_groups(fa) for fa in facts}
    for k in constants:
        nodes = groups.get(k.program, {}).get(k.value_name)
        if nodes:
            out[(k.program, k.value_name)] = frozenset(a.class_of[(k.program, v, d)] for v, d in nodes)
    return out


def trips_apart(occurrences: list[tuple[str, str]], classes: tuple[int, ...],
                trip_only: dict[tuple[str, str], frozenset[int]]) -> bool:
    """Whether a literal's every occurrence is a trip constant that names none of
    `classes` (the classes of a size value). Rule (a) keeps every size value in order with
    every literal because a program may compare the two (`if n > 126`). A trip constant is
    read only through its group: sums, differences and choices among the group's members,
    ending as slice starts along the group's dims and the loop's compare with its counter.
    Any op that takes a member and a value outside the group either joins the value into
    the group or drops the group. So a size value of another class (a mean's divisor, a
    count) meets the literal in no op, and the two orders of the pair are the same program."""
    return TRIP_ORDER and TRIP_COUNTERS and bool(occurrences) and \
        all(key in trip_only and not trip_only[key] & set(classes) for key in occurrences)


__all__ = ["MEMBER_DEFS", "REGION_ARGS", "TRIP_COUNTERS", "TRIP_ORDER", "TRIP_PREDICATES", "index_groups",
           "trip_constants", "trips_apart"]
