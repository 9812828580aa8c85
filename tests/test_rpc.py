"""Artifacts run on TVM RPC servers the tests start on loopback (``run --rpc``; several servers run
on Ray: tests/test_ray.py).

The fixtures start a tracker with two servers registered under one key, and a plain server;
every one is stopped (its whole process group) when the module ends. A server killed mid-run
must give a clear error after bounded reconnect attempts.
"""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest

from rpc_servers import Proc, rpc_server, wait_port, wait_tracker
from tvm_partition.bench.servers import free_port
from tvm_partition.runtime import artifact
from tvm_partition.runtime.remote import Endpoint, RemoteError, RemoteRunner, connect
from tvm_partition.runtime.runner import Runner

KEY = "tvmp-test"
LSTM = dict(seq_len=4, batch=2)


@pytest.fixture(scope="module")
def art(tmp_path_factory):
    from tvm_partition import frontend
    from tvm_partition.cli.compile import compile_model
    from tvm_partition.devices import parse_devices

    d = tmp_path_factory.mktemp("rpc")
    compile_model(frontend.load("lstm", **LSTM), parse_devices("cpu,cpu"), "equal").save(str(d / "art"))
    return d / "art"


@pytest.fixture(scope="module")
def local(art):
    runner = Runner(str(art))
    inputs = runner.example_inputs()
    return inputs, runner.run(inputs)


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = rpc_server(port)
    try:
        wait_port(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def tracker():
    import importlib.util

    if importlib.util.find_spec("tornado") is None:
        pytest.fail("TVM's RPC tracker needs tornado: pip install -e '.[test]'")
    port = free_port()
    procs = [Proc([sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(port),
                   "--port-end", str(port + 1)])]
    try:
        wait_port(port, procs[0])
        for _ in range(2):
            procs.append(rpc_server(free_port(), "--tracker", f"127.0.0.1:{port}", "--key", KEY))
        wait_tracker(port, KEY, 2)
        yield f"127.0.0.1:{port}"
    finally:
        for p in procs:
            p.stop()


def test_remote_run_matches_local(art, local, server):
    inputs, expected = local
    runner = RemoteRunner(str(art), Endpoint(rpc=server))
    outs = runner.run(inputs)
    assert len(outs) == len(expected)
    np.testing.assert_allclose(outs[0], expected[0], rtol=0, atol=1e-6)
    assert runner.device_times(inputs, 2)[0] > 0


def test_run_cli_rpc(art, local, server, tmp_path, capsys):
    from tvm_partition.runtime.run import main

    assert main([str(art), "--rpc", server, "--repeat", "3", "--output", str(tmp_path / "out.npz")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^median_us=[0-9.]+ p90_us=[0-9.]+$", out, re.M), out
    assert re.search(r"^device_median_us=[0-9.]+ rpc_overhead_us=-?[0-9.]+$", out, re.M), out
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_allclose(z["output0"], local[1][0], rtol=0, atol=1e-6)


def test_run_over_tracker(art, local, tracker):
    outs = RemoteRunner(str(art), Endpoint(tracker=tracker, key=KEY)).run(local[0])
    np.testing.assert_allclose(outs[0], local[1][0], rtol=0, atol=1e-6)


def test_killed_server_gives_clear_error(art, local):
    port = free_port()
    proc = rpc_server(port)
    try:
        wait_port(port, proc)
        runner = RemoteRunner(str(art), Endpoint(rpc=f"127.0.0.1:{port}"), retries=2)
        runner.run(local[0])
        proc.stop()
        t0 = time.perf_counter()
        with pytest.raises(RemoteError, match=r"127\.0\.0\.1:\d+ went away during the run .*cannot connect after 3 attempts"):
            runner.run(local[0])
        assert time.perf_counter() - t0 < 30  # bounded: 0.5 + 1 s of back-off
    finally:
        proc.stop()


@pytest.mark.parametrize("argv,pattern", [
    (["--rpc", "127.0.0.1"], r"--rpc '127\.0\.0\.1': expected HOST:PORT"),
    (["--tracker", "127.0.0.1:9"], r"--tracker needs --key"),
    (["--rpc", "127.0.0.1:{closed}"], r"cannot connect after 4 attempts"),
])
def test_run_cli_refuses_bad_endpoints(art, capsys, argv, pattern):
    from tvm_partition.runtime.run import main

    argv = [a.format(closed=free_port()) for a in argv]
    assert main([str(art), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and re.search(pattern, err[0]), err


def test_tracker_without_that_key(tracker):
    with pytest.raises(RemoteError, match=r"no RPC server registered with key 'nosuchkey'"):
        connect(Endpoint(tracker=tracker, key="nosuchkey"))


def test_tampered_artifact_is_not_uploaded(art, server, tmp_path):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(art, bad)
    with open(bad / "model.so", "r+b") as f:
        f.truncate(1000)
    with pytest.raises(artifact.ArtifactError, match=r"model\.so: checksum mismatch"):
        RemoteRunner(str(bad), Endpoint(rpc=server))


@pytest.mark.parametrize("argv,pattern", [
    (["--cut-after", "nosuchvar"], r"cannot cut after 'nosuchvar': not a binding of main"),
    (["--mode", "split", "--batch", "3"], r"batch 3 does not divide into 2 equal parts"),
    (["--servers", "0"], r"--servers must be >= 1"),
])
def test_stages_cli_refuses(tmp_path, capsys, argv, pattern):
    from tvm_partition.cli.stages import main

    assert main(["lstm", "--seq-len", "2", "--batch", "2", *argv, "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and re.search(pattern, err[0]), err
