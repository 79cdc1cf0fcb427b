"""Arrays in `--json` (report.encode_array / decode_array / inputs_from_json): small ones as
nested lists, larger ones as {"shape", "dtype"} with sparse "entries" over a "default",
"data" or "base64", every form lossless. A witness carried back to the original sizes of an
8B-wide plan has tens of millions of elements, mostly zero: as nested lists it was a 126 MB
JSON object."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import TESTDATA
from tv_mlir import report
from tv_mlir.verdict import Counterexample, Replay, Verdict
from tv_mlir.witness.settle import py_list


def _round_trip(arr: np.ndarray) -> tuple[object, np.ndarray]:
    """The array as the report holds it (py_list: nested lists, non-finite floats named),
    through strict JSON (no NaN literals) and back."""
    encoded = report.encode_array(py_list(arr))
    back = report.decode_array(json.loads(json.dumps(encoded, allow_nan=False)))
    return encoded, back


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit for bit as JSON can tell: shape, dtype kind, values, NaN where NaN, the sign of 0."""
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    return bool(np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b)))


def _special_floats(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, shape)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 5e-324, np.finfo(np.float64).max]
    return x


DENSE = [
    np.arange(12, dtype=np.int64).reshape(3, 4) - 5,  # small: nested lists
    np.array([True, False, True]),
    _special_floats((4, 5), 0),
    np.array(-0.0),  # 0-d
    np.arange(100, dtype=np.int64) * -7 + 2**62,  # larger, not sparse: "data"
    _special_floats((10, 30), 1),
    np.random.default_rng(2).random((7, 10)) > 0.5,
    _special_floats((3, 2000), 3),  # beyond LIST_MAX: "base64"
    np.arange(5000, dtype=np.int64) - 2**40,
    np.random.default_rng(4).random((3, 1366)) > 0.5,
]


@pytest.mark.parametrize("arr", DENSE, ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_dense_arrays_round_trip(arr: np.ndarray) -> None:
    encoded, back = _round_trip(arr)
    assert _same(arr, back), (arr, back)
    if arr.size <= report.DENSE_MAX:
        assert not isinstance(encoded, dict)  # as in schema version 1: nested lists
    else:
        assert isinstance(encoded, dict) and encoded["shape"] == list(arr.shape)
        assert ("data" in encoded) == (arr.size <= report.LIST_MAX) != ("base64" in encoded)


def _sparse(shape: tuple[int, ...], dtype: type, fill: object, values: list[object]) -> np.ndarray:
    x = np.full(shape, fill, dtype=dtype)
    flat = x.reshape(-1)
    flat[np.linspace(0, flat.size - 1, len(values)).astype(int)] = values
    return x


SPARSE = [
    _sparse((64, 4), np.float64, 0.0, [1.0, -0.0, np.nan, np.inf, -np.inf, -1.5e-300]),
    _sparse((9, 9, 9), np.int64, 0, [-(2**63), 2**63 - 1, 3]),
    _sparse((300,), np.bool_, False, [True, True]),
    _sparse((300,), np.bool_, True, [False]),  # mostly its first value: default true
    _sparse((20, 20), np.float64, 1.0, [0.0, np.nan]),
    _sparse((20, 20), np.float64, np.nan, [0.0, 2.0]),
    _sparse((20, 20), np.float64, -0.0, [0.0]),  # -0.0 is not 0.0
    np.zeros((0,)),  # empty (nested lists do not hold the shape of (5, 0, 30))
    np.zeros((40, 40), dtype=np.int64),
]


@pytest.mark.parametrize("arr", SPARSE, ids=lambda a: f"{a.dtype}{list(a.shape)}")
def test_sparse_arrays_round_trip(arr: np.ndarray) -> None:
    encoded, back = _round_trip(arr)
    assert _same(arr, back), (arr, back)
    if arr.size > report.DENSE_MAX:
        assert isinstance(encoded, dict) and "entries" in encoded
        assert len(encoded["entries"]) * 4 < arr.size


def test_sparse_entries_are_index_then_value() -> None:
    x = np.zeros((8, 16))
    x[7, 3] = -2.5
    x[0, 1] = np.inf
    assert report.encode_array(py_list(x)) == {"shape": [8, 16], "dtype": "float64", "default": 0.0,
                                               "entries": [[0, 1, "inf"], [7, 3, -2.5]]}


def test_values_that_are_not_arrays_pass_through() -> None:
    for v in (12345, 2.5, "nan", True, [[1, 2], [3]], [], [10**30] * 100):
        assert report.encode_array(v) == v


def _verdict(inputs: dict[str, object]) -> Verdict:
    return Verdict("not-equivalent", "output 0 differs", counterexample=Counterexample(
        inputs, 0, [0, 0], 0.0, 1.0, replay=[Replay("xla", 0.0, 1.0, True)]))


def test_a_big_mostly_zero_witness_is_a_small_json_object() -> None:
    x = np.zeros((1024, 1024))
    x[1000, 3] = 1.0
    x[2, 1023] = np.nan
    w = np.zeros((1024, 256), dtype=np.int64)
    w[5, 5] = -7
    inputs = {"x": py_list(x), "w": py_list(w), "step": 12345, "b": [0.5, "-inf"]}
    text = report.to_json(_verdict(inputs))
    assert len(text) < 2000, len(text)  # 1.3M elements; as nested lists it was 6 MB
    d = json.loads(text)
    assert d["schema_version"] == report.SCHEMA_VERSION == 2
    assert d["counterexample"]["inputs"]["step"] == 12345 and d["counterexample"]["inputs"]["b"] == [0.5, "-inf"]
    back = report.inputs_from_json(d)
    assert list(back) == ["x", "w", "step", "b"]
    assert _same(back["x"], x) and _same(back["w"], w)
    assert back["step"] == 12345 and _same(back["b"], np.array([0.5, -np.inf]))
    assert report.inputs_from_json(d["counterexample"]).keys() == back.keys()
    with pytest.raises(ValueError):
        report.inputs_from_json(json.loads(report.to_json(Verdict("equivalent", "proved"))))


def test_the_verdict_object_keeps_its_inputs() -> None:
    """to_json takes the inputs out before dataclasses.asdict (which copies every element
    in Python); the Verdict itself must keep them."""
    x = py_list(np.eye(100))
    v = _verdict({"x": x})
    report.to_json(v)
    assert v.counterexample is not None and v.counterexample.inputs["x"] is x


def test_cli_json_witness_reproduces_the_difference_on_xla(capsys: pytest.CaptureFixture[str]) -> None:
    """A real bug twin (halo from the wrong neighbour, found at shrunk sizes, carried back
    to 64 x 4): the JSON's inputs, rebuilt, show XLA the values the JSON reports."""
    from tv_mlir import cli
    from tv_mlir.api import prepare
    from tv_mlir.options import Options
    from tv_mlir.witness.replay import xla_replay

    ref, bug = (str(TESTDATA / "halo_ring" / f"halo.small.{k}.mlir") for k in ("ref", "bug"))
    assert cli.main(["verify", "--json", ref, bug]) == 1
    d = json.loads(capsys.readouterr().out)
    c = d["counterexample"]
    assert d["verdict"] == "not-equivalent" and c["confirmed_at"] == "original sizes"
    assert isinstance(c["inputs"]["x"], dict) and "entries" in c["inputs"]["x"]  # 256 elements: sparse
    inputs = report.inputs_from_json(d)
    assert inputs["x"].shape == (64, 4)
    replay = xla_replay(prepare(ref, Options()), prepare(bug, Options()), list(inputs.values()), c["output"],
                        tuple(c["index"]))
    assert replay.error == "" and replay.confirmed
    assert (replay.ref_value, replay.other_value) == (c["ref_value"], c["other_value"])
    # and not on zeros: the witness's entries are what shows it
    zeros = [np.zeros_like(a) for a in inputs.values()]
    assert not xla_replay(prepare(ref, Options()), prepare(bug, Options()), zeros, c["output"],
                          tuple(c["index"])).confirmed
