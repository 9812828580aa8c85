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
    "test_servers_plan", "test_install",
}


#: Seconds each module's tests took on the 2-core Zen 3 build machine (2026-11-29, ``--durations=0``
#: of the default run: two workers, 13 min 12 s; modules under two seconds left out). pytest.ini runs
#: two workers, a module whole in one (``--dist loadfile``: its module fixtures, test_cli's commands
#: and the GPU kit's dry pack, run once), the longest modules first (``--no-loadscope-reorder``
#: keeps this order instead of xdist's, by test count), so that no long module starts last; no gain
#: from that order was shown within this VM's noise (2026-11-28, clean clones of 15 min 18 s and
#: 16 min 16 s under ``--dist loadgroup``, against 15 min 27 s in xdist's order). Three workers on
#: the two cores took as long (13 min 30 s, the CPUs 0.7% idle; 2026-11-29). A module not listed
#: counts 30 s.
GROUP_SECONDS = {
    "test_tuning": 191, "test_ray": 159, "test_onnx": 121, "test_gpu_proof": 115, "test_cost_models": 114,
    "test_bench": 99, "test_cli": 82, "test_eop": 76, "test_cuda_kernels": 75, "test_zoo_partition": 69,
    "test_split_rules": 48, "test_zoo": 44, "test_examples": 43, "test_processes": 37, "test_passes": 37,
    "test_vm_order": 36, "test_stages_plan": 32, "test_placement_decompose": 29, "test_templates": 28,
    "test_rpc": 27, "test_deploy": 18, "test_onnx_rnn": 16, "test_onnx_fold": 12, "test_onnx_loop": 12, "test_transfer": 15, "test_placement_compile": 12, "test_placement": 10,
    "test_data_movement": 9, "test_placement_congestion": 6, "test_onnx_light": 6, "test_threads": 4,
    "test_fastmath": 3, "test_frontends": 2, "test_servers_plan": 2, "test_commands": 2,
}


#: Modules that read the same cross-compiled builds (:func:`helpers.cpu_gpu_build`, cached per
#: process): one scope of ``--dist loadfile``, so one worker compiles each build once. Apart, each
#: worker compiled its own: MobileNetV2's ``equal`` build cost 41 s in test_zoo_partition and 44 s
#: in test_vm_order of the same run (2026-11-28, ``--durations``).
SHARED_BUILDS = {"test_cuda_kernels", "test_vm_order", "test_zoo_partition"}
#: Modules that use the local Ray cluster (tests/ray_cluster.py): one scope too, so that one worker
#: starts one cluster (14 s here) and stops it after their last test.
RAY_MODULES = {"test_ray", "test_stages_plan"}
SCOPES = {**dict.fromkeys(SHARED_BUILDS, "shared cpu,gpu builds"), **dict.fromkeys(RAY_MODULES, "the Ray cluster")}


def _module(item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` (pytest.ini), with the modules of each of :data:`SCOPES` one scope."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedScopeScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return SCOPES.get(path.rsplit("/", 1)[-1][:-3], path)

    return SharedScopeScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by marker
def pytest_collection_modifyitems(config, items):
    from tvm_partition.devices import gpu_available

    modules = {}
    for item in items:
        modules[item] = _module(item)
        if modules[item] not in PURE_PYTHON or item.get_closest_marker("heavy"):
            item.add_marker(pytest.mark.slow)
    # longest modules first; a module's own tests keep their order (a stable sort)
    items.sort(key=lambda item: -GROUP_SECONDS.get(modules[item], 30))
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none found by TVM)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


_RAY = None  # the worker's SuiteCluster (tests/ray_cluster.py), made when a test first asks


@pytest.fixture(scope="session")
def ray_cluster():
    """The worker's local Ray cluster (tests/ray_cluster.py), running: started for the first Ray
    test, stopped after the last of a run of them (:func:`pytest_runtest_teardown`)."""
    global _RAY
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    from ray_cluster import SuiteCluster

    _RAY = _RAY or SuiteCluster()
    return _RAY.start()


def pytest_runtest_setup(item):
    if _RAY is not None and "ray_cluster" in item.fixturenames:
        _RAY.start()  # the session's fixture value outlives a stop


def pytest_runtest_teardown(item, nextitem):
    if _RAY is not None and (nextitem is None or _module(nextitem) not in RAY_MODULES):
        _RAY.stop()
