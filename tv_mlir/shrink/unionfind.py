"""The shrink stage's one union-find: dimension nodes that ops force equal (`dims`), and
classes that scale or product relations tie together (`plan`)."""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


@dataclass
class UnionFind(Generic[T]):
    parent: dict[T, T] = field(default_factory=dict)

    @classmethod
    def of(cls, items: Iterable[T], pairs: Iterable[tuple[T, T]] = ()) -> UnionFind[T]:
        uf: UnionFind[T] = cls()
        for x in items:
            uf.add(x)
        for keep, other in pairs:
            uf.union(keep, other)
        return uf

    def add(self, x: T) -> None:
        self.parent.setdefault(x, x)

    def __contains__(self, x: object) -> bool:
        return x in self.parent

    def __iter__(self) -> Iterator[T]:
        """The items in the order they were added."""
        return iter(self.parent)

    def find(self, x: T) -> T:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]  # path halving
            x = self.parent[x]
        return x

    def union(self, keep: T, other: T) -> T | None:
        """Joins the two sets under `keep`'s root, so that what callers attach to roots can
        be merged into it. -> the root that stopped being one, or None if already joined."""
        rk, ro = self.find(keep), self.find(other)
        if rk == ro:
            return None
        self.parent[ro] = rk
        return ro


__all__ = ["UnionFind"]
