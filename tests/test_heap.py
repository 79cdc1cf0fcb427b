"""The garbage collector during a proof (`tv_mlir.heap`): no automatic full collection
walks the proof's live terms, and the proof's terms are freed when it ends."""
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tv_mlir.algebra.term import TermStore
from tv_mlir.api import verify
from tv_mlir.heap import full_collections_at_end

CORE = Path(__file__).resolve().parents[1] / "testdata/core"


@pytest.fixture
def eager_gc() -> Iterator[list[int]]:
    """Thresholds that make CPython run a full collection every few young ones, and the
    generation of every collection started."""
    started: list[int] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])
    old = gc.get_threshold()
    gc.set_threshold(200, 2, 2)
    gc.callbacks.append(note)
    try:
        yield started
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*old)


def test_no_full_collection_inside_and_one_at_the_end(eager_gc: list[int]) -> None:
    before = len(eager_gc)
    with full_collections_at_end():
        junk = [[i] for i in range(20_000)]  # thousands of young collections' worth
        inside = eager_gc[before:]
    del junk
    assert 0 in inside and 2 not in inside
    assert eager_gc[before + len(inside):].count(2) == 1
    assert gc.get_threshold() == (200, 2, 2)  # the caller's settings are back


class _Cycle:
    """An object in a reference cycle of its own: only the cyclic collector frees it."""

    def __init__(self, freed: list[str], name: str) -> None:
        self.me, self.freed, self.name = self, freed, name

    def __del__(self) -> None:
        self.freed.append(self.name)


def test_nested_blocks_keep_the_outer_freeze_and_free_their_cycles() -> None:
    """Only the outermost block unfreezes, at its end: an inner block (a verify's staged
    proof, a stage's proof) that unfroze everything made the outer block's collection walk
    the whole process heap (three walks per verify, most of a small pair's time in a test
    process). Each block's collection still frees the cycles made inside it."""
    assert gc.get_freeze_count() == 0
    freed: list[str] = []
    with full_collections_at_end():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with full_collections_at_end():
            _Cycle(freed, "inner")
            assert gc.get_freeze_count() >= frozen
        assert freed == ["inner"]
        assert gc.get_freeze_count() >= frozen  # the inner block unfroze nothing
        _Cycle(freed, "outer")
    assert freed == ["inner", "outer"]
    assert gc.get_freeze_count() == 0


def test_a_callers_own_freeze_is_left_to_it() -> None:
    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        with full_collections_at_end():
            pass
        assert gc.get_freeze_count() >= mine
    finally:
        gc.unfreeze()


def _stores() -> set[int]:
    return {id(o) for o in gc.get_objects() if isinstance(o, TermStore)}


def test_a_proof_runs_without_full_collections_and_frees_its_terms(eager_gc: list[int],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    before = _stores()  # other tests' stores, the ones they keep
    called: list[int] = []
    collect = gc.collect

    def counted_collect(*args: int) -> int:
        called.append(1)
        return collect(*args)
    monkeypatch.setattr(gc, "collect", counted_collect)
    v = verify(CORE / "decoder_L1.ref.mlir", CORE / "decoder_L1.shardy.mlir", cache=False)
    assert v.verdict == "equivalent"
    # verify runs inside full_collections_at_end (and its proofs inside nested ones, with
    # young collections off too): every full collection is one a block makes at its end,
    # none automatic, although these thresholds would start one every few young ones.
    assert called and eager_gc.count(2) == len(called)
    assert not _stores() - before  # freed by the proof's one collection, none after it


def test_a_closed_store_makes_no_term() -> None:
    """Its ids would restart at 0 and name old terms' ids: a proof's store is closed when
    the proof ends, and anything that builds on it after is stopped."""
    from tv_mlir.algebra.term import REAL, TermBudget

    store = TermStore()
    x = store.var("x", REAL)
    store.add(x, store.real(1))
    store.close()
    with pytest.raises(TermBudget):
        store.var("y", REAL)
    with pytest.raises(TermBudget):
        store.add(x, store.real(2))


def test_a_finished_spmd_run_is_freed_without_the_collector() -> None:
    """An SPMD run's per-device views read the run through a projection of it; after the
    run they are dropped, so the interpreter and every value it holds (a proof's terms)
    go by reference counting, not in the one full collection at the end, which would
    walk them all (2.2 M objects, 1.8 s of a Llama training step's proof)."""
    import weakref

    from tv_mlir.algebra import NumericAlgebra
    from tv_mlir.execute.interp import Interpreter
    from tv_mlir.frontend.read import load_module
    from tv_mlir.passes.pipeline import load_pipeline, run_pipeline
    from tv_mlir.prove.fingerprints import random_inputs

    module = run_pipeline(load_pipeline("default"), load_module(CORE / "decoder_L1.shardy.mlir"))
    interp = Interpreter(module, NumericAlgebra())
    was = gc.isenabled()
    gc.disable()
    try:
        interp.run(random_inputs(module.main.arg_types)[1])
        gone = weakref.ref(interp)
        del interp
        assert gone() is None
    finally:
        if was:
            gc.enable()


def test_a_child_measures_its_own_peak_not_its_parents() -> None:
    """Linux carries ru_maxrss over exec from the forking parent: a measuring child of a
    big test worker read the worker's peak (test_flax_8b failed at "1.6 GB" on 320 MB).
    `peak_rss_mb` reads the child's own address space."""
    import subprocess
    import sys

    held = b"x" * 400_000_000  # this process at 400 MB when it forks
    code = "from tv_mlir.heap import peak_rss_mb; print(peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert len(held) and float(out) < 200, out


def test_an_inner_block_walks_only_what_it_made() -> None:
    """A stage's proof inside a verify that holds large programs: its collection must not
    walk them (116 stage proofs each walking the 405B programs doubled that verify's CPU).
    gc's callback reports what each collection examined only by generation, so the test
    counts the objects left unfrozen when the inner block starts: none of the outer ones."""
    with full_collections_at_end():
        held = [[i] for i in range(50_000)]  # the outer block's programs
        with full_collections_at_end():
            walked = {id(o) for o in gc.get_objects()}  # every generation; frozen ones are in none
            assert not any(id(x) in walked for x in held)
    del held
