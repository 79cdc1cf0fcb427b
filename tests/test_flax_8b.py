"""Issue 14's measure: the flax Llama of testdata/gen_flax.py at Llama-3-8B widths (hidden
4096, 32 heads, 8 kv heads, ffn 14336, seq 2048, vocab 32000; one layer, batch 4) given as
ShapeDtypeStructs through `tv_mlir.jax.check`'s export and `verify`, in a process of its own
(`gen_flax.py --measure-8b`) so that its peak memory is its own.

What it showed until f648ab0 (the partitioned forward, `constants.LOOKUP_TABLES` on): `equivalent`,
proved in ~100 stages at the shrunk sizes and again at the second witness's, in ~45-50 s CPU
and ~0.95 GB peak; since then `unknown` (too large to encode at the second witness), ~100 s
CPU and 2.9 GB, see the bound below (docs/shrinking.md, "lookup offset tables"), with nothing of the model's
size allocated (the embedding alone is 0.5 GB, the logits 1 GB). The test holds what must
stay true: a verdict, never `not-equivalent` for this correct pair, and that footprint; an
`unknown` names the classes it kept. The wall-clock limit is generous (the proof takes
minutes of wall on loaded shared cores); it is no timing assertion."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")

ROOT = Path(__file__).resolve().parents[1]


def test_llama_8b_forward_through_check_allocates_nothing_of_its_size() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "testdata" / "gen_flax.py"), "--measure-8b", "fwd"],
                       capture_output=True, text=True, timeout=1800, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-2000:]
    m = json.loads(p.stdout.strip().splitlines()[-1])
    assert m["verdict"] in ("equivalent", "unknown"), m["reason"]
    # Measured: 943-963 MB until f648ab0 (320 MB while the table rule was off). Since then
    # 2.9 GB and `unknown`: rule b's walk of the ids after offsets (id_splits.OFFSETS) finds
    # splits at jnp.take's negative-index offset and bounds check (the constants 32000 and
    # [31999]; one split lost), the vocabulary keeps 160 words (8 with the switch off) and
    # the second witness's 320 is too large to encode. Open (docs/jax.md, stop 42). The
    # bound still holds what the test is for: the model's own op results (tens of GB at
    # these widths) are never allocated.
    assert m["max_rss_mb"] < 4096, m
    if m["verdict"] == "unknown":
        assert m["reason"] and m["kept"], m
