"""The interface both element algebras implement. Every method is elementwise over numpy
arrays of equal shape (already broadcast by the caller), except `dot` and `reduce_sum`,
which exist so that the numeric side can use BLAS and the symbolic side flat n-ary sums."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, Protocol

import numpy as np

from tv_mlir.ir import TensorType


class Kind(str, Enum):
    """The element class of a tensor, which is all an algebra needs to know of its dtype."""

    FLOAT = "float"
    INT = "int"
    BOOL = "bool"

    @staticmethod
    def of(t: TensorType) -> Kind:
        if t.is_float:
            return Kind.FLOAT
        if t.is_bool:
            return Kind.BOOL
        return Kind.INT


# Transcendental and other non-polynomial functions treated as uninterpreted symbols by the
# symbolic algebra: name -> arity.
UNINTERPRETED = {
    "exponential": 1, "log": 1, "log_plus_one": 1, "exponential_minus_one": 1, "tanh": 1,
    "logistic": 1, "sqrt": 1, "rsqrt": 1, "cbrt": 1, "sine": 1, "cosine": 1, "tan": 1,
    "erf": 1, "atan2": 2, "power": 2,
}
# Uninterpreted functions without a stablehlo op of their name: chlo's special functions, and
# functions of a float's bits (next_after, bitcast_convert), one per float type because the
# bits depend on it. Values: `tv_mlir.algebra.special`.
_BIT_FLOATS = ("f16", "bf16", "f32", "f64")
NON_OP_UNINTERPRETED = {
    "erfc": 1, "erf_inv": 1, "lgamma": 1, "digamma": 1, "polygamma": 2, "zeta": 2,
    **{f"next_after_{d}": 2 for d in _BIT_FLOATS},
    **{f"bits_of_{d}": 1 for d in _BIT_FLOATS},
    **{f"float_of_bits_{d}": 1 for d in _BIT_FLOATS},
    # What a failed LAPACK factorisation leaves (tv_mlir/semantics/linalg.py `_failed`).
    "lapack_args": 2, "lapack_failed": 2,
    # A 32-bit word of XLA's random bit generators (tv_mlir/semantics/random.py): of the key
    # and counter words and the word's place in the stream.
    "philox_u32": 7, "threefry_u32": 6,
}
UNINTERPRETED.update(NON_OP_UNINTERPRETED)
# Of those, the ones finite at every finite argument (the symbolic algebras' `_domain`).
FINITE_UFS = frozenset({"erfc", *(f"bits_of_{d}" for d in _BIT_FLOATS), "philox_u32", "threefry_u32"})
# Functions positive on every finite real (over the reals: no underflow to 0), and those
# positive wherever their first argument is (b^e for b > 0: RoPE's inverse frequencies
# 1 / 10000^(2i/d) divide by one; the square roots of a positive variance). Both cores'
# positivity by construction reads these (`fast.known_sign`, `symbolic.known_positive`).
POSITIVE_UFS = frozenset({"exponential", "logistic"})
POSITIVE_OF_POSITIVE_UFS = frozenset({"power", "sqrt", "rsqrt", "cbrt"})


class Algebra(Protocol):
    symbolic: bool

    def constant(self, values: np.ndarray, kind: Kind) -> np.ndarray: ...
    def full(self, shape: Sequence[int], value: Any, kind: Kind) -> np.ndarray: ...

    def add(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def sub(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def mul(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def div(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def rem(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def neg(self, a: np.ndarray, kind: Kind) -> np.ndarray: ...
    def abs(self, a: np.ndarray, kind: Kind) -> np.ndarray: ...
    def sign(self, a: np.ndarray, kind: Kind) -> np.ndarray: ...
    def max(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def min(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def floor(self, a: np.ndarray) -> np.ndarray: ...
    def ceil(self, a: np.ndarray) -> np.ndarray: ...
    def round_even(self, a: np.ndarray) -> np.ndarray: ...
    def round_afz(self, a: np.ndarray) -> np.ndarray: ...
    def is_finite(self, a: np.ndarray) -> np.ndarray: ...
    def compare(self, direction: str, a: np.ndarray, b: np.ndarray, kind: Kind, total_order: bool) -> np.ndarray: ...
    def select(self, pred: np.ndarray, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray: ...
    def logic(self, op: str, a: np.ndarray, b: np.ndarray | None, t: TensorType) -> np.ndarray: ...
    def convert(self, a: np.ndarray, src: TensorType, dst: TensorType) -> np.ndarray: ...
    def uf(self, name: str, args: Sequence[np.ndarray]) -> np.ndarray: ...
    def wrap(self, a: np.ndarray, t: TensorType) -> np.ndarray:
        """Integers reduced into the range of the fixed-width type t (two's complement)."""

    def dot(self, a: np.ndarray, b: np.ndarray, kind: Kind) -> np.ndarray:
        """(B, M, K) x (B, N, K) -> (B, M, N)."""

    def reduce_sum(self, a: np.ndarray, axes: tuple[int, ...], kind: Kind) -> np.ndarray: ...

    def index_value(self, x: Any) -> int | None:
        """A scalar integer element as a Python int, or None when it is symbolic."""

    def positions(self, s: Any, hi: int, clamp: bool) -> list[tuple[int, Any]]:
        """(position, condition) pairs for an index element s over 0..hi: clamped into the
        range (gather, dynamic_slice) or, without clamp, only the in-range ones (scatter)."""

    def choose(self, options: Sequence[tuple[Any, Any]], kind: Kind) -> Any:
        """The element of the first option whose condition holds (conditions exhaustive)."""

    def all_of(self, conds: Sequence[Any]) -> Any: ...

    def constant_value(self, x: Any, kind: Kind) -> float | int | bool | None:
        """A scalar element as a Python value when it is a known constant, else None."""

    def scalar(self, x: Any) -> np.ndarray:
        """A 0-d array holding one element, for running scalar regions."""

    def canonical(self, arr: np.ndarray) -> np.ndarray:
        """Elements in a normal form (identity for numeric arrays)."""

    def content_key(self, arr: Any) -> Any:
        """A hashable key that two arrays share only if they hold the same elements as
        terms (so the same values, whatever the inputs), or None where the algebra cannot
        tell cheaply: an op applied to arguments of equal keys computes the same results."""

    def element_keys(self, arr: Any) -> list[Any] | None:
        """Per element (flat order), a hashable key that two elements share only if they
        are the same terms (`content_key` element by element), or None where the algebra
        cannot tell cheaply (`tv_mlir.execute.element_memo`)."""


class Symbolic(Algebra, Protocol):
    """What the prover needs of a symbolic algebra beyond the elementwise ops: free input
    elements, the uninterpreted functions used so far, and element equality as a term.
    The term-level work (cutting, substituting, formulas, reading values) goes through
    `tv_mlir.algebra.terms`, which knows the algebra's representation."""

    approximations: set[str]
    element_ops: int  # scalar operations performed so far (elementwise results, dot and sum terms, `choose`'s selects)

    def inputs(self, name: str, shape: tuple[int, ...], kind: Kind,
               unsigned: bool = False, width: int = 64, ieee: bool = False,
               bounds: tuple[int, int] | tuple[float, float] | None = None,
               sign: int = 0) -> tuple[np.ndarray, list[Any]]:
        """Fresh free elements for a program input, and the constraints on them (an integer
        lies in the range of its type: `width` bits, signed unless `unsigned`; a float is a
        finite real, or with `ieee` also +-inf or NaN). `bounds` (closed, within the type's
        range): an integer input's assumed range instead (`--assume`); a float input's closed
        range (assume.FloatRange, ends may be +-inf): a finite real in it, `ieee` or not (an
        algebra may not ignore it: the witness search refuses points outside). `sign` (2: > 0, 1: >= 0,
        0: nothing): what is known of a finite float input's sign (a stage input that is a
        softmax denominator); an algebra may ignore it (a weaker assumption)."""

    def element_equal(self, a: Any, b: Any, kind: Kind) -> Any:
        """a == b: a folded bool, or a term for the solver."""


# ---------------------------------------------------------------------------
# Shared by the symbolic algebras (their elements live in numpy object arrays).


def contents_key(alg: Algebra, arrays: Sequence[Any], memo: dict[int, Any] | None = None
                 ) -> tuple[Any, ...] | None:
    """The arrays' contents as one key (`Algebra.content_key`), None if any has none.
    `memo` (array id -> key, for arrays the caller keeps alive): a replicated argument or a
    result shared by several devices is the same array on each, keyed once."""
    keys = []
    for a in arrays:
        if memo is None:
            k = alg.content_key(a)
        else:
            k = memo[id(a)] if id(a) in memo else memo.setdefault(id(a), alg.content_key(a))
        if k is None:
            return None
        keys.append(k)
    return tuple(keys)


def vec(fn: Any, *arrays: np.ndarray) -> np.ndarray:
    """fn applied elementwise over object arrays (broadcast by numpy)."""
    f = np.frompyfunc(fn, len(arrays), 1)
    out = f(*arrays)
    return out if isinstance(out, np.ndarray) else scalar_array(out)


def scalar_array(x: Any) -> np.ndarray:
    a = np.empty((), dtype=object)
    a[()] = x
    return a


def input_symbol(position: int, name: str) -> str:
    """The name of a program input's symbols (`Algebra.inputs` appends the element's index).
    Its position comes first: input names are the user's, so two may coincide, or one may
    read as another's element (`x` and `x[1]`), and one symbol for two inputs proves things
    false. It has no `!`: the cores name their own constants with one (cut points `c!3`, an
    input's class `x!class`), and read a sign from `cpos!` / `cnn!` names, so an input named
    `cpos!x` would be taken as positive."""
    return f"in{position}.{name.replace('!', '_')}"


def int_range(t: TensorType) -> tuple[int, int]:
    """The values of an integer type."""
    return type_range(t.bit_width, not t.is_unsigned)


def type_range(width: int, signed: bool) -> tuple[int, int]:
    """The values of a `width`-bit integer type."""
    if signed:
        return -(1 << (width - 1)), (1 << (width - 1)) - 1
    return 0, (1 << width) - 1


def wrap_int(v: int, width: int, signed: bool) -> int:
    """v reduced into a `width`-bit type as two's complement arithmetic leaves it."""
    lo, hi = type_range(width, signed)
    return v if lo <= v <= hi else lo + (v - lo) % (1 << width)


def known_positions(v: int, hi: int, clamp: bool) -> list[tuple[int, Any]]:
    """`Algebra.positions` for an index known to be v: clamped into 0..hi, or (without
    clamp) the one position if it is in range."""
    if clamp:
        return [(min(max(v, 0), hi), True)]
    return [(v, True)] if 0 <= v <= hi else []


def dot_by_sums(a: np.ndarray, b: np.ndarray, kind: Kind, mul: Callable[[np.ndarray, np.ndarray, Kind], np.ndarray],
                total: Callable[[list[Any], Kind], Any]) -> np.ndarray:
    """(B, M, K) x (B, N, K) -> (B, M, N) for a symbolic algebra: each output element one
    flat n-ary sum (`total`) of the algebra's own products (`mul`)."""
    B, M, K = a.shape
    N = b.shape[1]
    out = np.empty((B, M, N), dtype=object)
    for bi in range(B):
        for m in range(M):
            for n in range(N):
                products = [mul(a[bi, m, k:k + 1], b[bi, n, k:k + 1], kind)[0] for k in range(K)]
                out[bi, m, n] = total(products, kind)
    return out


def reduce_by_sums(a: np.ndarray, axes: tuple[int, ...], kind: Kind,
                   total: Callable[[list[Any], Kind], Any]) -> np.ndarray:
    """A sum over `axes` for a symbolic algebra: one flat n-ary sum per output element."""
    moved = np.moveaxis(a, axes, tuple(range(a.ndim - len(axes), a.ndim)))
    keep = moved.shape[: a.ndim - len(axes)]
    flat = moved.reshape(keep + (int(np.prod(moved.shape[len(keep):], dtype=np.int64)),))
    out = np.empty(keep, dtype=object)
    for idx in np.ndindex(*keep):
        out[idx] = total(list(flat[idx]), kind)
    return out
