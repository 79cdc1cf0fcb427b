"""StageRecord.as_dict (stages/run.py) is `dataclasses.asdict` built directly (the verdict's
stage list of the 126-layer stack has 22,121 records): the same dict, and a copy."""
from __future__ import annotations

from dataclasses import asdict

from tv_mlir.stages.run import StageRecord


def test_as_dict_is_asdict_and_a_copy() -> None:
    r = StageRecord(3, "stage 4 of 9", "0123456789abcdef", "proved", "not-equivalent", "differs", 0.25, 2, 3,
                    ["add @ m.py:1:2"], {"op": "stablehlo.add", "at": {"device": [0, 1]}}, [2])
    d = r.as_dict()
    assert d == asdict(r)
    assert list(d) == list(asdict(r))  # the JSON's key order
    d["locs"].append("x")
    d["lanes"].append(5)
    d["first_divergence"]["at"]["device"].append(2)
    assert r.locs == ["add @ m.py:1:2"] and r.lanes == [2]
    assert r.first_divergence == {"op": "stablehlo.add", "at": {"device": [0, 1]}}
