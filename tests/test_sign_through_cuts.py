"""Signs known by construction through cut points (algebra/terms.py `_sign_through_cuts`,
algebra/fast.py `_sign_test(.., "ge")`): Adam's second moment `b2 * v + (1 - b2) * g * g`
is written as two multiplies, `((1 - b2) * g) * g`, each cut apart by the sweep; with the
state `v` assumed >= 0 (`--assume v=0:inf`) the cut sum is known >= 0, and `sqrt` of it is
known finite, so no float after it carries an IEEE class term (125k of them in
llama_train_step before)."""
from __future__ import annotations

import pytest

from tv_mlir.algebra import Kind
from tv_mlir.algebra import terms as T
from tv_mlir.algebra.fast import FIN, FastAlgebra, known_sign
from tv_mlir.prove.cuts import CutStore


def _cut(cuts: CutStore, arr):  # noqa: ANN001, ANN202
    return cuts.cut_array(arr)


def test_a_square_split_over_two_cuts_is_non_negative() -> None:
    alg = FastAlgebra()
    g, _ = alg.inputs("g", (1,), Kind.FLOAT)
    v, _ = alg.inputs("v", (1,), Kind.FLOAT, sign=1)
    cuts = CutStore(alg)
    k = alg.full((1,), 0.001, Kind.FLOAT)
    kg = _cut(cuts, alg.mul(k, g, Kind.FLOAT))  # (1 - b2) * g, cut
    sq = _cut(cuts, alg.mul(kg, g, Kind.FLOAT))  # ((1 - b2) * g) * g, cut
    assert known_sign(T.element_terms(sq[0])[0]) != 0
    total = _cut(cuts, alg.add(alg.mul(alg.full((1,), 0.999, Kind.FLOAT), v, Kind.FLOAT), sq, Kind.FLOAT))
    root = alg.uf("sqrt", [total])
    assert root[0].k == FIN
    # An odd power stays unknown: (k * g) * v has no sign, and neither has g * (g * g).
    mixed = _cut(cuts, alg.mul(kg, v, Kind.FLOAT))
    assert known_sign(T.element_terms(mixed[0])[0]) == 0
    cube = _cut(cuts, alg.mul(g, sq, Kind.FLOAT))
    assert known_sign(T.element_terms(cube[0])[0]) == 0
    # A negative constant in the definition turns the square's sign.
    neg = _cut(cuts, alg.mul(_cut(cuts, alg.mul(alg.full((1,), -0.5, Kind.FLOAT), g, Kind.FLOAT)), g, Kind.FLOAT))
    assert known_sign(T.element_terms(neg[0])[0]) == 0
    assert not isinstance(alg.uf("sqrt", [neg])[0].k, int)


jax = pytest.importorskip("jax")
jnp = jax.numpy

from tv_mlir import jax as tj  # noqa: E402


def _adam_direction(m, v, g):
    v2 = 0.999 * v + 0.001 * g * g
    return (0.9 * m + 0.1 * g) / (jnp.sqrt(v2) + 1e-8)


def test_the_assumed_sign_reaches_past_the_sqrt() -> None:
    args = tuple(jax.ShapeDtypeStruct((8,), jnp.float32) for _ in range(3))
    free = tj.check(_adam_direction, *args, reference=_adam_direction, form="shardy", cache=False)
    assert free.verdict == "equivalent", free.reason
    assert free.stats["symbolic_classes"] > 0  # sqrt of a value that may be negative: NaN possible
    signed = tj.check(_adam_direction, *args, reference=_adam_direction, form="shardy", cache=False,
                      assume={"v": (0, float("inf"))})
    assert signed.verdict == "equivalent", signed.reason
    assert signed.stats["symbolic_classes"] == 0


def test_the_stage_lattice_takes_the_assumed_sign(tmp_path) -> None:  # noqa: ANN001
    """stages/finite.py: with v assumed >= 0 the reference's sqrt(v2) is finite, so a stage
    that reads it takes it as a finite input (no IEEE class per element)."""
    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    from tv_mlir.stages.finite import NONNEG, finite_and_signed

    args = tuple(jax.ShapeDtypeStruct((8,), jnp.float32) for _ in range(3))
    path = tmp_path / "adam.mlir"
    path.write_text(jax.jit(_adam_direction).lower(*args).as_text())
    ref = prepare(path, Options())
    sqrt = next(op.results[0] for op in ref.main.body.ops if op.name == "stablehlo.sqrt")
    finite, _ = finite_and_signed(ref, True)
    assert sqrt not in finite
    finite, signs = finite_and_signed(ref, True, None, [0, NONNEG, 0])
    assert sqrt in finite and signs.get(sqrt) == NONNEG


def test_the_stage_lattice_keeps_a_negative_scale_unsigned(tmp_path) -> None:  # noqa: ANN001
    """(-0.5 * g) * g <= 0: its sqrt stays not finite however v is assumed."""
    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    from tv_mlir.stages.finite import NONNEG, finite_and_signed

    def f(m, v, g):
        return m / (jnp.sqrt(0.999 * v + -0.5 * g * g) + 1e-8)

    args = tuple(jax.ShapeDtypeStruct((8,), jnp.float32) for _ in range(3))
    path = tmp_path / "neg.mlir"
    path.write_text(jax.jit(f).lower(*args).as_text())
    ref = prepare(path, Options())
    sqrt = next(op.results[0] for op in ref.main.body.ops if op.name == "stablehlo.sqrt")
    assert sqrt not in finite_and_signed(ref, True, None, [0, NONNEG, 0])[0]
