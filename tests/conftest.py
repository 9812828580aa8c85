"""Tests marked ``gpu`` run only where TVM sees a CUDA GPU."""

import pytest


def pytest_collection_modifyitems(config, items):
    from tvm_partition.devices import gpu_available

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by TVM)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
