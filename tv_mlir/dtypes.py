"""Element types whose numpy types live in ml_dtypes (bf16, the f8 and f6 floats, int4),
looked up only when a program has one: importing ml_dtypes costs ~1.4 s on this machine,
more than a small verification's symbolic run, and most programs use f32 and integers."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

V = TypeVar("V")


def ml_dtype(name: str) -> type:
    """The ml_dtypes scalar type `name` (`bfloat16`, `float8_e4m3fn`, ...), imported now."""
    return getattr(importlib.import_module("ml_dtypes"), name)


class Lazy(Mapping[str, V], Generic[V]):
    """A fixed table whose values are made when read (each read makes it again: the
    makers are attribute look-ups once their module is imported). Keys and `in` never
    make a value."""

    def __init__(self, makers: Mapping[str, Callable[[], V]]) -> None:
        self._makers = dict(makers)

    def __getitem__(self, key: str) -> V:
        return self._makers[key]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._makers)

    def __len__(self) -> int:
        return len(self._makers)
