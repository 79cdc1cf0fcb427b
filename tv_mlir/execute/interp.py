"""Runs a function of the plain-data IR with an element algebra."""
from __future__ import annotations

import hashlib
from collections import ChainMap
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from tv_mlir.algebra import Algebra, NumericAlgebra
from tv_mlir.algebra.base import contents_key
from tv_mlir.errors import ShapeError, TvError, Unsupported
from tv_mlir.execute import element_memo
from tv_mlir.execute.element_memo import ElementMemo
from tv_mlir.ir import Block, Func, Module, Op, TensorType
from tv_mlir.options import DEFAULT_MAX_UNROLL, MAX_CALL_DEPTH, MAX_NESTING
from tv_mlir.semantics import TABLE, OpContext, fixed_width
from tv_mlir.semantics.common import Budget
from tv_mlir.semantics.ops import SHARD_CALLS, SPMD_OPS
from tv_mlir.semantics.reduction import simple_reducer

# Sees every top-level op and its results; may return replacement results.
Observer = Callable[[Op, list[np.ndarray]], "list[np.ndarray] | None"]
# Sees the results of an op below the top level (a loop's body at every trip, a call's, a
# reduction's body); it cannot change them. For numeric witnesses that need every value a
# run computes, not only the ones a divergence report names (shrink/same_witness.py).
InnerObserver = Callable[[Op, list[np.ndarray]], None]


@dataclass
class SharedValues:
    """Structural sharing across the two programs: an op applied to the very same argument
    arrays with the same attributes computes the same value, so the second program reuses
    the first one's result instead of building (and later proving) it again."""

    table: dict[tuple, list[np.ndarray]] = field(default_factory=dict)
    hits: int = 0
    _keep: list = field(default_factory=list)
    # The same, element by element, for pure elementwise ops (a shard's block of the
    # reference's array): `element_memo`.
    elements: ElementMemo = field(default_factory=ElementMemo)

    @staticmethod
    def key(op: Op, args: list[np.ndarray], types: tuple[TensorType, ...]) -> tuple | None:
        """`types`: the operands' types. One array can be read at two types: a float
        convert returns its operand's array (the reals do not round), so the bits of an f16
        and of its bf16 convert were one key on one array and took one value: an `equivalent`
        where XLA differs (red team 11, with the sweep off, whose cuts make fresh arrays)."""
        if op.regions and not _commutative_body(op):
            return None
        # The device ids, collectives and shard calls read the module's device count, which
        # the key does not hold: a reference's partition_id on one device (one part) was
        # taken by a program on two, whose next op read its missing second part (an
        # IndexError traceback; red team 11, docs/stages.md). Their results are per device.
        if op.name in SPMD_OPS or op.attrs.get("call_target_name") in SHARD_CALLS:
            return None
        attrs = tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items()))
        # The reducer is the op: a reduce-add and a reduce-max over the same arrays were one
        # key, and the other program took the reference's sum for its max (`equivalent`).
        bodies = tuple(simple_reducer(r) for r in op.regions)
        return (op.name, tuple(id(a) for a in args), types, attrs, op.result_types, bodies)

    def remember(self, key: tuple, args: list[np.ndarray], results: list[np.ndarray]) -> None:
        self._keep.append(args)  # the ids in the key must not be reused
        self.table[key] = results


def _commutative_body(op: Op) -> bool:
    return op.name == "stablehlo.reduce" and len(op.regions) == 1 and simple_reducer(op.regions[0]) is not None


def _attr_key(value: Any) -> Any:
    """An attribute value as a hashable key that equals another's only when the values are
    equal. Not repr: numpy abbreviates arrays past 1,000 elements, so two constants that
    differ only in the middle had the same key and the second program took the first's."""
    if isinstance(value, np.ndarray):
        data = value.astype(str) if value.dtype == object else np.ascontiguousarray(value)
        return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(data.tobytes()).hexdigest())
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_attr_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _attr_key(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value


@dataclass
class Interpreter:
    """Values are numpy arrays of algebra elements; in SPMD programs, values inside manual
    regions are `spmd.Local` (one array per device) and ops on them run in lockstep."""

    module: Module
    alg: Algebra
    max_unroll: int = DEFAULT_MAX_UNROLL  # loop iterations in the whole run (Budget.max_iterations)
    observer: Observer | None = None  # sees every top-level op's results (for divergence reports)
    inner_observer: InnerObserver | None = None  # sees every op's results below the top level
    shared: SharedValues | None = None
    device: int | None = None  # set in a per-device view of an SPMD run
    # Obligations found while running: replicas that must agree (spmd.ReplicaCheck).
    replica_checks: list = field(default_factory=list)
    # The budget of the run this interpreter belongs to (a per-device view shares its
    # run's); None: a fresh one from max_unroll and the defaults.
    budget: Budget | None = None
    _env: ChainMap = field(default_factory=ChainMap)
    _types: ChainMap = field(default_factory=ChainMap)
    # Names of the values computed from literals alone (no input, no block argument), for
    # the numeric algebra's rules that must do what the symbolic ones do at constant
    # elements (`OpContext.fixed_operands`).
    _fixed: ChainMap = field(default_factory=ChainMap)
    _depth: int = 0
    _batched: int = 0
    _views: dict[int, Interpreter] = field(default_factory=dict)
    _budget: Budget = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._budget = self.budget or Budget(max_iterations=self.max_unroll, calls=[self.module.entry])

    @property
    def run_budget(self) -> Budget:
        """The budget this run spends (shared with its per-device views)."""
        return self._budget

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        try:
            if self.module.per_device:
                from tv_mlir.execute import spmd

                with np.errstate(all="ignore"):
                    return spmd.run_per_device_entry(self, self.module, inputs)
            from tv_mlir.execute.spmd import finish_global

            return finish_global(self.run_func(self.module.main, inputs), self.module.main.loc)
        finally:
            # A view reads this run through a projection of it: a cycle that would keep every
            # value of the run (millions of terms in a proof) until a full collection.
            self._views.clear()

    @property
    def num_devices(self) -> int:
        return self.module.num_devices

    def view(self, device: int) -> Interpreter:
        """This run as seen by one device: SPMD values read as that device's part. Used to
        run an op (and its nested regions) on one device at a time."""
        v = self._views.get(device)
        if v is None:
            v = Interpreter(self.module, self.alg, self.max_unroll, shared=self.shared, device=device,
                            budget=self._budget)
            v._env = ChainMap(_DeviceProjection(self, device))
            v._types = ChainMap(_TypesProjection(self))
            self._views[device] = v
        v._depth = self._depth + 1  # below the top level: never observed or shared
        v._batched = self._batched
        return v

    def run_func(self, func: Func, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        # IEEE overflow, 0/0 and friends are values here, not warnings.
        with np.errstate(all="ignore"):
            return self.run_block(func.body, inputs)

    def value(self, name: str) -> Any:
        """The value bound to `name` in the current scope; KeyError when there is none."""
        return self._env[name]

    def func(self, name: str, loc: str) -> Func:
        if name not in self.module.funcs:
            raise Unsupported(f"call to unknown function @{name}", loc, "func.call")
        return self.module.funcs[name]

    def run_call(self, op: Op, callee: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The callee's body on `args` (calls that the pipeline did not inline). A call to a
        function that is running already never ends: `unknown`, not a RecursionError."""
        func = self.func(callee, op.loc)
        calls = self._budget.calls
        if callee in calls:
            chain = " -> ".join(f"@{f}" for f in (*calls[calls.index(callee):], callee))
            raise Unsupported(f"recursive call to @{callee} ({chain})", op.loc, "budget.recursion")
        if len(calls) > MAX_CALL_DEPTH:
            raise Unsupported(f"calls nested deeper than {MAX_CALL_DEPTH} (the call budget) at @{callee}",
                              op.loc, "budget.calls")
        calls.append(callee)
        try:
            return self.run_block(func.body, args)
        finally:
            calls.pop()

    def run_block(self, block: Block, args: Sequence[np.ndarray], batched: bool = False,
                  top_level: bool = False) -> list[np.ndarray]:
        """batched: the block is a scalar body (reducer, comparator) run on arrays of
        independent elements at once, so result shapes are those of the arguments.
        top_level: the block's ops count as top-level ones (a manual computation's body)."""
        budget = self._budget
        if budget.blocks > MAX_NESTING:
            # Regions and calls that were not inlined (`--pipeline none`) nest together here,
            # six Python frames a level: past the budget, `unknown` rather than RecursionError.
            raise Unsupported(f"regions and calls nested deeper than {MAX_NESTING} (the nesting budget)",
                              block.ops[0].loc if block.ops else "", "budget.nesting")
        self._env = self._env.new_child()
        self._types = self._types.new_child()
        self._fixed = self._fixed.new_child()
        depth = 0 if top_level else 1
        self._depth += depth
        self._batched += batched
        budget.blocks += 1
        try:
            for name, t, value in zip(block.args, block.arg_types, args):
                self._env[name] = value
                self._types[name] = t
            for op in block.ops:
                self._step(op)
            return [self._env[r] for r in block.returns]
        finally:
            budget.blocks -= 1
            self._depth -= depth
            self._batched -= batched
            self._env = self._env.parents
            self._types = self._types.parents
            self._fixed = self._fixed.parents

    def _step(self, op: Op) -> None:
        from tv_mlir.execute import spmd

        try:
            args = [self._env[o] for o in op.operands]
            types = tuple(self._types[o] for o in op.operands)
        except KeyError as exc:
            raise ShapeError(f"{op.name} uses an undefined value {exc.args[0]}", op.loc) from None
        self._budget.executed(op)
        shared = self.shared if self._depth == 1 else None
        key = SharedValues.key(op, args, types) if shared is not None else None
        # Ops with regions are left out: a body may read values from outside it.
        fixed = not op.regions and all(o in self._fixed for o in op.operands)
        if shared is not None and key is not None and key in shared.table:
            shared.hits += 1
            for name, t, value in zip(op.results, op.result_types, shared.table[key]):
                self._env[name] = value
                self._types[name] = t
                if fixed:
                    self._fixed[name] = True
            return
        if spmd.involved(self, op, args):
            results = spmd.step(self, op, args, types)
        else:
            results = self.apply(op, args, types, fixed)
        if fixed_width.reduces(op):
            results = self._fixed_width(op, results)
        if self.observer is not None and self._depth == 1:
            results = self._observe(op, results)
        if shared is not None and key is not None:
            shared.remember(key, args, results)
        self._budget.computed(op, sum(_elements(r) for r in results))
        for name, t, value in zip(op.results, op.result_types, results):
            self._env[name] = value
            self._types[name] = t
            if fixed:
                self._fixed[name] = True
        if self.inner_observer is not None and self._depth > 1:
            self.inner_observer(op, results)

    def apply(self, op: Op, args: list[np.ndarray], types: tuple[TensorType, ...],
              fixed: bool = False) -> list[np.ndarray]:
        """One op's semantics on plain arrays; `fixed`: its operands are computed from
        literals alone."""
        rule = TABLE.get(op.name)
        if rule is None:
            raise Unsupported(f"op {op.name} has no semantics", op.loc, op.name)
        ctx = OpContext(self.alg, types, self, self._budget, fixed)
        shared = self.shared
        try:
            if shared is not None and element_memo.MEMO and op.name in element_memo.MEMO_OPS and not self._batched:
                sig = (op.name, tuple(sorted((k, _attr_key(v)) for k, v in op.attrs.items())),
                       tuple(t.dtype for t in types), tuple(t.dtype for t in op.result_types), fixed)
                results = shared.elements.apply(self.alg, op, sig, args,
                                                lambda: [self.alg.canonical(r) for r in rule(ctx, op, args)])
            else:
                results = [self.alg.canonical(r) for r in rule(ctx, op, args)]
        except TvError:
            raise
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise ShapeError(f"{op.name}: {' '.join(str(exc).split())}", op.loc) from None
        for value, t in zip(results, op.result_types):
            if value.shape != t.shape and not self._batched:
                raise ShapeError(f"{op.name} produced shape {value.shape}, its type says {t}", op.loc)
        return results

    def _fixed_width(self, op: Op, results: list[Any]) -> list[Any]:
        from tv_mlir.execute.spmd import Local

        if not any(isinstance(r, Local) for r in results):
            return fixed_width.reduce_results(self.alg, op, results)
        n = self.num_devices
        parts = [r.parts if isinstance(r, Local) else (r,) * n for r in results]
        per_device = [fixed_width.reduce_results(self.alg, op, [p[d] for p in parts]) for d in range(n)]
        return [Local(tuple(per_device[d][k] for d in range(n))) if isinstance(r, Local) else per_device[0][k]
                for k, r in enumerate(results)]

    def _observe(self, op: Op, results: list[Any]) -> list[Any]:
        from tv_mlir.execute.spmd import Local

        observer = self.observer
        assert observer is not None  # _step observes only when there is an observer
        if not any(isinstance(r, Local) for r in results):
            return observer(op, results) or results
        # Per device, under device-qualified value names (the numeric traces use the same).
        n = self.num_devices
        parts = [r.parts if isinstance(r, Local) else (r,) * n for r in results]
        new_parts: list[list[np.ndarray]] = [[] for _ in results]
        # Devices whose results are the same terms (an all-reduced sum on every device of
        # its group, a replicated computation) are observed once: the observer's merges
        # hold for the same terms on any device.
        seen: dict[Any, list[np.ndarray]] = {}
        memo: dict[int, Any] = {}
        keyless = no_content_keys(self.alg)
        for d in range(n):
            mine = [p[d] for p in parts]
            key = None if keyless else contents_key(self.alg, mine, memo)
            got = seen.get(key) if key is not None else None
            if got is None:
                got = observer(_on_device(op, d), mine) or mine
                if key is not None:
                    seen[key] = got
            for k, g in enumerate(got):
                new_parts[k].append(g)
        return [Local(tuple(p)) for p in new_parts]


def no_content_keys(alg: Algebra) -> bool:
    """Whether `alg` gives no array a content key (the numeric algebra: its runs share
    nothing between devices), so that keying each device's arrays can be skipped: 160 k
    calls that all returned None in the 2-layer flax step's numeric runs."""
    return getattr(type(alg), "content_key", None) is NumericAlgebra.content_key


def _on_device(op: Op, device: int) -> Op:
    """`op` with its results named for one device (`name@device`), what `dataclasses.replace`
    would build: a shallow copy whose other fields are the op's own. Built directly because
    an observed per-device op makes one per device, every run: 85 k `replace` calls were a
    fifth of the 2-layer flax step's numeric runs (docs/stages.md, round 2)."""
    copy = object.__new__(Op)
    copy.__dict__.update(op.__dict__)
    copy.results = _device_names(op.results, device)
    return copy


@lru_cache(maxsize=1 << 16)
def _device_names(names: tuple[str, ...], device: int) -> tuple[str, ...]:
    return tuple(f"{name}@{device}" for name in names)


def _elements(value: Any) -> int:
    """Tensor elements of a result: every device's part of a per-device value."""
    parts = getattr(value, "parts", None)
    if parts is not None:
        return sum(int(np.size(p)) for p in parts)
    return int(np.size(value))


class _ReadOnly(MutableMapping[str, Any]):
    """The bottom map of a view's ChainMap: run_block pushes a child before any value is
    bound, so nothing is ever written here."""

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError(f"{type(self).__name__} is read-only")

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"{type(self).__name__} is read-only")


class _DeviceProjection(_ReadOnly):
    """The live environment of an SPMD run, with per-device values read as one device's."""

    def __init__(self, owner: Interpreter, device: int) -> None:
        self.owner, self.device = owner, device

    def __getitem__(self, key: str) -> Any:
        from tv_mlir.execute.spmd import Local

        v = self.owner._env[key]
        return v.parts[self.device] if isinstance(v, Local) else v

    def __iter__(self) -> Iterator[str]:
        return iter(self.owner._env)

    def __len__(self) -> int:
        return len(self.owner._env)


class _TypesProjection(_ReadOnly):
    def __init__(self, owner: Interpreter) -> None:
        self.owner = owner

    def __getitem__(self, key: str) -> Any:
        return self.owner._types[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.owner._types)

    def __len__(self) -> int:
        return len(self.owner._types)
