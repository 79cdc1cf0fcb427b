"""Generate testdata/scan_stacks/: testdata/depth's 405B-family scan (forward and backward,
`lax.scan` over stacked layers; gen_depth.grad_fns) at small dims and 3 layers, for the
loop rules of tests/test_stage_scan_stacks.py (stages/loops.py: constant initial values
matched by their blocks, stacks the bodies only write, carried partial sums).

Run from the repository root:

    .venv/bin/python testdata/gen_scan_stacks.py      # sets its own 8-device XLA flags

- ``grad_scan_L3``: the reference and its Shardy program (gen_depth's functions, dims
  gen_depth.SMALL: batch 4, seq 8, hidden 16, 4 heads of 4, ffn 32; checked numerically first).
- ``grad_scan_L3_bug_layer2``: gen_depth's seeded bug (the MLP reduce missing in
  iteration 2) in the scanned body.
- ``grad_scan_L3_bug_row0`` (a text mutation of the correct Shardy program): the first
  helper that writes a stack of the forward loop (`dynamic_update_slice` at the trip
  counter; it is called for the six stacks of its shape) writes at the constant row 0
  instead, so the backward loop reads wrong residuals for every layer but the first.

Output is byte-identical on rerun.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_depth as gd  # noqa: E402  (gen_sharded sets the 8-device XLA flags before jax)
import gen_sharded as gs  # noqa: E402

OUT = gs.HERE / "scan_stacks"
DIMS = dict(gd.SMALL)
LAYERS = 3


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    good = gd.Spec("grad_scan_L3", "grad_scan_L3", "405b", LAYERS, scan=True)
    bug = gd.Spec("grad_scan_L3_bug_layer2", "grad_scan_L3", "405b", LAYERS, scan=True, bug_index=1)
    cases = [s.case(DIMS) for s in (good, bug)]
    gs.validate(cases)
    for k, (s, case) in enumerate(zip((good, bug), cases)):
        print(s.name, gs.check(case, gd.SEED + k), flush=True)
        files = gs.export_case(case, OUT, False)
        (OUT / str(files["gspmd"])).unlink()
    text = (OUT / "grad_scan_L3.shardy.mlir").read_text()
    # Row 0: the first dynamic_update_slice at a non-constant start, its start made %c (a 0).
    pat = re.compile(r"(= stablehlo\.dynamic_update_slice %arg0, %0, )%arg2(, %c,)")
    assert pat.search(text), "no stack write to mutate"
    (OUT / "grad_scan_L3_bug_row0.shardy.mlir").write_text(pat.sub(r"\1%c\2", text, count=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
