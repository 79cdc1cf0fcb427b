"""The cyclic garbage collector during a proof.

A proof builds millions of small objects that live until it ends (interned terms, their
polynomials, cut records). CPython's automatic full collection runs whenever the objects
that survived the young collections grew by a quarter, and each one walks every live
object: on a 1-layer Llama training step that was 23 full collections, 5.9 s of 23 s CPU.
The objects a proof keeps are not garbage until it ends, so those walks find nothing.
Young collections go on as usual (short-lived cycles still die young); the full
collection runs once, when the proof ends and its terms have become garbage, so a process
that runs many proofs (the stage pool, the test suite) does not keep them. It walks only
what the proof made: what lived before is frozen for it (a stage runner's programs)."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

NEVER = 1 << 30  # a third threshold no count of young collections reaches


@contextmanager
def full_collections_at_end() -> Iterator[None]:
    """No automatic full collection inside the block; one when it ends. The thresholds
    are put back as they were (a caller's own settings, an outer block's).

    Every block freezes what lived before it, so its collection walks only what it made
    (a stage's proof: not the 405B programs and plan its verify holds). Only the outermost
    block unfreezes, at its end: an inner block that unfroze everything handed the outer
    block's collection the whole process (three walks of every live object per `verify`
    in a test process, most of a small pair's time). What an inner block froze stays
    frozen until then, so a cycle the outer block dropped before an inner block began is
    left to a later automatic collection. A caller's own freeze is never undone here."""
    old = gc.get_threshold()
    # Inside an outer block its third threshold is NEVER (O(1); counting the frozen
    # objects walks them, ms per call in a large process).
    owner = old[2] != NEVER and gc.get_freeze_count() == 0
    gc.freeze()
    gc.set_threshold(old[0], old[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.collect()  # before any unfreeze: the block's objects only
        if owner:
            gc.unfreeze()


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB: VmHWM, which belongs to the address space
    the process's last exec made. Linux carries ru_maxrss over exec from the parent that
    forked it, so a measuring child of a 1.6 GB test worker read 1.6 GB at 320 MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB

