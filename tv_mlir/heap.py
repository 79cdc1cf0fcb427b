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
    are put back as they were (a caller's own settings, an outer block's)."""
    old = gc.get_threshold()
    # What lived before the block (the programs, an outer stage runner's plan) is set
    # aside for the block's collections: the one at the end walks the block's objects only.
    gc.freeze()
    gc.set_threshold(old[0], old[1], NEVER)
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.collect()
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

