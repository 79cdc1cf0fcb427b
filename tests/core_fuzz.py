"""A differential fuzzer for the own symbolic core's folding rules (issue 11: verdicts must
stay right). It draws small StableHLO programs (1-D tensors of 2-8 elements), mutates each
one (an op changed, a constant nudged, a value narrowed through a smaller integer type,
select branches swapped, a compare direction flipped), verifies the pair with `--assume`
ranges on its integer inputs, and holds the verdict to an oracle:

- XLA's numbers on the assumed domain: every pair of input values when the ranges are
  small (each run carries n pairs, one per element), then random runs. A pair XLA tells
  apart must not be `equivalent`.
- for programs with float values, the z3 core's verdict as well (`core="z3"`, which has
  none of the own core's comparison-by-bounds, interval, select-class or sign rules).

A verdict of `equivalent` that the oracle contradicts is a soundness bug. `not-equivalent`
on a pair XLA never tells apart (over many runs) is noted too, as a lower-priority finding.

Fast mode is tests/test_core_fuzz.py (fixed seeds); the long mode is
`PYTHONPATH=. .venv/bin/python tests/core_fuzz.py --seeds 0:500`."""
from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tv_mlir.errors import Unsupported
from tv_mlir.execute.xla import XlaRunError

# ui64 only as an input with an assumed range: the own semantics model ui64 values shown
# below 2**63 (a count), and leave the rest unsupported.
INT_TYPES = ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32", "ui64")
CONVERT_TYPES = ("i8", "i16", "i32", "i64", "ui8", "ui16", "ui32")
NP = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "ui8": np.uint8,
      "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64, "f32": np.float32, "i1": np.bool_}
BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "ui8": 8, "ui16": 16, "ui32": 32, "ui64": 64}
ARITH = ("add", "subtract", "multiply", "maximum", "minimum")
INT_ONLY = ("and", "or", "xor", "remainder", "divide", "shift_left", "shift_right_arithmetic",
            "shift_right_logical")
DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def _range(t: str) -> tuple[int, int]:
    """The closed value range of an integer type."""
    b = BITS[t]
    return (0, 2 ** b - 1) if t.startswith("u") else (-(2 ** (b - 1)), 2 ** (b - 1) - 1)


@dataclass(frozen=True)
class Node:
    """One SSA value: `op` over the values `args` (indices of earlier nodes)."""
    op: str
    t: str                      # element type
    args: tuple[int, ...] = ()
    attr: Any = None            # constant values, compare direction, slice index


@dataclass
class Prog:
    n: int
    nodes: list[Node]
    out: int
    n_args: int
    arg_types: tuple[str, ...]

    def text(self, name: str = "m") -> str:
        n = self.n
        ty = lambda t, k=n: f"tensor<{k}x{t}>"  # noqa: E731
        params = ", ".join(f"%arg{i}: {ty(t)}" for i, t in enumerate(self.arg_types))
        lines: list[str] = []
        for i, nd in enumerate(self.nodes):
            a = [self.ref(j) for j in nd.args]
            r = f"%v{i}"
            T = ty(nd.t)
            if nd.op == "arg":
                continue
            if nd.op == "const":
                vals = ", ".join(_lit(v, nd.t) for v in nd.attr)
                lines.append(f"{r} = stablehlo.constant dense<[{vals}]> : {T}")
            elif nd.op == "iota":
                lines.append(f"{r} = stablehlo.iota dim = 0 : {T}")
            elif nd.op in ARITH or nd.op in INT_ONLY:
                lines.append(f"{r} = stablehlo.{nd.op} {a[0]}, {a[1]} : {T}")
            elif nd.op in ("abs", "negate"):
                lines.append(f"{r} = stablehlo.{nd.op} {a[0]} : {T}")
            elif nd.op == "compare":
                src = ty(self.nodes[nd.args[0]].t)
                lines.append(f"{r} = stablehlo.compare {nd.attr}, {a[0]}, {a[1]} : ({src}, {src}) -> {T}")
            elif nd.op == "select":
                lines.append(f"{r} = stablehlo.select {a[0]}, {a[1]}, {a[2]} : {ty('i1')}, {T}")
            elif nd.op == "clamp":
                lines.append(f"{r} = stablehlo.clamp {a[0]}, {a[1]}, {a[2]} : {T}")
            elif nd.op == "convert":
                src = ty(self.nodes[nd.args[0]].t)
                lines.append(f"{r} = stablehlo.convert {a[0]} : ({src}) -> {T}")
            elif nd.op == "dslice":
                # x ++ x, sliced at an index read from one element of an integer value
                k = nd.attr
                it = self.nodes[nd.args[1]].t
                lines += [
                    f"{r}c = stablehlo.concatenate {a[0]}, {a[0]}, dim = 0 : ({T}, {T}) -> {ty(nd.t, 2 * n)}",
                    f'{r}s = "stablehlo.slice"({a[1]}) {{start_indices = array<i64: {k}>, limit_indices = array<i64: {k + 1}>, '
                    f"strides = array<i64: 1>}} : ({ty(it)}) -> {ty(it, 1)}",
                    f"{r}i = stablehlo.reshape {r}s : ({ty(it, 1)}) -> tensor<{it}>",
                    f"{r} = stablehlo.dynamic_slice {r}c, {r}i, sizes = [{n}] : ({ty(nd.t, 2 * n)}, tensor<{it}>) -> {T}",
                ]
            elif nd.op == "gather":
                it = self.nodes[nd.args[1]].t
                lines += [
                    f"{r}i = stablehlo.reshape {a[1]} : ({ty(it)}) -> tensor<{n}x1x{it}>",
                    f'{r} = "stablehlo.gather"({a[0]}, {r}i) {{dimension_numbers = #stablehlo.gather<'
                    f"collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, "
                    f"slice_sizes = array<i64: 1>}} : ({T}, tensor<{n}x1x{it}>) -> {T}",
                ]
            else:
                raise ValueError(nd.op)
        body = "\n    ".join(x for x in lines if x)
        ret = self.ref(self.out)
        return (f"module @{name} {{\n  func.func public @main({params}) -> {ty(self.nodes[self.out].t)} {{\n"
                f"    {body}\n    return {ret} : {ty(self.nodes[self.out].t)}\n  }}\n}}\n")

    def ref(self, i: int) -> str:
        return f"%arg{self.nodes[i].attr}" if self.nodes[i].op == "arg" else f"%v{i}"


def _lit(v: Any, t: str) -> str:
    if t == "f32":
        return f"{float(v):.9e}"
    if t == "i1":
        return "true" if v else "false"
    return str(int(v))


@dataclass
class Gen:
    rng: random.Random
    floats: bool
    hot: list[int] = field(default_factory=list)
    focus: bool = False
    nodes: list[Node] = field(default_factory=list)

    def pick(self, t: str | None = None, kinds: tuple[str, ...] = ()) -> int | None:
        ok = [i for i, nd in enumerate(self.nodes)
              if (t is None or nd.t == t) and (not kinds or nd.t in kinds)]
        if not ok:
            return None
        used = {j for nd in self.nodes for j in nd.args}
        fresh = [i for i in ok if i not in used]
        if fresh and self.rng.random() < 0.6:  # values nothing reads yet: bigger live programs
            return self.rng.choice(fresh)
        # favour recent values: deeper programs
        return ok[-1 - min(int(self.rng.expovariate(0.6)), len(ok) - 1)]

    def add(self, nd: Node) -> int:
        self.nodes.append(nd)
        return len(self.nodes) - 1

    def const(self, t: str, n: int) -> int:
        r = self.rng
        if t == "f32":
            # no huge constants: the proof's floats are exact reals, and f32's rounding of
            # 1e30 + x is no bug of the rules under test
            pool = [0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 100.0, 0.25]
        elif t == "i1":
            pool = [True, False]
        else:
            lo, hi = _range(t)
            pool = [lo, hi, 0, 1, -1 if lo < 0 else 2, lo + 1, hi - 1, 7, 100, 127, 128, 255, 256]
            pool = [v for v in pool + self.hot * 2 if lo <= v <= hi]
        if r.random() < 0.5:
            vals = [r.choice(pool)] * n
        else:
            vals = [r.choice(pool) if r.random() < 0.6 else
                    (r.randint(-20, 20) if t not in ("f32", "i1") else r.choice(pool)) for _ in range(n)]
            if t not in ("f32", "i1"):
                lo, hi = _range(t)
                vals = [min(max(v, lo), hi) for v in vals]
        return self.add(Node("const", t, (), tuple(vals)))

    def step(self, n: int) -> None:
        r = self.rng
        ints = [nd.t for nd in self.nodes if nd.t in INT_TYPES]
        t = r.choice(ints + (["f32"] * 2 if self.floats and any(nd.t == "f32" for nd in self.nodes) else []))
        choice = r.random()
        if self.focus and choice < 0.5:
            # guards: sums and differences of the inputs, compared and selected on (the
            # shapes comparison-by-bounds, canonical guards and wraps fold)
            choice = r.choice((0.1, 0.35, 0.35, 0.35, 0.6))
        a = self.pick(t)
        if choice < 0.30:
            ops = ARITH + (("divide",) if t == "f32" else INT_ONLY)
            op = r.choice(ops)
            b = self.pick(t) if r.random() < 0.7 else self.const(t, n)
            if op in ("shift_left", "shift_right_arithmetic", "shift_right_logical") and r.random() < 0.6:
                b = self.add(Node("const", t, (), tuple(r.choice([0, 1, 2, 3, BITS[t] - 1, BITS[t]])
                                                         for _ in range(n))))
            self.add(Node(op, t, (a, b)))
        elif choice < 0.45:
            others = [i for i, nd in enumerate(self.nodes) if nd.t == t and i != a]
            b = r.choice(others) if others and r.random() < 0.6 else self.const(t, n)
            p = self.add(Node("compare", "i1", (a, b), r.choice(DIRECTIONS)))
            c = self.pick(t) if r.random() < 0.7 else self.const(t, n)
            d = self.pick(t) if r.random() < 0.7 else self.const(t, n)
            self.add(Node("select", t, (p, c, d)))
        elif choice < 0.55:
            # constant bounds, lo <= hi: XLA's simplifier takes lo <= hi for granted
            # (max(lo, clamp(lo, x, hi)) is folded to the clamp, wrong where lo > hi)
            lo, hi = self.const(t, n), self.const(t, n)
            x, y = self.nodes[lo], self.nodes[hi]
            pairs = [sorted(p) for p in zip(x.attr, y.attr, strict=True)]
            self.nodes[lo] = replace(x, attr=tuple(p[0] for p in pairs))
            self.nodes[hi] = replace(y, attr=tuple(p[1] for p in pairs))
            self.add(Node("clamp", t, (lo, a, hi)))
        elif choice < 0.72:
            to = r.choice(CONVERT_TYPES + (("f32",) if self.floats else ()))
            if to != t:
                self.add(Node("convert", to, (a,)))
        elif choice < 0.80:
            self.add(Node(r.choice(("abs", "negate")) if not t.startswith("u") else "negate", t, (a,)))
        elif choice < 0.86:
            self.add(Node("iota", r.choice(INT_TYPES[:3] + ("ui32",)), ()))
        elif choice < 0.93:
            idx = self.pick(kinds=INT_TYPES)
            self.add(Node("dslice", t, (a, idx), r.randrange(n)))
        else:
            idx = self.pick(kinds=INT_TYPES)
            self.add(Node("gather", t, (a, idx)))


def generate(seed: int, floats: bool | None = None) -> tuple[Prog, dict[str, tuple[int, int]]]:
    """A random program and random half-open assume ranges for its integer inputs. Its
    constants favour values at and next to the ranges' ends (and their sums and products),
    where a rule that folds a comparison by bounds is off by one if it is wrong."""
    r = random.Random(seed)
    if floats is None:
        floats = r.random() < 0.3
    n = r.randint(2, 8)
    n_args = r.randint(1, 2)
    arg_types = tuple(r.choice(("i32", "i32", "i16", "i8", "ui8", "ui32", "i64", "ui64")) for _ in range(n_args))
    if n_args == 2 and r.random() < 0.6:
        arg_types = (arg_types[0], arg_types[0])  # x op y of two bounded inputs
    assume = {}
    hot: list[int] = []
    for k, t in enumerate(arg_types):
        if r.random() < 0.85 or t == "ui64":
            lo_t, hi_t = _range(t)
            width = r.choice((2, 3, 5, 8, 12, 40, 300))
            lo = r.choice((0, 0, -4, -width // 2, 100, 120, 250, -130, 2 ** 15 - 10, 2 ** 31 - 20, 2 ** 32 - 10,
                           2 ** 63 - 20))
            lo = min(max(lo, lo_t), hi_t)
            hi = min(lo + width, hi_t + 1)
            assume[f"arg{k}"] = (lo, hi)
            hot += [lo - 1, lo, lo + 1, hi - 2, hi - 1, hi, -lo, 1 - hi, 2 * (hi - 1), (hi - 1) * (hi - 1)]
    if len(assume) == 2:
        (a0, b0), (a1, b1) = assume.values()
        hot += [a0 + a1, b0 + b1 - 2, b0 - 1 - a1, a0 - b1 + 1, (b0 - 1) * (b1 - 1)]
    g = Gen(r, floats, hot=hot, focus=r.random() < 0.5)
    for k, t in enumerate(arg_types):
        g.add(Node("arg", t, (), k))
    if floats and r.random() < 0.7:
        g.add(Node("convert", "f32", (g.pick(),)))
    for _ in range(r.randint(2, 9)):
        g.step(n)
    out = len(g.nodes) - 1
    if g.nodes[out].t == "i1":
        out -= 1
    return Prog(n, g.nodes, out, n_args, arg_types), assume


def _live(p: Prog) -> set[int]:
    seen: set[int] = set()
    todo = [p.out]
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo.extend(p.nodes[i].args)
    return seen


def mutate(p: Prog, seed: int) -> Prog | None:
    """One small change to a live node of `p`."""
    r = random.Random(seed)
    live = sorted(_live(p))
    for _ in range(20):
        i = r.choice(live)
        nd = p.nodes[i]
        new = None
        if nd.op in ARITH + INT_ONLY + ("divide",):
            ops = [o for o in (ARITH + (INT_ONLY if nd.t != "f32" else ("divide",))) if o != nd.op]
            kind = r.random()
            if kind < 0.5:
                new = [replace(nd, op=r.choice(ops))]
            elif nd.t in INT_TYPES:
                narrow = [t for t in CONVERT_TYPES if BITS[t] < BITS[nd.t] or (BITS[t] == BITS[nd.t] and t != nd.t)]
                if narrow:
                    return _narrow(p, i, r.choice(narrow))
            else:
                new = [replace(nd, args=nd.args[::-1])]
        elif nd.op == "compare":
            new = [replace(nd, attr=r.choice([d for d in DIRECTIONS if d != nd.attr]))]
        elif nd.op == "select":
            new = [replace(nd, args=(nd.args[0], nd.args[2], nd.args[1]))]
        elif nd.op == "const" and nd.t != "i1":
            vals = list(nd.attr)
            k = r.randrange(len(vals))
            if nd.t == "f32":
                vals[k] = vals[k] + r.choice((1.0, -1.0, 0.5))
            else:
                lo, hi = _range(nd.t)
                vals[k] = min(max(vals[k] + r.choice((1, -1, 2, -2)), lo), hi)
                if r.random() < 0.3:
                    vals = [vals[k]] * len(vals)
            new = [replace(nd, attr=tuple(vals))]
        elif nd.op == "convert" and nd.t in INT_TYPES:
            narrow = [t for t in CONVERT_TYPES if t not in (nd.t, p.nodes[nd.args[0]].t)]
            new = [replace(nd, t=r.choice(narrow))]
            # the users still expect the old type: convert back
            q = Prog(p.n, p.nodes[:i] + new + [Node("convert", nd.t, (i,))], 0, p.n_args, p.arg_types)
            return _splice(p, i, q.nodes[i:])
        elif nd.op in ("clamp", "dslice", "gather") and nd.t in INT_TYPES:
            return _narrow(p, i, r.choice([t for t in CONVERT_TYPES if t != nd.t]))
        elif nd.op in ("abs", "negate") and not nd.t.startswith("u"):
            new = [replace(nd, op="negate" if nd.op == "abs" else "abs")]
        if new is not None and new[0] != nd:
            nodes = list(p.nodes)
            nodes[i] = new[0]
            return Prog(p.n, nodes, p.out, p.n_args, p.arg_types)
    return None


def _splice(p: Prog, i: int, repl: list[Node]) -> Prog:
    """Replace node i with `repl` (whose last node stands for i); later references shift."""
    extra = len(repl) - 1

    def move(j: int) -> int:
        return j if j < i else j + extra

    nodes = p.nodes[:i] + repl + [replace(nd, args=tuple(move(j) for j in nd.args)) for nd in p.nodes[i + 1:]]
    return Prog(p.n, nodes, move(p.out), p.n_args, p.arg_types)


def _narrow(p: Prog, i: int, t: str) -> Prog:
    """Value i goes through type t and back (a value narrowed by a mutation)."""
    nd = p.nodes[i]
    return _splice(p, i, [nd, Node("convert", t, (i,)), Node("convert", nd.t, (i + 1,))])


# --- the oracle ---------------------------------------------------------------------------

def sample_inputs(p: Prog, assume: dict[str, tuple[int, int]], seed: int, runs: int = 40) -> list[list[np.ndarray]]:
    """Input sets on the assumed domain: all value pairs (spread over elements) when small,
    then random ones and each range's ends."""
    r = np.random.default_rng(seed)
    rr = random.Random(seed)
    doms = []
    for k, t in enumerate(p.arg_types):
        lo, hi = assume.get(f"arg{k}", (None, None))
        tlo, thi = _range(t)
        if lo is None:
            edges = [tlo, thi, 0, 1, tlo + 1, thi - 1]
            if not t.startswith("u"):
                edges.append(-1)
            doms.append(("free", tlo, thi, sorted(set(edges))))
        else:
            some = [v for v in (lo, lo + 1, hi - 2, hi - 1, 0, 1, -1) if lo <= v < hi]
            doms.append(("range", lo, hi - 1, list(range(lo, hi)) if hi - lo <= 64 else sorted(set(some))))
    combos = list(itertools.product(*[d[3] for d in doms]))
    r.shuffle(combos)
    sets: list[list[np.ndarray]] = []
    if len(combos) <= 64 * p.n:
        for s in range(0, len(combos), p.n):
            chunk = combos[s:s + p.n]
            chunk += [combos[int(r.integers(len(combos)))] for _ in range(p.n - len(chunk))]
            sets.append([np.array([c[k] for c in chunk], dtype=NP[t]) for k, t in enumerate(p.arg_types)])
    for _ in range(runs):
        one = []
        for (kind, lo, hi, edges), t in zip(doms, p.arg_types, strict=True):
            if kind == "free" and r.random() < 0.5:
                v = r.choice(np.array(edges, dtype=object), p.n)
            else:
                v = [rr.randint(lo, hi) for _ in range(p.n)]  # Python ints: ui64's range too
                if kind == "range" and r.random() < 0.3:
                    v = [rr.choice([lo, hi]) for _ in range(p.n)]
            one.append(np.array([int(x) for x in v], dtype=NP[t]))
        sets.append(one)
    return sets


def _differ(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        na, nb = np.isnan(a64), np.isnan(b64)
        if (na != nb).any():
            return True
        fin = np.isfinite(a64) & np.isfinite(b64)
        if ((~fin & ~na) & (a64 != b64)).any():
            return True
        with np.errstate(invalid="ignore", over="ignore"):
            return bool((np.abs(a64 - b64)[fin] > 1e-5 * (1 + np.abs(a64[fin]))).any())  # f32: ~6e-8 an op
    return bool((a != b).any())


@dataclass
class Outcome:
    seed: int
    verdict: str
    z3: str | None
    xla_differs: bool | None
    witness: Any = None
    note: str = ""
    symbolic: Any = None  # (program, input set, element, own terms' value, XLA's value)

    @property
    def unsound(self) -> bool:
        return self.verdict == "equivalent" and (self.xla_differs is True or self.z3 == "not-equivalent")


def xla_witness(xla: Any, a: str, b: str, sets: list[list[np.ndarray]]) -> Any:
    """The first input set on which XLA's outputs of a and b differ, or None."""
    for s in sets:
        with np.errstate(all="ignore"):
            ra, rb = xla.run(a, s)[0], xla.run(b, s)[0]
        if _differ(np.asarray(ra), np.asarray(rb)):
            return s, ra, rb
    return None


def check(seed: int, xla: Any, with_z3: bool | None = None, timeout: float = 5.0,
          floats: bool | None = None) -> Outcome | None:
    """Generate, mutate, verify and judge one pair; None when the mutation is a no-op."""
    from tv_mlir import verify

    p, assume = generate(seed, floats)
    q = mutate(p, seed + 1_000_003)
    if q is None:
        return None
    a, b = p.text(), q.text()
    if a == b:
        return None
    has_float = any(nd.t == "f32" for nd in p.nodes + q.nodes)
    v = verify(a, b, cache=False, assume=assume, timeout_s=timeout)
    sets = sample_inputs(p, assume, seed)
    c = v.counterexample
    outside = False
    if c is not None and all(f"arg{k}" in c.inputs for k in range(p.n_args)):
        cx = [np.asarray(c.inputs[f"arg{k}"]).astype(NP[t]) for k, t in enumerate(p.arg_types)]
        outside = any(f"arg{k}" in assume and not ((assume[f"arg{k}"][0] <= x) & (x < assume[f"arg{k}"][1])).all()
                      for k, x in enumerate(cx))
        if not outside:
            sets.insert(0, cx)
    w = xla_witness(xla, a, b, sets)
    z = None
    if with_z3 or (with_z3 is None and has_float and v.verdict == "equivalent"):
        z = verify(a, b, cache=False, assume=assume, core="z3", timeout_s=timeout).verdict
    sym = None
    for which, text in (("ref", a), ("mutant", b)):
        try:
            m = symbolic_mismatch(text, assume, sets[:24])
        except Unsupported:  # the verdict says unknown for these
            m = None
        if m is not None:
            sym = (which, *m)
            break
    note = ("WITNESS OUTSIDE --assume: " if outside else "") + (v.reason or "")
    return Outcome(seed, v.verdict, z, w is not None, w, note, sym)


def symbolic_mismatch(text: str, assume: dict[str, tuple[int, int]], sets: list[list[np.ndarray]],
                      xla: Any = None) -> Any:
    """Run `text` once on the own core's terms, its integer inputs bounded by `assume` as the
    driver bounds them, and evaluate the output terms exactly (term_eval) at every input set:
    each rewrite the run applied, folding by bounds included, is held to the numeric
    interpreter's numbers (the semantics the rules must keep; the op suite holds those to
    XLA), and with `xla` to XLA's as well. The first (input set, element, own value,
    reference value, which reference) where they differ, or None."""
    from tv_mlir.algebra import Kind, NumericAlgebra
    from tv_mlir.algebra.fast import FF, FastAlgebra
    from tv_mlir.algebra.term import Term
    from tv_mlir.algebra.term_eval import EvalError, evaluate
    from tv_mlir.execute.interp import Interpreter
    from tv_mlir.frontend.classify import classify
    from tv_mlir.frontend.read import load_module
    from tv_mlir.passes import load_pipeline, run_pipeline
    from tv_mlir.semantics.fixed_width import int_width

    module = run_pipeline(load_pipeline("default"), load_module(text))
    classify(module)
    alg = FastAlgebra()
    syms = []
    for i, t in enumerate(module.global_arg_types()):
        b = assume.get(f"arg{i}")
        arr, _ = alg.inputs(f"arg{i}", t.shape, Kind.of(t), t.is_unsigned, int_width(t) or 64,
                            bounds=None if b is None else (b[0], b[1] - 1))
        syms.append(arr)
    out = Interpreter(module, alg).run(syms)[0]
    has_float = "f32" in text

    def ev(x: Any, env: dict[str, int]) -> Any:
        return evaluate(x, env) if isinstance(x, Term) else x

    for s in sets:
        if has_float and any(np.abs(a.astype(np.float64)).max() > 2 ** 16 for a in s):
            continue  # f32 rounds such integers: the proof's exact reals differ by design
        env = {f"arg{i}[{j}]": int(v) for i, a in enumerate(s) for j, v in enumerate(a.tolist())}
        refs = []
        with np.errstate(all="ignore"):
            refs.append(("numeric", np.asarray(Interpreter(module, NumericAlgebra()).run(s)[0])))
            if xla is not None:
                refs.append(("xla", np.asarray(xla.run(text, s)[0])))
        got = []
        for x in out.reshape(-1).tolist():
            try:
                if isinstance(x, FF):
                    k = ev(x.k, env)
                    got.append({1: math.inf, 2: -math.inf, 3: math.nan}.get(k) if k != 0
                               else float(ev(x.v, env)))
                else:
                    got.append(ev(x, env))
            except (EvalError, ZeroDivisionError):
                got.append(None)  # a value the terms leave open (an uninterpreted function)
        for name, want in refs:
            for j, g in enumerate(got):
                if g is None:
                    continue
                w = want.reshape(-1)[j]
                if want.dtype.kind == "f":
                    bad = _differ(np.array([g], dtype=np.float64), np.array([w], dtype=np.float64))
                else:
                    bad = int(g) != int(w)
                if bad:
                    return s, j, g, w, name
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", default="0:100", help="lo:hi")
    ap.add_argument("--z3", action="store_true", help="run the z3 core on every pair")
    ap.add_argument("--floats", action="store_true", help="every program has f32 values")
    ap.add_argument("--sym", action="store_true",
                    help="only the own terms' exact values against XLA (no verify): many programs fast")
    ap.add_argument("--xla", action="store_true", help="with --sym: XLA's numbers too")
    ap.add_argument("--show", type=int, default=None, help="print one seed's pair")
    args = ap.parse_args(argv)
    if args.show is not None:
        p, assume = generate(args.show)
        q = mutate(p, args.show + 1_000_003)
        print(assume)
        print(p.text())
        print(q.text() if q else "(no mutation)")
        return 0
    # XLA:CPU dies of SIGFPE on some integer divisions: its own process, restarted.
    from tv_mlir.execute.xla_child import IsolatedXlaRunner

    xla = IsolatedXlaRunner()
    lo, hi = (int(x) for x in args.seeds.split(":"))
    counts: dict[str, int] = {}
    bad = 0
    t0 = time.time()
    for seed in range(lo, hi):
        if (seed - lo) % 500 == 0 and seed > lo:
            print(f"... {seed - lo} seeds, {time.time() - t0:.0f} s: {counts}", flush=True)
        if args.sym:
            try:
                p, assume = generate(seed)
                m = symbolic_mismatch(p.text(), assume, sample_inputs(p, assume, seed),
                                      xla if args.xla else None)
            except XlaRunError:
                counts["xla-died"] = counts.get("xla-died", 0) + 1
                continue
            except Unsupported:
                counts["unsupported"] = counts.get("unsupported", 0) + 1
                continue
            except Exception as exc:  # noqa: BLE001 - a fuzzer reports and goes on
                print(f"seed {seed}: ERROR {type(exc).__name__}: {str(exc)[:300]}", flush=True)
                continue
            counts["ran"] = counts.get("ran", 0) + 1
            if m is not None:
                bad += 1
                print(f"seed {seed}: SYMBOLIC MISMATCH element {m[1]}: own terms {m[2]}, {m[4]} {m[3]}, "
                      f"inputs {[a.tolist() for a in m[0]]}", flush=True)
            continue
        try:
            o = check(seed, xla, with_z3=True if args.z3 else None, floats=True if args.floats else None)
        except Unsupported:
            counts["unsupported"] = counts.get("unsupported", 0) + 1
            continue
        except XlaRunError:
            counts["xla-died"] = counts.get("xla-died", 0) + 1
            continue
        except Exception as exc:  # noqa: BLE001 - a fuzzer reports and goes on
            print(f"seed {seed}: ERROR {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            counts["error"] = counts.get("error", 0) + 1
            continue
        if o is None:
            counts["skipped"] = counts.get("skipped", 0) + 1
            continue
        key = f"{o.verdict}/{'xla-differs' if o.xla_differs else 'xla-same'}"
        counts[key] = counts.get(key, 0) + 1
        if o.symbolic is not None:
            counts["symbolic-mismatch"] = counts.get("symbolic-mismatch", 0) + 1
            print(f"seed {seed}: SYMBOLIC MISMATCH {o.symbolic[0]} element {o.symbolic[2]}: "
                  f"own terms {o.symbolic[3]}, {o.symbolic[5]} {o.symbolic[4]}", flush=True)
        if o.note.startswith("WITNESS OUTSIDE"):
            print(f"seed {seed}: {o.note[:200]}", flush=True)
        if o.unsound:
            bad += 1
            print(f"seed {seed}: UNSOUND equivalent (z3: {o.z3}, xla differs: {o.xla_differs})", flush=True)
        elif o.verdict == "not-equivalent" and not o.xla_differs:
            print(f"seed {seed}: not-equivalent, XLA never differs ({o.note[:120]})", flush=True)
        elif o.z3 and o.z3 != o.verdict and "unknown" not in (o.z3, o.verdict):
            print(f"seed {seed}: cores disagree: own {o.verdict}, z3 {o.z3}", flush=True)
    print(f"{hi - lo} seeds in {time.time() - t0:.0f} s: {counts}; unsound: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
