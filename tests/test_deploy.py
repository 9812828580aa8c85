"""The artifact format, runtime-only loading and the deploy bundle.

The bundle is run the way an edge server runs it: ``python -S`` (no site-packages, so not this
venv's TVM) with only numpy added to the path, ``TVM_USE_RUNTIME_LIB=1`` set by the bundle's
own script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tvm

from rpc_servers import REPO, rpc_server, wait_port
from tvm_partition.bench.servers import free_port
from tvm_partition.runtime import artifact
from tvm_partition.runtime.runner import Runner


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices

    d = tmp_path_factory.mktemp("deploy")
    c = compile_model(frontend.load("lstm", seq_len=4, batch=2), parse_devices("cpu,cpu"), "equal")
    c.save(str(d / "art"))
    return c, d / "art"


@pytest.fixture(scope="module")
def bundle(compiled):
    from tvm_partition.cli.deploy import bundle

    _, art = compiled
    return bundle(str(art), str(art.parent / "bundle"))


@pytest.fixture(scope="module")
def numpy_only(tmp_path_factory):
    """A folder holding nothing but numpy (links to this venv's), for ``python -S``."""
    d = tmp_path_factory.mktemp("numpy_only")
    site = os.path.dirname(os.path.dirname(np.__file__))
    for name in ("numpy", "numpy.libs"):
        if os.path.exists(os.path.join(site, name)):
            os.symlink(os.path.join(site, name), d / name)
    return d


def bare_env(numpy_only) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TVM_"))}
    return dict(env, PYTHONPATH=str(numpy_only))


def test_round_trip(compiled):
    from tvm_partition.cli.compile import reference_outputs
    from tvm_partition.runtime.ort import tolerance

    c, art = compiled
    manifest = artifact.read_manifest(str(art))
    expected = c.manifest()
    for key in ("inputs", "outputs", "devices", "targets", "tvm_version", "hardware_fingerprint"):
        assert manifest[key] == json.loads(json.dumps(expected[key])), key
    assert set(manifest["sha256"]) == set(artifact.FILES)
    params = artifact.load_params(str(art), manifest)
    assert len(params) == len(c.model.params)
    assert all(np.array_equal(a, b) for a, b in zip(params, c.model.params))
    outs = Runner(str(art)).run(c.model.inputs)
    ref = reference_outputs(c.model)
    assert float(np.max(np.abs(outs[0] - ref[0]))) <= tolerance(ref)


def test_params_file_depends_on_the_weights_alone(compiled, tmp_path):
    """params.npz is the same bytes for the same weights (no time stamps, numpy's own .npy
    format), and the manifest's recipe draws the zoo weights again with numpy alone."""
    import io

    from tvm_partition.inputs import draw_weights

    c, art = compiled
    arrays = [np.asarray(p) for p in c.model.params] + [np.zeros((), "int64"), np.arange(24.0).reshape(2, 3, 4).T]
    artifact.write_params(str(tmp_path / "a.npz"), arrays)
    artifact.write_params(str(tmp_path / "b.npz"), [a.copy() for a in arrays])
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    for a in arrays:  # each member is what numpy itself writes (format 1.0)
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.asarray(a, order="C"), version=(1, 0))
        assert artifact.npy_bytes(a) == buf.getvalue()
    with np.load(tmp_path / "a.npz") as z:
        assert all(np.array_equal(z[f"p{i}"], a) for i, a in enumerate(arrays))
    manifest = artifact.read_manifest(str(art))
    drawn = draw_weights(manifest["weights"])
    assert len(drawn) == len(c.model.params) and all(np.array_equal(a, b) for a, b in zip(drawn, c.model.params))
    artifact.write_params(str(tmp_path / "again.npz"), drawn)
    assert artifact.sha256(str(tmp_path / "again.npz")) == manifest["sha256"]["params.npz"]


@pytest.mark.parametrize("damage,pattern", [
    ("flip-model", r"model\.so: checksum mismatch"),
    ("truncate-params", r"params\.npz: checksum mismatch"),
    ("edit-plan", r"plan\.json: checksum mismatch"),
    ("drop-model", r"model\.so: missing"),
    ("manifest-sha", r"model\.so: checksum mismatch"),
])
def test_damaged_artifact_refused(compiled, tmp_path, damage, pattern):
    _, art = compiled
    bad = tmp_path / "bad"
    shutil.copytree(art, bad)
    if damage == "flip-model":
        data = bytearray((bad / "model.so").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (bad / "model.so").write_bytes(bytes(data))
    elif damage == "truncate-params":
        with open(bad / "params.npz", "r+b") as f:
            f.truncate(100)
    elif damage == "edit-plan":
        (bad / "plan.json").write_text((bad / "plan.json").read_text().replace("equal", "manual"))
    elif damage == "drop-model":
        os.remove(bad / "model.so")
    else:
        m = json.loads((bad / "manifest.json").read_text())
        m["sha256"]["model.so"] = "0" * 64
        (bad / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(artifact.ArtifactError, match=pattern):
        Runner(str(bad))


@pytest.mark.parametrize("version,kinds,ok", [
    (artifact.FORMAT_VERSION, ["cpu", "cpu"], True),
    (1, ["cpu", "gpu"], True),  # one CPU: its program is the same under format 2
    (1, ["cpu", "cpu"], False),  # copies to cpu(1), which a run now never allocates on
    (0, ["cpu"], False),
])
def test_artifact_formats_read(tmp_path, version, kinds, ok):
    devices = [{"name": k, "kind": k, "index": 0} for k in kinds]
    manifest = {"format_version": version, "inputs": [], "outputs": [], "devices": devices, "num_params": 0,
                "sha256": {}}
    (tmp_path / artifact.MANIFEST).write_text(json.dumps(manifest))
    if ok:
        assert artifact.read_manifest(str(tmp_path))["devices"] == devices
    else:
        with pytest.raises(artifact.ArtifactError, match="recompile the artifact"):
            artifact.read_manifest(str(tmp_path))


CPU_GPU = [{"name": "cpu", "kind": "cpu", "index": 0, "target": {"kind": "llvm", "mcpu": "znver5"}},
           {"name": "gpu", "kind": "gpu", "index": 0, "target": {"kind": "cuda", "arch": "sm_90"}}]


@pytest.mark.parametrize("kernels,gpu_here,stands_in", [
    ({"a": "cpu", "b": "cpu"}, False, True),  # every kernel on the CPU, no GPU here: a CPU in its place
    ({"a": "cpu", "b": "cpu"}, True, False),  # a GPU here: as built
    ({"a": "cpu", "b": "gpu"}, False, False),  # a kernel on the GPU: as built (and refused where none is)
    (None, False, False),  # a manifest that does not say where its kernels run: as built
    ({}, False, True),  # one that launches no kernel of ours (a model of a cumsum alone): on the CPU
])
def test_a_gpu_artifact_that_launches_nothing_there_runs_on_the_cpu(kernels, gpu_here, stands_in):
    manifest = {"devices": CPU_GPU, **({"kernel_devices": kernels} if kernels is not None else {})}
    devices = artifact.host_stand_in(manifest, gpu_here)
    if not stands_in:
        assert devices is None
        return
    assert [(d.name, d.kind, d.target) for d in devices] == [("cpu", "cpu", CPU_GPU[0]["target"]),
                                                           ("gpu", "cpu", CPU_GPU[0]["target"])]
    assert {str(d.tvm_device()) for d in devices} == {str(tvm.cpu(0))}  # one memory: no copy


def test_a_cpu_artifact_needs_no_stand_in():
    manifest = {"devices": [CPU_GPU[0], dict(CPU_GPU[0], name="cpu1", index=1)], "kernel_devices": {"a": "cpu1"}}
    assert artifact.host_stand_in(manifest, False) is None


def runtime_only(code: str) -> subprocess.CompletedProcess:
    """``code`` run by a fresh Python with the runtime-only TVM (``TVM_USE_RUNTIME_LIB=1``); it must succeed."""
    env = dict(os.environ, TVM_USE_RUNTIME_LIB="1", PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_runtime_only_load_in_subprocess(compiled):
    """TVM_USE_RUNTIME_LIB=1: the runner works, and the compiler really is absent."""
    c, art = compiled
    code = (
        "import sys, numpy as np\n"
        "from tvm_partition.runtime.runner import Runner\n"
        f"r = Runner({str(art)!r})\n"
        "out = r.run(r.example_inputs())[0]\n"
        "print('mods', any(m.startswith('tvm.relax') for m in sys.modules))\n"
        "print('sum', float(np.abs(out).sum()))\n"
        "try:\n    import tvm.relax\n    print('relax importable')\n"
        "except Exception:\n    print('no compiler')\n"
    )
    proc = runtime_only(code)
    assert "mods False" in proc.stdout and "no compiler" in proc.stdout, proc.stdout
    expected = float(np.abs(Runner(str(art)).run(Runner(str(art)).example_inputs())[0]).sum())
    assert abs(float(re.search(r"sum (\S+)", proc.stdout).group(1)) - expected) < 1e-4


def test_runtime_only_tvm_loads_cuda_only_when_asked():
    """The TVM fact devices.load_cuda_runtime works around: under TVM_USE_RUNTIME_LIB=1 ``import
    tvm`` loads no CUDA runtime, so no GPU is seen and no CUDA module loads; load_cuda_runtime
    loads it where the machine has CUDA, and says which library is missing where it does not."""
    code = (
        "import json, tvm\n"
        "from tvm.base import _LOADED_LIBS\n"
        "before = 'tvm_runtime_cuda' in _LOADED_LIBS\n"
        "from tvm_partition.devices import load_cuda_runtime\n"
        "res = load_cuda_runtime()\n"
        "print(json.dumps([before, res, bool(tvm.cuda(0).exist), 'tvm_runtime_cuda' in _LOADED_LIBS]))\n"
    )
    proc = runtime_only(code)
    before, res, exists, after = json.loads(proc.stdout.strip().splitlines()[-1])
    assert before is False  # TVM itself left it out
    assert res["loaded"] == after
    if res["loaded"]:
        assert res["libraries"]["libtvm_runtime_cuda"].endswith("libtvm_runtime_cuda.so")
    else:  # no CUDA here: one line naming what is missing, and no GPU seen
        assert re.fullmatch(r"TVM's CUDA runtime does not load: lib\S+ not found", res["error"]) and not exists


def test_runtime_only_tvm_compiles_cuda_for_the_gpu_present():
    """The second TVM fact: TVM's own CUDA compile callback needs the compiler's Target.current()
    for the architecture, which a runtime-only TVM lacks; the one load_cuda_runtime registers asks
    the GPU (here, without one, it is registered and asks tvm.cuda(0), which says there is none)."""
    code = (
        "import tvm, tvm_ffi\n"
        "from tvm.support import nvcc\n"
        "try:\n    nvcc.get_target_compute_version(tvm.target.Target.current(allow_none=True))\n"
        "except AttributeError as e:\n    print('no Target.current:', e)\n"
        "from tvm_partition import devices\n"
        "devices._compile_cuda_for_this_gpu()\n"
        "f = tvm_ffi.get_global_func('tvm_callback_cuda_compile')\n"
        "try:\n    f('extern \"C\" __global__ void k() {}')\n"
        "except Exception as e:\n    print('ours:', type(e).__name__, e)\n"
    )
    out = runtime_only(code).stdout
    assert "no Target.current: module 'tvm.target._ffi_api' has no attribute 'TargetCurrent'" in out, out
    if not json.loads(runtime_only("import json, tvm; print(json.dumps(bool(tvm.cuda(0).exist)))").stdout):
        assert "ours:" in out and "TargetCurrent" not in out.split("ours:")[1], out  # it never asks the compiler


def test_bundle_has_no_compiler(bundle):
    names = {f for _, _, fs in os.walk(bundle) for f in fs}
    assert "libtvm_runtime.so" in names and "libtvm_compiler.so" not in names
    assert sorted(os.listdir(bundle)) == ["artifact", "rpc_server.py", "run.py", "site"]
    artifact.verify(os.path.join(bundle, "artifact"), artifact.read_manifest(os.path.join(bundle, "artifact")))


def test_bundle_runs_with_python_and_numpy_only(compiled, bundle, numpy_only, tmp_path):
    _, art = compiled
    env = bare_env(numpy_only)
    before = sorted(os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs)
    proc = subprocess.run([sys.executable, "-S", os.path.join(bundle, "run.py"), "--repeat", "2", "--output", "out.npz"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^median_us=[0-9.]+ p90_us=[0-9.]+$", proc.stdout, re.M)
    runner = Runner(str(art))
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["output0"], runner.run(runner.example_inputs())[0], rtol=0, atol=1e-6)
    assert os.listdir(tmp_path) == ["out.npz"]  # nothing else written where it ran
    after = sorted(os.path.relpath(os.path.join(d, f), bundle) for d, _, fs in os.walk(bundle) for f in fs)
    assert after == before  # nor into the bundle
    # the TVM it used is the bundle's: without site-packages nothing else is importable
    probe = subprocess.run([sys.executable, "-S", "-c", "import tvm"], capture_output=True, text=True, env=env)
    assert probe.returncode != 0 and "No module named 'tvm'" in probe.stderr


def test_bundle_rpc_server_binds_loopback(compiled, bundle, numpy_only, tmp_path):
    from tvm_partition.runtime.remote import Endpoint, RemoteRunner

    _, art = compiled
    port = free_port()
    server = rpc_server(port, python=[sys.executable, "-S", os.path.join(bundle, "rpc_server.py")],
                        env=bare_env(numpy_only), cwd=str(tmp_path))
    try:
        wait_port(port, server)
        log = (tmp_path / "server.log").read_text()
        assert f"bind to 127.0.0.1:{port}" in log, log
        assert "CUDA backend " in log, log  # the init callback ran in the server's process
        runner = RemoteRunner(str(art), Endpoint(rpc=f"127.0.0.1:{port}"))
        local = Runner(str(art))
        np.testing.assert_allclose(runner.run(local.example_inputs())[0], local.run(local.example_inputs())[0],
                                   rtol=0, atol=1e-6)
    finally:
        server.stop()


@pytest.mark.parametrize("case,pattern", [
    ("exists", r"bundle: exists and is not an empty folder"),
    ("old-python", r"--python '2\.7': give the server's Python as X\.Y, 3\.10 or newer"),
    ("offline", r"cannot get apache-tvm-ffi==\S+ for Python 3\.99 .*--find-links"),
    ("tampered", r"params\.npz: checksum mismatch"),
])
def test_deploy_refuses(compiled, bundle, tmp_path, capsys, case, pattern):
    from tvm_partition.cli.deploy import main

    _, art = compiled
    out = tmp_path / "b"
    argv = {
        "exists": [str(art), "--bundle", bundle],
        "old-python": [str(art), "--bundle", str(out), "--python", "2.7"],
        "offline": [str(art), "--bundle", str(out), "--python", "3.99", "--find-links", str(tmp_path)],
    }.get(case)
    if case == "tampered":
        shutil.copytree(art, tmp_path / "t")
        with open(tmp_path / "t" / "params.npz", "ab") as f:
            f.write(b"x")
        argv = [str(tmp_path / "t"), "--bundle", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(pattern, err[0]), err
    assert not out.exists()  # nothing left behind
