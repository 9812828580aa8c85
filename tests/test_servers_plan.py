"""Batch splits over unequal servers (planners/servers.py) against brute-force oracles."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvm_partition.planners import servers as sp

server = st.builds(sp.ServerModel, name=st.just("s"),
                   ms_per_item=st.floats(0.1, 50, allow_nan=False), overhead_ms=st.floats(0, 20, allow_nan=False),
                   shared_ms_per_item=st.one_of(st.none(), st.floats(0.1, 80, allow_nan=False)))
cluster = st.lists(server, min_size=1, max_size=3).map(
    lambda ss: [sp.ServerModel(f"s{i}", s.ms_per_item, s.overhead_ms, s.shared_ms_per_item) for i, s in enumerate(ss)])


def oracle(servers, batch):
    """Every integer split by nested loops, its makespan computed from scratch: the time alone
    where one server runs, the shared time (where measured) where several do."""
    best = float("inf")
    for c in itertools.product(range(batch + 1), repeat=len(servers)):
        if sum(c) != batch:
            continue
        several = sum(1 for n in c if n) > 1
        per = [(s.shared_ms_per_item or s.ms_per_item) if several else s.ms_per_item for s in servers]
        best = min(best, max((s.overhead_ms + n * p) if n else 0.0 for s, n, p in zip(servers, c, per)))
    return best


@settings(max_examples=150, deadline=None)
@given(cluster, st.integers(1, 12))
def test_balanced_is_the_best_integer_split(servers, batch):
    plan = sp.balanced(servers, batch)
    assert sum(plan.slices) == batch and all(n >= 0 for n in plan.slices)
    assert plan.predicted_ms == pytest.approx(oracle(servers, batch))


@settings(max_examples=150, deadline=None)
@given(cluster, st.integers(1, 12))
def test_auto_is_never_predicted_slower_than_the_fastest_server_alone(servers, batch):
    plan = sp.auto(servers, batch)
    fastest_alone = min(s.overhead_ms + batch * s.ms_per_item for s in servers)
    assert plan.predicted_ms <= fastest_alone + 1e-9
    assert plan.predicted_ms <= sp.equal(servers, batch).predicted_ms + 1e-9
    assert plan.predicted_ms == pytest.approx(oracle(servers, batch))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.01, 10), min_size=1, max_size=4), st.integers(1, 30))
def test_rounded_shares_sum_to_the_batch_and_stay_within_one_item(shares, batch):
    total = sum(shares)
    out = sp.round_shares([s / total for s in shares], batch)
    assert sum(out) == batch
    assert all(abs(n - s / total * batch) < 1 for n, s in zip(out, shares))


def test_servers_that_slow_each_other_down_are_priced_shared():
    # A and B each 1 ms per item alone, 3 ms while both run: splitting 8 items costs 12 ms, A
    # alone 8 ms, so the balance keeps one server; without the shared times it split 4 + 4
    servers = [sp.ServerModel("A", 1.0, shared_ms_per_item=3.0), sp.ServerModel("B", 1.0, shared_ms_per_item=3.0)]
    assert sp.equal(servers, 8).predicted_ms == 12.0
    assert sp.balanced(servers, 8).predicted_ms == 8.0 and 0 in sp.balanced(servers, 8).slices
    assert sp.balanced([sp.ServerModel("A", 1.0), sp.ServerModel("B", 1.0)], 8).slices == (4, 4)


def test_eq5_balance_without_overheads_is_proportional_to_speed():
    # A twice as fast as B: 2/3 of the batch on A; the finish times meet (Eq. 5)
    servers = [sp.ServerModel("A", 1.0), sp.ServerModel("B", 2.0)]
    plan = sp.balanced(servers, 9)
    assert plan.slices == sp.proportional(servers, 9).slices
    assert servers[0].finish_ms(plan.slices[0]) == servers[1].finish_ms(plan.slices[1])


def test_a_server_too_slow_to_help_gets_nothing():
    servers = [sp.ServerModel("A", 1.0), sp.ServerModel("B", 1.0, overhead_ms=100.0)]
    assert sp.balanced(servers, 4).slices == (4, 0)
    assert sp.auto(servers, 4).how.startswith("auto (A alone")


def test_equal_and_fixed():
    servers = [sp.ServerModel(n, 1.0) for n in "ABC"]
    assert sorted(sp.equal(servers, 8).slices) == [2, 3, 3]
    assert sp.fixed(servers, 8, [2, 1, 1]).slices == (4, 2, 2)


@pytest.mark.parametrize("call,pattern", [
    (lambda s: sp.fixed(s, 4, [1.0]), r"2 servers need 2 ratios"),
    (lambda s: sp.fixed(s, 4, [0, 0]), r"not all 0"),
    (lambda s: sp.balanced([], 4), r"no server"),
    (lambda s: sp.balanced(s, 0), r"batch 0"),
    (lambda s: sp.balanced([sp.ServerModel("Z", 0.0)], 2), r"server 'Z'"),
])
def test_bad_input_is_refused(call, pattern):
    with pytest.raises(sp.ServerPlanError, match=pattern):
        call([sp.ServerModel("A", 1.0), sp.ServerModel("B", 2.0)])
