"""The sweep's element ids (prove/sweep.py `_full_id`): the fast path for own-core floats of
a known class must name exactly what the general path names (every term's `term_id`), or
the sweep would place an element by another's position or miss a proved merge."""
from __future__ import annotations

from typing import Any

from tv_mlir.algebra import Kind
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FF, FIN, FastAlgebra
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.sweep import _full_id


def _general(x: Any) -> Any:
    terms = T.element_terms(x)
    return tuple(T.term_id(t) for t in terms) if terms else T.element_id(x)


def test_full_id_is_the_general_paths_id() -> None:
    alg = FastAlgebra()
    cuts = CutStore(alg)
    cuts.origin = Origin("ref", "stablehlo.add", "loc", "%0", None)
    xs, _ = alg.inputs("x", (3,), Kind.FLOAT)
    ys, _ = alg.inputs("y", (3,), Kind.FLOAT, ieee=True)  # classes of their own: symbolic
    sums = alg.add(xs, xs, Kind.FLOAT)
    cut = cuts.cut_array(alg.mul(xs, xs, Kind.FLOAT))
    ieee = alg.add(ys, xs, Kind.FLOAT)
    s = alg.store
    elements = [*xs.tolist(), *sums.tolist(), *cut.tolist(), *ys.tolist(), *ieee.tolist(),
                FF(s.real(3), FIN), 7, True, *alg.inputs("k", (2,), Kind.INT, width=32)[0].tolist()]
    assert any(type(e) is FF and not isinstance(e.k, int) for e in elements)
    ids = [_full_id(e) for e in elements]
    assert ids == [_general(e) for e in elements]
    # An input (a leaf) is named by its atom, as terms mention it; a sum by itself.
    assert _full_id(xs[0]) != _full_id(sums[0]) and _full_id(xs[0]) == (T.term_id(xs[0].v),)
