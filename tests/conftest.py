"""Test tiers. ``gpu`` tests run only where TVM sees a CUDA GPU. Every test of a module outside
:data:`PURE_PYTHON` is marked ``slow`` here: it compiles and runs kernels with TVM (seconds
each), so ``python -m pytest -m "not slow"`` runs the pure-Python tier (planning, simulation,
graphs, the layer and command-line checks) in under two minutes. A new module is slow until it
is listed; a test of a listed module that builds carries ``@pytest.mark.slow`` itself. ``heavy``
tests (big models whose op kinds smaller ones cover) are also slow, and left out of the default
run (``pytest.ini``): ``python -m pytest -m heavy`` runs them."""

import pytest

#: Modules that plan, simulate and check without building a kernel.
PURE_PYTHON = {
    "test_commands", "test_data_movement", "test_eop", "test_graph", "test_layers", "test_placement",
    "test_placement_congestion", "test_placement_decompose", "test_plan", "test_threads", "test_load",
    "test_servers_plan",
}


#: Modules that share the session's Ray cluster (:func:`ray_cluster`): one worker runs them all.
RAY_GROUP = {"test_ray": "ray", "test_stages_plan": "ray"}


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(config, items):
    from tvm_partition.devices import gpu_available

    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module not in PURE_PYTHON or item.get_closest_marker("heavy"):
            item.add_marker(pytest.mark.slow)
        # pytest.ini runs two workers (pytest-xdist, --dist loadgroup): a module's tests stay in one
        # worker, so its module fixtures (test_cli's 30 commands, the GPU kit's dry pack) run once,
        # and the modules of the one Ray cluster share theirs
        item.add_marker(pytest.mark.xdist_group(RAY_GROUP.get(module, module)))
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by TVM)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster for every Ray test (tests/ray_cluster.py), stopped after the session."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    from ray_cluster import SHARES

    from tvm_partition.bench.servers import local_cluster

    with local_cluster(SHARES) as cluster:
        yield cluster
