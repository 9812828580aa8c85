"""Batch splits over edge servers of unequal speed (EOP VEE '22 Eq. 5, applied to servers).

EOP's balance (Eq. 5) gives each device the share of an op that makes both finish together:
with per-unit times ``t_i`` the shares are proportional to ``1 / t_i``. Between edge servers the
unit is one item of the batch (FlexPie's setting: every server runs the whole model on its slice
of the batch), a slice must be a whole number of items, and each server has a fixed cost per
request besides (its transfers and dispatch). So the balanced split here is the integer split
minimising the largest predicted finish time ``overhead_i + items_i * per_item_i``, found by brute
force over the splits (a batch of a few dozen items over a few servers is a few thousand splits);
a server may get no item at all, which is how one too slow to help is left out.

Servers that share something (a machine, as in the local testbed, or a network link) slow each
other down when they run at once: each server may carry a second time per item, measured while
every server runs (``shared_ms_per_item``), which prices a split that keeps more than one server
busy; a single server is priced by its time alone. On the 2-vCPU testbed, priced from times
alone, the concurrent splits were under-predicted by 7-23% (BENCHMARKS.md, "Several edge
servers on Ray").

Baselines: ``equal`` (the batch divided as evenly as it goes), ``proportional`` (shares by speed,
rounded, ignoring the overheads: Eq. 5 as written), ``fixed`` (given ratios). ``auto`` picks the
plan predicted fastest among them and the single servers, so it is never predicted slower than
the fastest server alone. Pure Python: no TVM, no Ray.
"""

from __future__ import annotations

import dataclasses
import itertools
import math


class ServerPlanError(ValueError):
    """A batch split that cannot be made as asked (the message says why)."""


@dataclasses.dataclass(frozen=True)
class ServerModel:
    """One edge server: milliseconds per item of the batch (alone, and while the other servers
    run too: ``shared_ms_per_item``, None where not measured) and per request (fixed overhead)."""

    name: str
    ms_per_item: float
    overhead_ms: float = 0.0
    shared_ms_per_item: float | None = None

    def finish_ms(self, items: int, shared: bool = False) -> float:
        """Predicted time for a slice of ``items`` (0 items: the server is not used), ``shared``:
        while other servers run slices too."""
        per = self.shared_ms_per_item if shared and self.shared_ms_per_item else self.ms_per_item
        return self.overhead_ms + items * per if items else 0.0


@dataclasses.dataclass(frozen=True)
class SplitPlan:
    """Items of the batch per server (in the servers' order) and the predicted latency."""

    how: str
    slices: tuple[int, ...]
    predicted_ms: float

    @property
    def ratios(self) -> tuple[float, ...]:
        total = sum(self.slices)
        return tuple(s / total for s in self.slices)


def makespan(servers: list[ServerModel], slices) -> float:
    shared = sum(1 for n in slices if n) > 1
    return max(s.finish_ms(n, shared) for s, n in zip(servers, slices))


def _plan(how: str, servers: list[ServerModel], slices) -> SplitPlan:
    return SplitPlan(how, tuple(int(n) for n in slices), makespan(servers, slices))


def _check(servers: list[ServerModel], batch: int) -> None:
    if not servers:
        raise ServerPlanError("no server to split the batch over")
    if batch < 1:
        raise ServerPlanError(f"batch {batch}: nothing to split")
    bad = [s.name for s in servers if not (s.ms_per_item > 0 and s.overhead_ms >= 0
                                            and (s.shared_ms_per_item is None or s.shared_ms_per_item > 0))]
    if bad:
        raise ServerPlanError(f"server {bad[0]!r}: its times per item must be > 0 and its overhead >= 0")


def compositions(batch: int, n: int):
    """Every way to write ``batch`` as ``n`` ordered non-negative integers."""
    for bars in itertools.combinations(range(batch + n - 1), n - 1):
        edges = (-1, *bars, batch + n - 1)
        yield tuple(b - a - 1 for a, b in zip(edges, edges[1:]))


def balanced(servers: list[ServerModel], batch: int) -> SplitPlan:
    """Eq. 5's balance in whole items: the split with the least predicted makespan (ties: the one
    using more servers evenly, then the first in order)."""
    _check(servers, batch)
    best = min(compositions(batch, len(servers)),
               key=lambda c: (makespan(servers, c), max(c) - min(c)))
    return _plan("balanced", servers, best)


def round_shares(shares: list[float], batch: int) -> tuple[int, ...]:
    """Largest-remainder rounding of real shares (summing to 1) to whole items summing to ``batch``."""
    raw = [s * batch for s in shares]
    out = [math.floor(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - out[i]), i))
    for i in order[: batch - sum(out)]:
        out[i] += 1
    return tuple(out)


def fixed(servers: list[ServerModel], batch: int, ratios: list[float], how: str = "fixed") -> SplitPlan:
    """The batch cut by the given ratios (any positive scale), rounded to whole items."""
    _check(servers, batch)
    if len(ratios) != len(servers) or any(not (r >= 0) for r in ratios) or sum(ratios) <= 0:
        raise ServerPlanError(f"{len(servers)} servers need {len(servers)} ratios >= 0 (not all 0), "
                              f"got {list(ratios)}")
    total = sum(ratios)
    return _plan(how, servers, round_shares([r / total for r in ratios], batch))


def equal(servers: list[ServerModel], batch: int) -> SplitPlan:
    return fixed(servers, batch, [1.0] * len(servers), "equal")


def proportional(servers: list[ServerModel], batch: int) -> SplitPlan:
    """Shares proportional to speed (1 / time per item), rounded: Eq. 5 without the overheads."""
    _check(servers, batch)
    return fixed(servers, batch, [1.0 / s.ms_per_item for s in servers], "proportional")


def alone(servers: list[ServerModel], batch: int, i: int) -> SplitPlan:
    _check(servers, batch)
    return _plan(f"{servers[i].name} alone", servers, [batch if j == i else 0 for j in range(len(servers))])


def auto(servers: list[ServerModel], batch: int, candidates: list[SplitPlan] = ()) -> SplitPlan:
    """The plan predicted fastest among balanced, proportional, equal, each server alone and
    ``candidates``; a single server wins ties (fewer servers to fail), so the choice is never
    predicted slower than the fastest server alone."""
    singles = [alone(servers, batch, i) for i in range(len(servers))]
    plans = singles + [balanced(servers, batch), proportional(servers, batch), equal(servers, batch), *candidates]
    best = min(plans, key=lambda p: p.predicted_ms)
    return dataclasses.replace(best, how=f"auto ({best.how})")
