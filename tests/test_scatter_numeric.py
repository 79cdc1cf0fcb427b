"""The numeric scatter's vectorised path (`semantics/shape._numeric_scatter`): a float
scatter whose body is add/maximum/minimum/multiply(%cur, %upd) runs as one ufunc.at call.
It must give the general path's values bit for bit (the numeric runs' fingerprints and the
counterexample replay read them): the same operations in the same order on every position.
Each case runs the numeric interpreter with the switch on and off and compares the bits;
the inputs are chosen so that another order, another operand order or a kept out-of-range
update shows (float addition that does not associate, +0 against -0, NaN signs)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import numeric_values, prepared
from tv_mlir.semantics import shape

SCATTER_2D = """module @m {{
  func.func public @main(%x: tensor<4x5xf32>, %idx: tensor<6x2xi32>, %u: tensor<6x2x2xf32>) -> tensor<4x5xf32> {{
    %0 = "stablehlo.scatter"(%x, %idx, %u) <{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>, unique_indices = false}}> ({{
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = {op} {a}, {b} : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }}) : (tensor<4x5xf32>, tensor<6x2xi32>, tensor<6x2x2xf32>) -> tensor<4x5xf32>
    return %0 : tensor<4x5xf32>
  }}
}}
"""

# The embedding gradient's form in the Llama training step: batching dims, one index per row.
SCATTER_BATCHED = """module @m {
  func.func public @main(%x: tensor<2x3x5xf32>, %idx: tensor<2x3x1x1xi32>, %u: tensor<2x3x1xf32>) -> tensor<2x3x5xf32> {
    %0 = "stablehlo.scatter"(%x, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [2], input_batching_dims = [0, 1], scatter_indices_batching_dims = [0, 1], scatter_dims_to_operand_dims = [2], index_vector_dim = 3>, unique_indices = false}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<2x3x5xf32>, tensor<2x3x1x1xi32>, tensor<2x3x1xf32>) -> tensor<2x3x5xf32>
    return %0 : tensor<2x3x5xf32>
  }
}
"""

# No scatter dims: the update is one window, placed by one index (the flax train step's
# form, which the first version of the vectorised path failed on).
SCATTER_ONE_WINDOW = """module @m {
  func.func public @main(%x: tensor<4x3x2xf32>, %idx: tensor<1xi32>, %u: tensor<4x3xf32>) -> tensor<4x3x2xf32> {
    %0 = "stablehlo.scatter"(%x, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [2], scatter_dims_to_operand_dims = [2], index_vector_dim = 0>, unique_indices = false}> ({
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x3x2xf32>, tensor<1xi32>, tensor<4x3xf32>) -> tensor<4x3x2xf32>
    return %0 : tensor<4x3x2xf32>
  }
}
"""

# Rows hit several times (the order of a float sum shows), one window sticking out (skipped
# whole), one negative start (skipped).
INDICES = np.array([[1, 2], [1, 2], [3, 1], [1, 2], [0, 0], [-1, 0]], dtype=np.int64)


def _updates() -> np.ndarray:
    u = np.zeros((6, 2, 2))
    # 0 + 1 + 1e16 - 1e16 is 0 in float64 in this order (1e16 + 1 rounds to 1e16), 1 in
    # the reverse order.
    u[0], u[1], u[3] = 1.0, 1e16, -1e16
    u[4] = [[-0.0, np.nan], [0.0, -np.nan]]
    u[2], u[5] = 7.0, 9.0
    return u


def _operand() -> np.ndarray:
    x = np.arange(20, dtype=np.float64).reshape(4, 5) - 3.0
    x[0, 0], x[0, 1], x[1, 0] = 0.0, -np.nan, -0.0
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _run(text: str, inputs: list[np.ndarray], vector: bool, monkeypatch: pytest.MonkeyPatch,
         calls: list[int]) -> np.ndarray:
    monkeypatch.setattr(shape, "VECTOR_SCATTER", vector)
    original = shape._numeric_scatter

    def spy(*a, **k):
        got = original(*a, **k)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(shape, "_numeric_scatter", spy)
    return numeric_values(prepared(text), inputs)[0]


@pytest.mark.parametrize("op", ["stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.multiply"])
@pytest.mark.parametrize("order", ["cur_upd", "upd_cur"])
def test_vector_path_is_the_general_paths_bits(op: str, order: str, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = ("%p", "%q") if order == "cur_upd" else ("%q", "%p")
    text = SCATTER_2D.format(op=op, a=a, b=b)
    inputs = [_operand(), INDICES, _updates()]
    calls: list[int] = []
    fast = _run(text, inputs, True, monkeypatch, calls)
    slow = _run(text, inputs, False, monkeypatch, calls)
    assert np.array_equal(_bits(fast), _bits(slow)), (op, order, fast, slow)
    # The vectorised path takes the body only with its operands as (%cur, %upd).
    assert calls[0] is (order == "cur_upd")


def test_order_of_a_sum_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows hit three times add 1, 1e16, -1e16 in update order: 0 there, where the
    reverse order gives 1."""
    text = SCATTER_2D.format(op="stablehlo.add", a="%p", b="%q")
    x = np.zeros((4, 5))
    got = _run(text, [x, INDICES, _updates()], True, monkeypatch, [])
    assert got[1, 2] == 0.0 and got[2, 3] == 0.0
    assert got[3, 1] == 0.0 and got[4 - 1, 2] == 0.0  # the window at (3, 1) sticks out: skipped
    assert got[0, 0] == 0.0 and np.signbit(got[0, 0]) == np.signbit(0.0 + -0.0)


def test_batched_form(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 3, 5))
    idx = rng.integers(-1, 6, size=(2, 3, 1, 1))  # -1 and 5 out of range: skipped
    u = rng.normal(size=(2, 3, 1))
    calls: list[int] = []
    fast = _run(SCATTER_BATCHED, [x, idx, u], True, monkeypatch, calls)
    slow = _run(SCATTER_BATCHED, [x, idx, u], False, monkeypatch, calls)
    assert calls[0] is True
    assert np.array_equal(_bits(fast), _bits(slow))


@pytest.mark.parametrize("index", [0, 1, 2, -1])
def test_one_window_without_scatter_dims(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x, u = rng.normal(size=(4, 3, 2)), rng.normal(size=(4, 3))
    idx = np.array([index], dtype=np.int64)  # 2 and -1: the window leaves the operand, skipped
    calls: list[int] = []
    fast = _run(SCATTER_ONE_WINDOW, [x, idx, u], True, monkeypatch, calls)
    slow = _run(SCATTER_ONE_WINDOW, [x, idx, u], False, monkeypatch, calls)
    assert calls[0] is True
    assert np.array_equal(_bits(fast), _bits(slow))
