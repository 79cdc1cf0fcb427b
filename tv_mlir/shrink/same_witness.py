"""Newton's atoms witnessed (docs/shrinking.md, "Atoms witnessed (helper-71)").

Newton's constant terms (`constant_terms.ConstantTerms`) read an atom (exp, log, tanh, ...)
as a fresh variable per position, with no constant term, unless `Same` reads its argument
as the same number at every position. `Same` is structural: it sees products with 0,
affine cancellations, decided predicates, but not `clamp(x, 0, 0)`, `|x| - |-x|`,
`int(x) & 0` or `(x + 1)^2 - x^2 - 2x - 1`. Those atoms are constants (1 at every
position), so their sum is the class's size: a count. The old argument that this did no
harm was that the verifier does not fold them either; the sweep refinement's laws (exp 0 =
1, prove/refine.py) made it fold them, and six red-team bug twins were `equivalent` at the
shrunk sizes. That argument depended on the verifier's strength.

The witness depends on none: a numeric run of the shrunk programs on inputs inside the
verifier's domain (those of zero_witness.py: finite reals inside the `--assume` bounds as
the verifier resolves them) is one real execution; an atom whose values at two positions
of a shrunk class differ there is no constant function along that class, so no sound
verifier proves it one. Every atom with a dim of a shrunk class must be seen so, along
that class's dims, in some run (per device for per-device values); a class with an atom
not seen varying is counted (rule a: its size is kept in order with every literal, as for
a summand with a constant term) and the pair is planned again. Values are taken apart only
by more than zero_witness.MARGIN of their size (float64 is not the reals).

What it does not witness: that atoms varying along a class are free enough for Newton
(exp(x) and exp(2x) are algebraically related; the verifier's laws do not relate them:
docs). Atoms are seen at the top level, in manual computations' bodies and in loop bodies
(any trip); ones the run does not reach (a per-device view's regions, a run that stops
first) are not seen, so their classes are counted."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tv_mlir.ir import Module, Op
from tv_mlir.semantics.ops import TRANSCENDENTAL_OPS
from tv_mlir.shrink.plan import ShrinkPlan
from tv_mlir.shrink.unionfind import UnionFind
from tv_mlir.shrink.zero_witness import MARGIN, _renamed, inlined

# Off: Same's reading of atoms taken as it is (the rule as it was before this module).
WITNESS = True
# Atoms: the ops ConstantTerms reads as fresh variables (constant_terms._ATOMS).
ATOMS = TRANSCENDENTAL_OPS
# Elements one witness run may compute. The run stops once every atom is seen varying, so
# this bounds only a run whose atoms stay unseen; what is unseen when it stops is counted,
# and plans grow. zero_witness's 16M stopped the 8B fwd+bwd (Shardy) run before its
# backward's atoms (7.7e7 elements in the shrunk programs): 15 classes kept and `unknown`
# where 100M lets the run see them (2.2 s CPU, 393 MB for the whole shrink) and keeps 4.
# The stages' lineage runs programs up to 2e8 elements (stages.run.MAX_CUT_ELEMENTS).
RUN_ELEMENTS = 100_000_000
# The run is watched below the top level as well (loop bodies); off only to show a test what
# that adds.
NESTED = True


@dataclass(frozen=True)
class Atom:
    """An atom's result (by name in the program as planned) with dims in a family that a
    shrunk class summed over belongs to: the dims of one class of that family, along which
    some run must show two values apart, and the family's summed shrunk classes (counted
    when no run does)."""

    program: str
    value: str
    cls: int
    dims: tuple[int, ...]
    summed: frozenset[int]


def summed_families(p: ShrinkPlan) -> dict[int, frozenset[int]]:
    """class -> the shrunk classes summed over (reduced) in its family (the classes scale,
    product and offset relations tie, as plan.py's families), for the classes whose family
    has one. Newton's constant terms are read per family (degree.Degrees) and counted per
    summed class (summand_degrees)."""
    a = p.analysis
    n = len(a.classes)
    uf = UnionFind.of(range(n), [(g, loc) for g, loc, _ in a.scales] + [(q, f) for q, fs in a.products for f in fs]
                      + [(b, d) for d, b, _ in a.offsets])
    summed: dict[int, set[int]] = {}
    for c in range(n):
        if a.classes[c].reduced_by and p.sizes[c] < a.classes[c].size:
            summed.setdefault(uf.find(c), set()).add(c)
    return {c: frozenset(summed[uf.find(c)]) for c in range(n) if uf.find(c) in summed}


def atoms(p: ShrinkPlan, modules: Mapping[str, Module]) -> list[Atom]:
    """The atoms of both programs (as planned: raw, call sites split) with a dim of a shrunk
    class in a family with a summed shrunk class, one per (atom, class)."""
    a = p.analysis
    families = summed_families(p)
    out: list[Atom] = []
    for program, m in modules.items():
        for fn in m.funcs.values():
            for op in fn.body.walk():
                if op.name not in ATOMS or not op.results or (program, op.results[0]) not in a.types:
                    continue
                classes = a.classes_of(program, op.results[0])
                for c in dict.fromkeys(classes):
                    if c in families and p.sizes[c] < a.classes[c].size:
                        out.append(Atom(program, op.results[0], c, tuple(k for k, x in enumerate(classes) if x == c),
                                        families[c]))
    return out


def input_elements(p: ShrinkPlan, ref: Module) -> int:
    """Elements of the reference's inputs at the plan's sizes (what one draw allocates)."""
    a = p.analysis
    args = ref.funcs[ref.entry].body.args
    return sum(math.prod(p.new_shape("ref", v)) for v in args if ("ref", v) in a.types)


def varies(values: Any, dims: Sequence[int]) -> bool:
    """Whether two elements of `values` that differ only along `dims` are apart by more than
    MARGIN of their size (both finite): the value is no constant along those dims."""
    x = np.asarray(values)
    if x.ndim == 0 or not dims or max(dims) >= x.ndim or all(x.shape[d] <= 1 for d in dims):
        return False
    if x.dtype.kind not in "biuf":
        return False
    rest = [d for d in range(x.ndim) if d not in dims]
    y = np.transpose(x, list(dims) + rest).reshape(int(np.prod([x.shape[d] for d in dims])), -1)
    with np.errstate(all="ignore"):
        y = y.astype(np.float64)
        finite = np.isfinite(y)
        hi = np.where(finite, y, -np.inf).max(axis=0)
        lo = np.where(finite, y, np.inf).min(axis=0)
        scale = np.maximum(1.0, np.maximum(np.abs(hi), np.abs(lo)))
        apart = (hi - lo) > MARGIN * scale
    return bool(np.any(apart & np.isfinite(hi) & np.isfinite(lo)))


class _Seen(Exception):
    """Every atom seen varying: the rest of the run is not needed."""


def observe(module: Module, wanted: Mapping[str, list[Atom]], inputs: Sequence[np.ndarray]) -> set[Atom]:
    """The atoms of `wanted` (by name in `module`, calls inlined) one run shows varying
    along their class's dims, at the top level, in a manual computation's body or in a
    loop's body (each device's part on its own). The run stops once every one is seen; a
    run that fails part way (the element budget) keeps what it showed before."""
    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter
    from tv_mlir.execute.spmd import Local
    from tv_mlir.semantics.common import Budget

    left = {name: list(xs) for name, xs in wanted.items()}
    seen: set[Atom] = set()
    interp = Interpreter(module, NumericAlgebra(), budget=Budget(max_elements=RUN_ELEMENTS, calls=[module.entry]))

    def watch(op: Op, results: list[Any]) -> None:
        if op.name not in ATOMS or not op.results:
            return
        name = op.results[0].partition("@")[0]
        pending = left.get(name)
        if not pending:
            return
        value = results[0]
        parts = value.parts if isinstance(value, Local) else (value,)
        for atom in list(pending):
            if any(varies(part, atom.dims) for part in parts):
                seen.add(atom)
                pending.remove(atom)
        if not any(left.values()):
            raise _Seen

    # Below the top level too (a loop's body, every trip): a scan's atoms (scan_L4's layers)
    # went unwitnessed and counted. A run's values at any trip are the program's, so any
    # trip may witness.
    interp.observer = watch
    if NESTED:
        interp.inner_observer = watch
    try:
        interp.run(inputs)
    except _Seen:
        pass
    except Exception:  # noqa: BLE001 -- a run that stops (the element budget, an op it cannot run):
        pass  # what it computed before is the program's, and the atoms it showed varying stay seen
    return seen


def unwitnessed(todo: Sequence[Atom], shrunk: Mapping[str, Module],
                input_sets: Sequence[Sequence[np.ndarray]] | None) -> set[int]:
    """The summed classes of the atoms of `todo` (`atoms` of the programs as planned) that
    no run of the `shrunk` programs shows varying (all of them when a program cannot be
    run, or there are no inputs)."""
    out: set[int] = set()
    for program in dict.fromkeys(t.program for t in todo):
        mine = [t for t in todo if t.program == program]
        sets = input_sets
        try:
            module, renamed = inlined(shrunk[program])
        except Exception:  # noqa: BLE001 -- a function called twice, a program not given: no witness
            sets = None
        left = set(mine)
        for inputs in sets or ():
            wanted: dict[str, list[Atom]] = {}
            for t in left:
                wanted.setdefault(_renamed(t.value, renamed), []).append(t)
            left -= observe(module, wanted, inputs)
            if not left:
                break
        out |= {c for t in left for c in t.summed}
    return out


__all__ = ["ATOMS", "RUN_ELEMENTS", "WITNESS", "Atom", "atoms", "input_elements", "observe", "summed_families",
           "unwitnessed", "varies"]
