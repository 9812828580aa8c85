"""Plan: JSON round trip, part bounds, and validation against an OpGraph."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import mlp_model
from tvm_partition.devices import parse_devices
from tvm_partition.ir.graph import OpGraph
from tvm_partition.plan import OnDevice, Plan, PlanError, Split


@pytest.fixture(scope="module")
def graph():
    return OpGraph(mlp_model().mod)


@pytest.fixture(scope="module")
def devices():
    return parse_devices("cpu,cpu")


def test_json_round_trip(graph, devices):
    ids = list(graph.ops)
    plan = Plan(devices, {ids[0]: Split(0, (0.25, 0.75), ("cpu1", "cpu")), ids[3]: OnDevice("cpu1")},
                strategy="manual", predicted_latency_us=12.5, meta={"note": "x"})
    again = Plan.loads(plan.dumps())
    assert again == plan
    assert json.loads(plan.dumps())["version"] == 1
    again.validate(graph)


@pytest.mark.parametrize(
    "size,ratios,expected",
    [
        (3, (0.5, 0.5), [("a", 0, 2), ("b", 2, 3)]),  # uneven: batch 3 at 0.5
        (4, (0.0, 1.0), [("b", 0, 4)]),  # a zero part disappears
        (4, (1.0, 0.0), [("a", 0, 4)]),
        (4, (0.1, 0.9), [("b", 0, 4)]),  # rounds to zero rows on a
        (16, (0.3, 0.7), [("a", 0, 5), ("b", 5, 16)]),
    ],
)
def test_parts(size, ratios, expected):
    assert Split(0, ratios, ("a", "b")).parts(size) == expected


def test_parts_respect_granule():
    parts = Split(1, (0.3, 0.7), ("a", "b")).parts(32, granule=8)
    assert parts == [("a", 0, 8), ("b", 8, 32)]


@given(size=st.integers(1, 300), r=st.floats(0, 1), granule=st.sampled_from([1, 2, 4]))
def test_parts_cover_exactly(size, r, granule):
    parts = Split(0, (r, 1 - r), ("a", "b")).parts(size, granule if size % granule == 0 else 1)
    assert parts[0][1] == 0 and parts[-1][2] == size
    assert all(lo < hi for _, lo, hi in parts)
    assert all(p[2] == q[1] for p, q in zip(parts, parts[1:]))


@pytest.mark.parametrize(
    "decision,message",
    [
        (Split(0, (0.7, 0.7), ("cpu1", "cpu")), "sum to"),
        (Split(0, (1.5, -0.5), ("cpu1", "cpu")), r"outside \[0, 1\]"),
        (Split(0, (0.5, 0.5), ("cpu1", "cpu1")), "twice"),
        (Split(0, (1.0,), ("cpu1",)), "at least two"),
        (Split(0, (0.5, 0.5), ("gpu", "cpu")), "unknown device"),
        (OnDevice("tpu"), "unknown device"),
    ],
)
def test_bad_decisions_refused(graph, devices, decision, message):
    op = list(graph.ops)[0]
    with pytest.raises(PlanError, match=message):
        Plan(devices, {op: decision}).validate(graph)


def test_unknown_op_refused(graph, devices):
    with pytest.raises(PlanError, match="does not have"):
        Plan(devices, {"999_nope": OnDevice("cpu")}).validate(graph)


def test_illegal_dim_refused_with_reason(graph, devices):
    softmax = next(i for i, op in graph.ops.items() if op.kind == "softmax")
    with pytest.raises(PlanError, match="softmax normalises along axis 1"):
        Plan(devices, {softmax: Split(1, (0.5, 0.5), ("cpu1", "cpu"))}).validate(graph)


@pytest.mark.parametrize(
    "text,message",
    [
        ("{", "not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"version": 99, "devices": []}', "version 99"),
        ('{"version": 1, "devices": []}', "no devices"),
        ('{"version": 1, "devices": [{"name": "cpu"}]}', "devices"),
        ('{"version": 1, "devices": [{"name": "cpu", "kind": "cpu", "index": 0, "target": {"kind": "llvm"}}],'
         ' "ops": {"a": {"kind": "teleport"}}}', "kind must be"),
    ],
)
def test_bad_json_refused(text, message):
    with pytest.raises(PlanError, match=message):
        Plan.loads(text)


@pytest.mark.parametrize(
    "device,message",
    [
        ({"name": "x", "kind": "tpu", "index": 0, "target": {"kind": "llvm"}}, "not cpu or gpu"),
        ({"name": "x", "kind": "gpu", "index": 0, "target": {"kind": "llvm"}}, "needs a target of kind 'cuda'"),
    ],
)
def test_bad_devices_refused(device, message):
    host = {"name": "cpu", "kind": "cpu", "index": 0, "target": {"kind": "llvm"}}
    with pytest.raises(PlanError, match=message):
        Plan.from_json({"version": 1, "devices": [host, device]})


def test_target_tvm_rejects_is_refused(graph):
    plan = Plan.from_json({"version": 1, "devices": [
        {"name": "cpu", "kind": "cpu", "index": 0, "target": {"kind": "llvm", "mcpu": "no-such-cpu", "bogus": 1}}]})
    with pytest.raises(PlanError, match="TVM rejects target"):
        plan.validate(graph)


def test_meta_must_be_an_object():
    host = {"name": "cpu", "kind": "cpu", "index": 0, "target": {"kind": "llvm"}}
    with pytest.raises(PlanError, match="'meta' must be an object"):
        Plan.from_json({"version": 1, "devices": [host], "meta": [1, 2]})
