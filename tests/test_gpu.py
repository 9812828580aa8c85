"""On a machine with an NVIDIA GPU: split models match the unpartitioned model on cpu,gpu."""

from __future__ import annotations

import pytest

from helpers import SMALL, equal_check
from tvm_partition import frontend

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["lstm", "gru", "bert-tiny", "resnet18", "mobilenetv2"])
@pytest.mark.parametrize("strategy", ["equal", "gpu"])
def test_split_matches_unpartitioned_on_gpu(name, strategy):
    model = frontend.load(name, **SMALL[name])
    _, err, tol = equal_check(model, "cpu,gpu", strategy)
    assert err <= tol, f"max_abs_err={err} > {tol}"
