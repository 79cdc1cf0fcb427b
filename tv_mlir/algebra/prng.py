"""XLA's counter-based random bit generators, bit for bit: the numeric values of the
uninterpreted functions `philox_u32` and `threefry_u32` (stablehlo.rng_bit_generator,
tv_mlir/semantics/random.py). Written from the public algorithms (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC'11): Philox-4x32 with 10 rounds, ThreeFry-2x32 with
20 rounds. How XLA:CPU lays its ui64 state over key and counter was measured against XLA
(tests/test_ops_xla_more.py, "rng_bit_generator").

Both functions take float64 arrays that hold 32-bit words and small indices (exact in a
double) and return float64 arrays holding one 32-bit output word each, so they are values
of real-valued uninterpreted functions like the others of `algebra.special`."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

_MASK32 = np.uint64(0xFFFFFFFF)
_PHILOX_MUL = (0xD2511F53, 0xCD9E8D57)
_PHILOX_WEYL = (0x9E3779B9, 0xBB67AE85)
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_THREEFRY_PARITY = 0x1BD11BDA


def _u32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.uint64) & _MASK32


def philox4x32(counter: list[np.ndarray], key: list[np.ndarray], rounds: int = 10) -> list[np.ndarray]:
    """Philox-4x32: four 32-bit counter words and two key words (uint64 arrays holding
    32-bit values) to four output words."""
    c = [_u32(w) for w in counter]
    k = [_u32(w) for w in key]
    for _ in range(rounds):
        p0 = c[0] * np.uint64(_PHILOX_MUL[0])  # < 2**64: exact in uint64
        p1 = c[2] * np.uint64(_PHILOX_MUL[1])
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k[0], p1 & _MASK32,
             (p0 >> np.uint64(32)) ^ c[3] ^ k[1], p0 & _MASK32]
        k = [(k[0] + np.uint64(_PHILOX_WEYL[0])) & _MASK32, (k[1] + np.uint64(_PHILOX_WEYL[1])) & _MASK32]
    return c


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _MASK32


def threefry2x32(counter: list[np.ndarray], key: list[np.ndarray]) -> list[np.ndarray]:
    """ThreeFry-2x32, 20 rounds: a key injection after every 4 rounds (5 in all, the s-th
    adding key words s+1, s+2 of the schedule (k0, k1, k0 ^ k1 ^ parity) and s)."""
    ks = [_u32(key[0]), _u32(key[1])]
    ks.append(ks[0] ^ ks[1] ^ np.uint64(_THREEFRY_PARITY))
    x = [(_u32(counter[0]) + ks[0]) & _MASK32, (_u32(counter[1]) + ks[1]) & _MASK32]
    for s in range(5):
        for r in _THREEFRY_ROTATIONS[s % 2]:
            x0 = (x[0] + x[1]) & _MASK32
            x = [x0, _rotl(x[1], r) ^ x0]
        x = [(x[0] + ks[(s + 1) % 3]) & _MASK32, (x[1] + ks[(s + 2) % 3] + np.uint64(s + 1)) & _MASK32]
    return x


def _words(v: np.ndarray) -> list[np.ndarray]:
    return [v & _MASK32, v >> np.uint64(32)]


def _as_u64(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float64).astype(np.uint64)


def philox_u32(k0: np.ndarray, k1: np.ndarray, c0: np.ndarray, c1: np.ndarray, c2: np.ndarray,
               c3: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Word i of the Philox stream of key (k0, k1) from the 128-bit counter (c0 .. c3, least
    significant first): word i % 4 of block (counter + i // 4) mod 2**128."""
    k0, k1, c0, c1, c2, c3, i = np.broadcast_arrays(*(_as_u64(a) for a in (k0, k1, c0, c1, c2, c3, i)))
    low = c0 | (c1 << np.uint64(32))
    block = i >> np.uint64(2)
    new_low = low + block  # wraps modulo 2**64, the carry goes to the high half
    carry = (new_low < low).astype(np.uint64)
    high = (c2 | (c3 << np.uint64(32))) + carry
    out = philox4x32(_words(new_low) + _words(high), [k0, k1])
    which = (i & np.uint64(3)).astype(np.int64)
    return np.choose(which, out).astype(np.float64)


def threefry_u32(k0: np.ndarray, k1: np.ndarray, s0: np.ndarray, s1: np.ndarray, h: np.ndarray,
                 w: np.ndarray) -> np.ndarray:
    """Word w (0 or 1) of ThreeFry-2x32 with key (k0, k1) at the 64-bit counter
    (s0 + 2**32 s1 + h) mod 2**64."""
    k0, k1, s0, s1, h, w = np.broadcast_arrays(*(_as_u64(a) for a in (k0, k1, s0, s1, h, w)))
    counter = (s0 | (s1 << np.uint64(32))) + h
    out = threefry2x32(_words(counter), [k0, k1])
    return np.where(w == 0, out[0], out[1]).astype(np.float64)


FUNCS: dict[str, Callable[..., np.ndarray]] = {"philox_u32": philox_u32, "threefry_u32": threefry_u32}
