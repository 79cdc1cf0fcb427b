"""Rule (a), where constants meet (docs/shrinking.md, rule a "literals that meet"): which
data a constant's value is combined with, so that a literal is kept in order only with
the size values it could stand for or be compared with.

Rule (a) keeps every shrunk size value x on the same side of every literal u (RoPE's base
10000 kept the 8B vocabulary at 16000). What the order protects: (1) one program combining
values carrying x and u (`min(V - 1, 10000)`, a compare of a clamp with a literal); (2) the
two twins using x and u in one role, on the same data (a mean over `s / 4096` against the
bug's `s / 2.0`; a gather at `V - 1` against one at `10000`): at x' = u the bug would be the
reference. A constant's *reach* answers both: the values that carry its number (forward
through arithmetic, layout ops, collectives, selects' branches, reductions and dots) and
the *sources* of what it is combined with on the way (program inputs, the dimension class
of every iota, device ids). It stops where its number no longer travels: a compare (a
Boolean of the order with the other operand, whose sources it records), a select's
predicate, a gather's or dynamic slice's index (it records the operand's sources: the
element picked depends on the order of the index and the operand's size), and an op the
verifier does not interpret (exp, cos, power with a non-constant exponent: an atom, whose
other operands' sources it records). A call is followed into its callee and back out of its
returns, and what the constant meets is what the callee's ops combine it with, as in the
inlined program the verifier encodes (`CALLEES`; not the call's other operands). A region
op it enters (a loop, a branch), a call to an unknown function, an argument of a function
or region among the sources, or no source at all makes the reach unknown (`ANY`): such a
constant meets everything.

Size values among themselves (`data_only`, constants.PAIR_MEETING): the same reach, with
the sources of what picks an element left out where what is picked is program data: a
gather's or dynamic slice's indices when its operand is computed from a program input and
from no iota along the indexed dims (a slice's dims at a constant start are not indexed;
the embedding rows `E[ids]` are the embedding's data,
the ids only choose the row), a select's predicate when a branch is computed from an input
(`select(ok(ids), E[ids], NaN)`). Picking from a constant or a position table
(`take(arange(S), ids)`, a one-hot `select(iota == ids, 1, 0)`) keeps the index's sources:
there the picked value is a function of the index. Calls are read through their callees'
returns, and an argument every call site passes a constant has no source."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tv_mlir.ir import Op
from tv_mlir.semantics.ops import TRANSCENDENTAL_OPS
from tv_mlir.shrink.dims import DimAnalysis
from tv_mlir.shrink.facts import ProgramFacts

ANY = "*"  # an unknown source: meets every other
# Rule (a), a call's meets are its callee's (docs/shrinking.md, rule a "a call's meets are its
# callee's"): a constant passed to a `func.call` meets what the callee combines its argument
# with, and through the callee's returns what the call's results meet, as in the program with
# the call inlined (which is what the verifier encodes). Off: it also meets every other
# operand of the call (the 8B backward's `_take` call passes the ids with the gradient, whose
# RoPE positions kept the vocabulary above RoPE's base 10000).
CALLEES = True
_STOP_OPS = TRANSCENDENTAL_OPS | frozenset({"stablehlo.is_finite", "stablehlo.power", "stablehlo.atan2"})
_INDEXED = frozenset({"stablehlo.gather", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
                      "stablehlo.scatter"})


@dataclass
class Reach:
    carried: set[str] = field(default_factory=set)  # values that carry the constant's number
    sources: set[str] = field(default_factory=set)  # what they are combined with


@dataclass
class Meets:
    """Per program, the reach of each constant asked about (built on first use)."""

    facts: ProgramFacts
    analysis: DimAnalysis
    data_only: bool = False  # leave out the sources of what only picks program data (above)
    _sources: dict[str, frozenset[str]] | None = None
    _reach: dict[str, Reach] = field(default_factory=dict)

    def sources(self, v: str) -> frozenset[str]:
        if self._sources is None:
            self._sources = _all_sources(self.facts, self.analysis, self.data_only)
        return self._sources.get(v, frozenset({ANY}))

    def reach(self, constant: str) -> Reach:
        if constant not in self._reach:
            self._reach[constant] = self._walk(constant)
        return self._reach[constant]

    def clamp_reach(self, index: tuple[str, ...], operand: str) -> Reach:
        """The reach of a gather's or dynamic slice's own clamp (clamps.py): it carries
        the index (a literal carried into the index meets it) and is combined with what the
        index is computed from and with the indexed dims (a literal index into the same
        dims meets it, as two constants that reach one index do)."""
        out = Reach(set(index), set())
        for v in index:
            out.sources |= self.sources(v)
        key = (self.facts.program, operand)
        out.sources |= {f"dim {c}" for c in self.analysis.classes_of(*key)} if key in self.analysis.types else {ANY}
        return out

    def _indexed_dims(self, op: Op) -> set[str]:
        a, program = self.analysis, self.facts.program
        big = op.operands[0]
        key = (program, big)
        if key not in a.types:
            return {ANY}
        return {f"dim {c}" for c in a.classes_of(*key)}

    def _returns(self) -> tuple[dict[str, list[tuple[str, int]]], set[str]]:
        module = self.facts.module
        returns: dict[str, list[tuple[str, int]]] = {}
        for fn in module.funcs.values():
            if fn.name != module.entry:
                for i, r in enumerate(fn.body.returns):
                    returns.setdefault(r, []).append((fn.name, i))
        region_returns = {r for op in self.facts.ops() for region in op.regions for r in region.returns}
        return returns, region_returns

    def _walk(self, constant: str) -> Reach:
        fa = self.facts
        out = Reach({constant})
        todo = [constant]

        def others(op: Op, v: str) -> None:
            for o in op.operands:
                if o != v and o not in out.carried:
                    out.sources |= self.sources(o)

        def stop(op: Op) -> None:
            # Where the number stops travelling, the op itself is met: two constants that
            # stop at one op (a compare of the two) meet there.
            out.sources.add(f"at {fa.program} {op.results[0] if op.results else id(op)}")
        returns, region_returns = self._returns()
        while todo:
            v = todo.pop()
            if v in region_returns:
                out.sources.add(ANY)  # out of a reduce's or a loop's body: not followed
            for fn, i in returns.get(v, []):
                # a function's result: the calls' results carry it
                for op in fa.ops():
                    if op.name == "func.call" and op.attrs.get("callee", "") == fn and op.results[i] not in out.carried:
                        out.carried.add(op.results[i])
                        todo.append(op.results[i])
            for op in fa.uses.get(v, []):
                k = [i for i, o in enumerate(op.operands) if o == v]
                if op.name == "func.call":
                    callee = fa.module.funcs.get(op.attrs.get("callee", ""))
                    if callee is None:
                        out.sources.add(ANY)
                        continue
                    if not (self.data_only or CALLEES):  # otherwise what it meets inside the callee
                        others(op, v)
                    for a in _call_flow(callee.body.args, op, k):
                        # into the callee; its returns lead back to the calls' results
                        if a not in out.carried:
                            out.carried.add(a)
                            todo.append(a)
                    continue
                if (op.regions and not _elementwise_body(op)) or op.name.startswith("sdy."):
                    out.sources.add(ANY)  # a loop, a branch, a custom reducer: not followed
                    continue
                if op.name == "stablehlo.compare" or op.name in _STOP_OPS:
                    others(op, v)
                    stop(op)
                    continue
                if op.name == "stablehlo.select" and k == [0]:
                    stop(op)  # the predicate: what it decides between is recorded at its compare
                    continue
                if op.name in _INDEXED and all(i in _index_operands(op) for i in k):
                    # Only an index: its order with the indexed dims' sizes picks the element;
                    # what it meets is those dims (a literal index into them meets it).
                    out.sources |= self._indexed_dims(op)
                    stop(op)
                    continue
                others(op, v)
                for r in op.results:
                    if r not in out.carried:
                        out.carried.add(r)
                        todo.append(r)
        if not any(not x.startswith("at ") for x in out.sources):
            out.sources.add(ANY)  # combined with no data: no role to tell it apart by
        return out


def _call_flow(args: tuple[str, ...], op: Op, k: list[int]) -> list[str]:
    """Where a constant passed as the call's operands `k` goes: the callee's arguments `args`
    at those positions (one place, so that a test can read a call otherwise)."""
    return [args[i] for i in k]


def _elementwise_body(op: Op) -> bool:
    """A reduction or collective whose body is one elementwise op on its arguments (a sum,
    a max): its results carry its operands' numbers like an add or a maximum."""
    return len(op.regions) == 1 and len(op.regions[0].ops) == 1 and \
        op.regions[0].ops[0].name in ("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum",
                                      "stablehlo.multiply", "stablehlo.and", "stablehlo.or")


def _index_operands(op: Op) -> set[int]:
    n = len(op.operands)
    if op.name == "stablehlo.gather":
        return {1}
    if op.name == "stablehlo.dynamic_slice":
        return set(range(1, n))
    if op.name == "stablehlo.dynamic_update_slice":
        return set(range(2, n))
    return {(n - 1) // 2}  # scatter: operands..., indices, updates...


def apart(a: Reach, b: Reach, same_program: bool) -> bool:
    """Neither carries what the other carries (value names are per program), and their
    sources are disjoint and known."""
    return not (same_program and a.carried & b.carried) and ANY not in a.sources and ANY not in b.sources \
        and not (a.sources & b.sources)


def _all_sources(fa: ProgramFacts, a: DimAnalysis, data_only: bool = False) -> dict[str, frozenset[str]]:
    """Per value: the program inputs, iota classes and device ids it is computed from
    (ANY for a function's or region's argument). Ops with regions add ANY when an iota or
    a device id is made inside them (what their operands do not show). `data_only`: see
    `Meets.data_only`."""
    entry = {v: k for k, v in enumerate(fa.module.main.body.args)}
    out: dict[str, frozenset[str]] = {v: frozenset({f"input {k}"}) for v, k in entry.items()}
    if data_only:
        ordered = _ordered(fa)
        if ordered is None:  # a recursive call graph: the literals' sources, which hold every source these would
            return _all_sources(fa, a)
        for region_arg in fa.region_arg:
            out[region_arg] = frozenset({ANY})
        for item in ordered:
            if isinstance(item, str):
                _arg(fa, item, out, True)
            else:
                _op(fa, a, entry, item, out, True)
        return out
    # Twice: a function's arguments take their call sites' sources, which a callee listed
    # before its caller sees only on the second pass (an argument not seen yet is ANY).
    for _ in range(2):
        _pass(fa, a, entry, out)
    return out


def _ordered(fa: ProgramFacts) -> list[Op | str] | None:
    """Data only (docs/jax.md, "At Llama-3-8B widths", helper-54): every op of the program and
    every called function's argument, each after what its sources are read from: an op after
    its operands' definitions and, for a call, its callee's returns; an argument after its
    call sites' operands. The sources are then one pass in this order, the one solution of
    the equations `_pass` applies (the values depend on each other acyclically in a program
    without recursion). `_pass` repeated until nothing changed found the same, but a call's
    results read its callee's returns of the pass before, so it took a pass per call the data
    flowed through, more as corrections of a first ANY travelled: the 8B backward needed 15
    passes, a chain of 48 calls 69, and past 12 the sources fell back to the literals' (the
    8B vocabulary kept 16000 words, 640 once settled). None: the calls recurse."""
    defs = fa.defs
    order: list[Op | str] = []
    done: set[int | str] = set()  # ops by id, arguments by name
    active: set[int | str] = set()

    def needs(item: Op | str) -> list[Op | str]:
        if isinstance(item, str):  # a called function's argument: its call sites' operands
            return [defs[call.operands[i]][0] if call.operands[i] in defs else call.operands[i]
                    for call, i in fa.callers.get(item, [])]
        values = list(item.operands)
        if item.name == "func.call":
            callee = fa.module.funcs.get(item.attrs.get("callee", ""))
            if callee is not None:
                values += list(callee.body.returns)
        return [defs[v][0] if v in defs else v for v in values]

    def key(item: Op | str) -> int | str:
        return item if isinstance(item, str) else id(item)

    roots: list[Op | str] = [*fa.callers, *fa.ops()]
    for root in roots:
        if key(root) in done:
            continue
        stack: list[tuple[Op | str, Iterator[Op | str]]] = [(root, iter(needs(root)))]
        active.add(key(root))
        while stack:
            item, pending = stack[-1]
            nxt = next(pending, None)
            if nxt is None:
                stack.pop()
                active.discard(key(item))
                done.add(key(item))
                order.append(item)
                continue
            k = key(nxt)
            if k in done or (isinstance(nxt, str) and nxt not in fa.callers):
                continue  # an entry or region argument, or one of a function no call reaches
            if k in active:
                return None
            active.add(k)
            stack.append((nxt, iter(needs(nxt))))
    return order


def _arg(fa: ProgramFacts, arg: str, out: dict[str, frozenset[str]], data_only: bool) -> None:
    """A called function's argument: its call sites' sources."""
    sites = fa.callers.get(arg, [])
    got: frozenset[str] = frozenset()
    for call, i in sites:
        got |= out.get(call.operands[i], frozenset({ANY}))
    # Data only: an argument every call site passes a constant is a constant (no
    # source), not unknown.
    out[arg] = got if data_only and sites and all(call.operands[i] in out for call, i in sites) \
        else got or frozenset({ANY})


# Per op: the operands that only pick elements of the others (indices, a predicate).
_PICKING = {"stablehlo.gather": lambda n: {1}, "stablehlo.dynamic_slice": lambda n: set(range(1, n)),
            "stablehlo.dynamic_update_slice": lambda n: set(range(2, n)), "stablehlo.select": lambda n: {0}}


def _picked_data(fa: ProgramFacts, a: DimAnalysis, op: Op, out: dict[str, frozenset[str]],
                 entry: dict[str, int]) -> frozenset[str] | None:
    """The sources of a gather, dynamic slice or select that picks program data, without
    those of its index or predicate operands; None for any other op, and where the picked
    value can be a function of the index: a picked operand of no program input (a constant
    table), of an unknown source, or made from an iota along a dim the index runs over
    (`take(arange(S), ids)` is the ids)."""
    picking = _PICKING.get(op.name)
    if picking is None:
        return None
    drop = picking(len(op.operands))
    got: frozenset[str] = frozenset()
    for i, o in enumerate(op.operands):
        if i not in drop:
            got |= out.get(o, _arg_source(o, entry))
    if ANY in got or not any(s.startswith("input ") for s in got):
        return None
    if op.name != "stablehlo.select":
        big = op.operands[0]
        key = (fa.program, big)
        if key not in a.types:
            return None
        if op.name == "stablehlo.gather":
            g = op.attrs.get("dimension_numbers")
            if g is None:
                return None
            dims = tuple(g.start_index_map)
        else:  # a slice's dims at a start of no source (a constant) are not picked by an index
            starts = op.operands[1:] if op.name == "stablehlo.dynamic_slice" else op.operands[2:]
            dims = tuple(d for d, st in enumerate(starts) if out.get(st, frozenset({ANY})))
        if any(f"iota {a.class_of.get((fa.program, big, d))}" in got for d in dims):
            return None
    return got


def _pass(fa: ProgramFacts, a: DimAnalysis, entry: dict[str, int], out: dict[str, frozenset[str]],
          data_only: bool = False) -> None:
    for arg in fa.callers:
        _arg(fa, arg, out, data_only)
    for op in fa.ops():
        for region in op.regions:
            for arg in region.args:
                out.setdefault(arg, frozenset({ANY}))
        _op(fa, a, entry, op, out, data_only)


def _op(fa: ProgramFacts, a: DimAnalysis, entry: dict[str, int], op: Op, out: dict[str, frozenset[str]],
        data_only: bool) -> None:
    """An op's results' sources from its operands' (and, data only, a call's from its callee's
    returns)."""
    if op.name == "stablehlo.iota":
        d = int(op.attrs.get("iota_dimension", 0))
        c = a.class_of.get((fa.program, op.results[0], d))
        got = frozenset({f"iota {c}" if c is not None else ANY})
    elif op.name in ("stablehlo.partition_id", "stablehlo.replica_id"):
        got = frozenset({"device"})
    elif op.name == "stablehlo.constant":
        got = frozenset()
    elif data_only and (picked := _picked_data(fa, a, op, out, entry)) is not None:
        got = picked
    else:
        got = frozenset()
        for o in op.operands:
            got |= out.get(o, _arg_source(o, entry))
        if op.regions and any(x.name in ("stablehlo.iota", "stablehlo.partition_id", "stablehlo.replica_id")
                              for region in op.regions for x in region.walk()):
            got |= {ANY}
        if op.name == "func.call":
            fn = fa.module.funcs.get(op.attrs.get("callee", ""))
            got = frozenset({ANY}) if fn is None else got | _made_inside(fa, fn.name, set())
            if data_only and fn is not None and len(fn.body.returns) == len(op.results) and \
                    all(r in out for r in fn.body.returns):
                for r, ret in zip(op.results, fn.body.returns):
                    out[r] = out[ret]
                return
    for r in op.results:
        out[r] = got


def _made_inside(fa: ProgramFacts, name: str, seen: set[str]) -> frozenset[str]:
    """ANY when a function (or one it calls) makes an iota or a device id: sources its
    call's operands do not show."""
    if name in seen or name not in fa.module.funcs:
        return frozenset()
    seen.add(name)
    for x in fa.module.funcs[name].body.walk():
        if x.name in ("stablehlo.iota", "stablehlo.partition_id", "stablehlo.replica_id"):
            return frozenset({ANY})
        if x.name == "func.call" and _made_inside(fa, x.attrs.get("callee", ""), seen):
            return frozenset({ANY})
    return frozenset()


def _arg_source(v: str, entry: dict[str, int]) -> frozenset[str]:
    return frozenset({f"input {entry[v]}"}) if v in entry else frozenset({ANY})


__all__ = ["ANY", "CALLEES", "Meets", "Reach", "apart"]
