"""The term budget of one local proof's unfolding (prove/local.py `UNFOLD_TERMS`).

A pair that the random runs cannot tell apart but that differs (a shard's clamped partial
gather against the one row its clamp hit in every run: gen_clients4's
`gemma_softcap_zloss`, partitioned) has one side that is a single cut point and another
that selects among that cut point's neighbours. The neighbours are exclusive to one side,
so newest-first unfolding takes them down their whole cone, multiplying out products of
sums at every level, and the sides meet only at the inputs. The budget stops such a pair
after a bounded number of new terms; a pair whose proof needs a moderate expansion still
proves. A stopped unfolding only leaves a pair unproved (never merges one)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tv_mlir.algebra import Kind
from tv_mlir.algebra.fast import FastAlgebra
from tv_mlir.prove import local
from tv_mlir.prove.cuts import CutStore, Origin
from tv_mlir.prove.local import UNFOLD_TERMS, LocalProver


@pytest.fixture(autouse=True)
def _every_pair_unfolded(monkeypatch: pytest.MonkeyPatch) -> None:
    """No proofs by instance: each pair here is unfolded."""
    monkeypatch.setattr(local, "INSTANCES", False)


def _layers(n: int, layers: int) -> tuple[CutStore, FastAlgebra, np.ndarray, Any]:
    """A network cut at every layer (h' = h * sum(h): the degree doubles per layer, so a
    full expansion of one element is large), and an index input i."""
    alg = FastAlgebra()
    h, _ = alg.inputs("x", (n,), Kind.FLOAT)
    i, _ = alg.inputs("i", (), Kind.INT, width=32, bounds=(0, n - 1))
    cuts = CutStore(alg)
    for k in range(layers):
        cuts.origin = Origin("ref", "stablehlo.multiply", "loc", f"%{k}", None)
        h = cuts.cut_array(alg.mul(h, _total(alg, h), Kind.FLOAT))
    return cuts, alg, h, i


def _total(alg: FastAlgebra, h: np.ndarray) -> np.ndarray:
    """sum(h) broadcast to h's shape."""
    return np.full(h.shape, alg.reduce_sum(h, (0,), Kind.FLOAT).reshape(()).item(), dtype=object)


def _rows(cuts: CutStore, alg: FastAlgebra, h: np.ndarray) -> np.ndarray:
    """Two private levels per row on top of h (2 * (h * h), as a soft cap's 30 * tanh(x / 30)
    is two): a row's definition names only its own cut points, so no common cut point
    bridges one row to another, and a row on one side only is unfolded to the inputs."""
    cuts.origin = Origin("ref", "stablehlo.multiply", "loc", "%sq", None)
    sq = cuts.cut_array(alg.mul(h, h, Kind.FLOAT))
    cuts.origin = Origin("ref", "stablehlo.add", "loc", "%twice", None)
    return cuts.cut_array(alg.add(sq, sq, Kind.FLOAT))


def test_a_pair_meeting_only_at_the_inputs_stops_within_the_budget() -> None:
    """The reference's row 0 against a select of rows 0 and 1 by the index (equal on every
    run whose index was 0, different otherwise), 8 inputs through three layers: row 1's full
    expansion is past 300 k new terms. The unfolding stops at the budget, the pair unproved.
    At the earlier budget (300 k) the growth check fails (and the pair costs ~10 s, not ~1)."""
    cuts, alg, h, i = _layers(8, 3)
    rows = _rows(cuts, alg, h)
    cuts.origin = Origin("other", "stablehlo.select", "loc", "%pick", None)
    at0 = alg.compare("EQ", i, alg.constant(np.array(0), Kind.INT), Kind.INT, False)
    pick = cuts.cut_array(alg.select(at0, rows[0:1].reshape(()), rows[1:2].reshape(()), Kind.FLOAT))
    before = alg.store.size
    status = LocalProver(cuts, alg).prove_pairs([(rows[0], pick.reshape(()).item())], Kind.FLOAT, 0.2)
    assert status == [None]
    grown = alg.store.size - before
    assert UNFOLD_TERMS <= grown <= 60_000  # it unfolded up to the budget, and no further


@pytest.mark.parametrize("scale,proved", [(2.0, True), (3.0, False), (1.0, False)])
def test_a_regrouped_row_still_unfolds_to_its_proof(scale: float, proved: bool) -> None:
    """The reference's row 0 (2 * t, t = h0 * h0, h0 = g0 * sum(g) over the layer g below)
    against the other program's scale * q * sum(g)^2 with q = g0 * g0 cut on its own (g: 64 cut points): equal
    for scale 2 only, after unfolding four cut points and multiplying out squares of sums of
    64: ~10 k new terms, which the budget leaves room for (a budget of 8 k fails the proof).
    The wrong scales stay unproved."""
    cuts, alg, g, _ = _layers(64, 1)
    cuts.origin = Origin("ref", "stablehlo.multiply", "loc", "%3", None)
    h = cuts.cut_array(alg.mul(g, _total(alg, g), Kind.FLOAT))
    rows = _rows(cuts, alg, h)
    cuts.origin = Origin("other", "stablehlo.multiply", "loc", "%q", None)
    q = cuts.cut_array(alg.mul(g[0:1], g[0:1], Kind.FLOAT))
    s = _total(alg, g)[0:1]
    cuts.origin = Origin("other", "stablehlo.multiply", "loc", "%ours", None)
    ours = cuts.cut_array(alg.mul(alg.mul(alg.mul(q, s, Kind.FLOAT), s, Kind.FLOAT),
                                  alg.full((1,), scale, Kind.FLOAT), Kind.FLOAT))
    status = LocalProver(cuts, alg).prove_pairs([(rows[0], ours.reshape(()).item())], Kind.FLOAT, 0.2)
    assert (status[0] is not None) == proved
