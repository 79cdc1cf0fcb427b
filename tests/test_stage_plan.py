"""`choose_cuts` (tv_mlir/stages/plan.py) keeps its live sets as bits updated from cut to
cut; here it is held to the plain definition (a set of live values per cut, recomputed)
on random flat programs and random lineages: both must choose the same cuts, loops
included (before a reference `while`, the admissible cut that puts the other's next)."""
from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from tv_mlir.stages.lineage import Link
from tv_mlir.stages.plan import WINDOW, Cuts, Side, choose_cuts


@dataclass
class _Op:
    results: tuple[str, ...]
    name: str = "stablehlo.add"


def _side(prefix: str, rng: random.Random, n: int) -> Side:
    """A flow of n ops, some with two results, each value last used a few ops later (or
    never, or by the program's return)."""
    side = Side(module=None)  # type: ignore[arg-type]  # choose_cuts reads the flow only
    for c in range(n):
        results = tuple(f"{prefix}{c}_{k}" for k in range(1 if rng.random() < 0.8 else 2))
        name = "stablehlo.while" if rng.random() < 0.15 else "stablehlo.add"
        side.flow.append(_Op(results, name))  # type: ignore[arg-type]
        for r in results:
            side.kind[r] = "flow"
            side.position[r] = c
            roll = rng.random()
            if roll < 0.1:
                continue  # dead
            side.last_use[r] = n if roll < 0.15 else min(n, c + rng.randint(0, 6))
    side.kind[f"{prefix}const"] = "const"
    return side


def _reference_cuts(ref: Side, other: Side, links: dict[str, Link]) -> Cuts:
    """The definition, with a frozenset per cut."""
    def live(side: Side) -> list[frozenset[str]]:
        return [frozenset(v for v, last in side.last_use.items() if side.position[v] < c <= last)
                for c in range(len(side.flow) + 1)]
    ref_live, other_live = live(ref), live(other)
    targets: list[frozenset[str] | None] = []
    newest: list[int] = []
    for vs in other_live:
        links_ = [links.get(v) for v in vs]
        if any(lk is None or ref.kind.get(lk.ref) == "const" for lk in links_):
            targets.append(None)
            newest.append(1 << 60)
            continue
        # A value holds its own reference value and its equal ones (`Link.also`); it is
        # cut at once the oldest of them is made.
        targets.append(frozenset(r for lk in links_ if lk is not None for r in (lk.ref, *lk.also)))
        newest.append(max((min(ref.position.get(r, -1) for r in (lk.ref, *lk.also))
                           for lk in links_ if lk is not None), default=-1))
    reachable = set().union(*(t for t in targets if t is not None))
    cuts_r, cuts_o = [0], [0]
    n_r, n_o = len(ref.flow), len(other.flow)
    for i in range(1, n_r + 1):
        need = ref_live[i] & frozenset(ref.position)
        if not need <= reachable:
            continue
        j0 = cuts_o[-1]

        def ok(j: int, i: int = i, j0: int = j0, need: frozenset[str] = need) -> bool:
            t = targets[j]
            return t is not None and need <= t and newest[j] < i and not (j == j0 and i == cuts_r[-1])
        end = min(n_o, j0 + WINDOW)
        first = [j for j in range(j0, end) if ok(j)]
        if not first:
            continue
        j = first[0]
        # Before a reference loop: the cut that puts the other's loop next, when admissible
        # and no loop of the other lies between (stages/loops.py proves such a stage).
        if i < n_r and ref.flow[i].name == "stablehlo.while":
            whiles = [k for k in range(j, end) if other.flow[k].name == "stablehlo.while"]
            if whiles and ok(whiles[0]):
                j = whiles[0]
        cuts_r.append(i)
        cuts_o.append(j)
    cuts_r.append(n_r)
    cuts_o.append(n_o)
    keep_r, keep_o = [cuts_r[0]], [cuts_o[0]]
    for a, b in zip(cuts_r[1:], cuts_o[1:]):
        if (a, b) != (keep_r[-1], keep_o[-1]):
            keep_r.append(a)
            keep_o.append(b)
    return Cuts(tuple(keep_r), tuple(keep_o))


@pytest.mark.parametrize("seed", range(60))
def test_cuts_match_the_definition(seed: int) -> None:
    rng = random.Random(seed)
    ref = _side("r", rng, rng.randint(1, 40))
    other = _side("o", rng, rng.randint(1, 50))
    ref_values = list(ref.position) + ["rarg", "rconst"]
    ref.kind["rarg"] = "arg"
    links: dict[str, Link] = {}
    for v in other.position:
        roll = rng.random()
        if roll < 0.8:  # mostly the reference value at about the same depth
            near = [r for r in ref.position if abs(ref.position[r] * len(other.flow) / max(len(ref.flow), 1)
                                                   - other.position[v]) < 3]
            links[v] = Link(rng.choice(near or ref_values))
            if rng.random() < 0.2:  # equal values held too: flow values near it
                links[v] = Link(links[v].ref, also=tuple(rng.sample(near, min(len(near), 2))))
        elif roll < 0.9:
            links[v] = Link(rng.choice(ref_values))
    got = choose_cuts(ref, other, links)
    assert got == _reference_cuts(ref, other, links)

