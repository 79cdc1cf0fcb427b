"""The signatures of proofs by instance (prove/instances.py `_Canon`) against an executable
spec: the fast paths of `_Canon` (a node of one child takes its child's list, a polynomial
over one atom needs no position map, a memo miss is told apart from a term without a
signature) must give the very equivalence of terms the plain bottom-up definition gives.
Equal shape numbers must mean equal spec structures and the other way round, with the same
free constants listed in the same order; a signature that merged two structures the spec
tells apart would carry a proof over to a pair it does not hold for."""
from __future__ import annotations

import itertools
import random
from typing import Any

import numpy as np

from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FF, FIN, FastAlgebra
from tv_mlir.algebra.term import BVAR, POLY, VAR, Term
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.instances import _Canon

Spec = tuple[Any, tuple[int, ...]] | None


def _spec(canon: _Canon, t: Term, memo: dict[int, Spec]) -> Spec:
    """The signature as the module docstring defines it, by plain recursion, with nested
    structures in place of interned shape numbers (the leaves' facts read by `leaf`)."""
    if t.id in memo:
        return memo[t.id]
    kids = [_spec(canon, k, memo) for k in (t.args or canon._children(t))]
    out: Spec
    if not kids and t.kind in (VAR, BVAR):
        shape = canon.leaf(t)
        out = None if shape is None else (("leaf", shape), (t.id,))
    elif any(k is None for k in kids):
        out = None
    elif t.kind in (VAR, BVAR):
        out = (("def", t.sort, kids[0][0]), kids[0][1])  # type: ignore[index]
    else:
        lists = [k[1] for k in kids]  # type: ignore[index]
        flat = [x for ls in lists for x in ls]
        merged = list(dict.fromkeys(flat))
        wiring = None if len(merged) == len(flat) else tuple(tuple(merged.index(x) for x in ls) for ls in lists)
        data = t.data
        if t.kind == POLY:
            at = [a.id for a in t.args]
            data = tuple((tuple((at.index(x), e) for x, e in m), c) for m, c in t.data)
        out = ((t.kind, t.sort, data, tuple(k[0] for k in kids), wiring), tuple(merged))  # type: ignore[index]
    memo[t.id] = out
    return out


def _terms(seed: int) -> tuple[CutStore, list[Term]]:
    """Random terms over a few inputs and cut points: one-atom powers (x^2 against x^3),
    comparisons (one child), selects whose branches share free constants or not, and
    integer cut variables under conditions (read through)."""
    rng = random.Random(seed)
    alg = FastAlgebra()
    cuts = CutStore(alg)
    cuts.origin = Origin("ref", "stablehlo.add", "loc", "%0", None)
    s = alg.store
    xs, _ = alg.inputs("x", (4,), Kind.FLOAT)
    ks, _ = alg.inputs("k", (2,), Kind.INT, width=32)
    pool: list[Term] = [x.v if hasattr(x, "v") else x for x in xs.tolist()]
    ints: list[Term] = list(ks.tolist())
    ints += cuts.cut_array(alg.add(ks, alg.full((2,), 1, Kind.INT), Kind.INT)).tolist()
    out: list[Term] = []
    for _ in range(120):
        op = rng.randrange(7)
        a, b = rng.choice(pool), rng.choice(pool)
        if op == 0:
            t = s.mul(a, a) if rng.random() < 0.5 else s.mul(s.mul(a, a), a)  # one atom, exponent 2 or 3
        elif op == 1:
            t = s.add(a, s.scale(b, rng.choice([1, 2, -1])))
        elif op == 2:
            t = s.mul(a, b)
        elif op == 3:
            c = s.lt(a, b) if rng.random() < 0.5 else s.le(a, b)
            if type(c) is Term:
                out.append(c)  # a comparison: one child
            t = s.ite(c, a, rng.choice(pool))
        elif op == 4:
            k = rng.choice(ints)
            t = s.ite(s.eq(k, s.int_(rng.randrange(3))), a, b)  # an index test through an int cut
        elif op == 5:
            arr = cuts.cut_array(_floats([a]))  # a real cut point: a free constant
            t = arr.tolist()[0].v
        else:
            t = s.add(a, s.real(rng.randrange(3)))
        if type(t) is Term:
            pool.append(t)
            out.append(t)
    return cuts, [t for t in out if type(t) is Term]  # comparisons may fold to a bool


def _floats(ts: list[Term]) -> np.ndarray:
    """Finite floats of these terms, as an op result the cut store takes."""
    arr = np.empty((len(ts),), dtype=object)
    for i, t in enumerate(ts):
        arr[i] = FF(t, FIN)
    return arr


def test_shape_numbers_are_the_specs_equivalence() -> None:
    checked = 0
    for seed in range(6):
        cuts, terms = _terms(seed)
        canon, memo = _Canon(cuts), dict[int, Spec]()
        got = [canon.of(t) for t in terms]
        want = [_spec(canon, t, memo) for t in terms]
        for g, w in zip(got, want):
            assert (g is None) == (w is None)
            if g is not None:
                assert g[1] == w[1]  # type: ignore[index]
        for (g1, w1), (g2, w2) in itertools.combinations([(g, w) for g, w in zip(got, want) if g is not None], 2):
            assert (g1[0] == g2[0]) == (w1[0] == w2[0])  # type: ignore[index]
            checked += 1
    assert checked > 10_000


def test_one_atom_powers_and_one_child_nodes_stay_apart() -> None:
    """The fast paths' own hazards: x^2 against x^3 (one atom, other exponent), x < y
    against x <= y (one child, other data), and x*y against x*x (sharing)."""
    alg = FastAlgebra()
    cuts = CutStore(alg)
    s = alg.store
    xs, _ = alg.inputs("x", (2,), Kind.FLOAT)
    x, y = (e.v if hasattr(e, "v") else e for e in xs.tolist())
    canon = _Canon(cuts)

    def shape(t: Any) -> int:
        got = canon.of(t)
        assert got is not None
        return got[0]

    assert shape(s.mul(x, x)) != shape(s.mul(s.mul(x, x), x))
    assert shape(s.mul(x, x)) == shape(s.mul(y, y))
    assert shape(s.lt(x, y)) != shape(s.le(x, y))
    assert shape(s.mul(x, y)) != shape(s.mul(x, x))
    assert shape(s.ite(s.lt(x, y), x, y)) != shape(s.ite(s.lt(x, y), y, x))
