"""On a machine with an NVIDIA GPU: split models match the unpartitioned model on cpu,gpu."""

from __future__ import annotations

import pytest

from helpers import SMALL, equal_check
from tvm_partition import frontend

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["lstm", "gru", "bert-tiny", "resnet18", "mobilenetv2"])
@pytest.mark.parametrize("strategy", ["equal", "gpu", "fixed", "eop", "auto"])
def test_split_matches_unpartitioned_on_gpu(name, strategy):
    model = frontend.load(name, **SMALL[name])
    _, err, tol = equal_check(model, "cpu,gpu", strategy)
    assert err <= tol, f"max_abs_err={err} > {tol}"


@pytest.mark.parametrize("name", ["bert-tiny", "resnet18"])
def test_eop_splits_run_on_gpu(name):
    """With a GPU only 1.5x the CPU on paper, EOP splits ops; the split executable matches on a real GPU."""
    from tvm_partition.cli.compile import check, compile_model
    from tvm_partition.cost_models import AnalyticCostModel, DeviceRoofline
    from tvm_partition.devices import parse_devices
    from tvm_partition.plan import Split

    cm = AnalyticCostModel({"cpu": DeviceRoofline(100.0, 20.0, 2.0), "gpu": DeviceRoofline(150.0, 30.0, 2.0)},
                           default_link=(50.0, 1.0))
    compiled = compile_model(frontend.load(name, **SMALL[name]), parse_devices("cpu,gpu"), "eop", cost_model=cm)
    assert any(isinstance(d, Split) for d in compiled.plan.ops.values()), "the comparable GPU should get split ops"
    err, tol = check(compiled)
    assert err <= tol, f"max_abs_err={err} > {tol}"
