"""TVM RPC: reach an edge server, put a library on it, run and time things there.

Used by ``tvm-partition run --rpc/--tracker`` and by remote profiling and tuning (``profile --rpc``:
:func:`connect`); several edge servers run on Ray instead (:mod:`tvm_partition.runtime.cluster`). The
server is TVM's own, unmodified: ``python -m tvm.exec.rpc_server --host 127.0.0.1 --port 9090``
(optionally ``--tracker HOST:PORT --key KEY``), which needs only the TVM runtime.

Only the TVM runtime is imported (``TVM_USE_RUNTIME_LIB=1`` works). Facts of TVM 0.27's RPC this
module works around (checked by running them):

* A container (``ffi.Array``) cannot be an argument of a remote call, and a tensor the client
  allocated on the server arrives as a bare ``DLTensor*`` that the server cannot put into an
  array. The weights therefore go through the server's tensor cache
  (``vm.builtin.tensor_cache.update``) and come back as a server-side array
  (``vm.builtin.param_array_from_cache_by_name_unpacked``) that ``main_transform_params`` takes.
* A remote array comes back as an opaque ``RPCObjectRef``; ``ffi.ArraySize`` / ``ffi.ArrayGetItem``
  on the server unpack it.
* ``VirtualMachine.set_input`` over RPC copies every argument to the first device, which breaks
  multi-device executables; calling ``vm["main"](...)`` directly keeps each weight where
  ``main_transform_params`` put it.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import time
import uuid

import numpy as np

from . import artifact
from ..errors import TvmPartitionError
from .runner import Runner

#: Reconnect attempts after a lost connection, and the first back-off (doubled each attempt).
RETRIES = 3
BACKOFF_S = 0.5
#: How long a tracker request waits for a free server before it counts as a failed attempt.
TRACKER_TIMEOUT_S = 10.0


class RemoteError(TvmPartitionError, RuntimeError):
    """An RPC server or tracker that cannot be reached or went away; the message names it."""


def parse_address(text: str, flag: str = "--rpc") -> tuple[str, int]:
    """``HOST:PORT`` -> ``(host, port)``; a clear error for anything else."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RemoteError(f"{flag} {text!r}: expected HOST:PORT, e.g. 127.0.0.1:9090")
    return host, int(port)


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """Where a session comes from: a server (``rpc``) or a tracker and a device key."""

    rpc: str | None = None
    tracker: str | None = None
    key: str | None = None

    def __post_init__(self):
        if bool(self.rpc) == bool(self.tracker):
            raise RemoteError("give either --rpc HOST:PORT or --tracker HOST:PORT --key KEY")
        if self.tracker and not self.key:
            raise RemoteError("--tracker needs --key KEY (the key the RPC servers registered with)")
        parse_address(self.rpc or self.tracker, "--rpc" if self.rpc else "--tracker")

    def __str__(self) -> str:
        return f"RPC server {self.rpc}" if self.rpc else f"tracker {self.tracker} key {self.key!r}"

    def connect_once(self):
        from tvm import rpc

        if self.rpc:
            return rpc.connect(*parse_address(self.rpc))
        tracker = rpc.connect_tracker(*parse_address(self.tracker, "--tracker"))
        tracker._sock.settimeout(TRACKER_TIMEOUT_S)  # a request otherwise waits forever for a server
        try:
            keys = tracker.summary().get("queue_info", {})
            if self.key not in keys:
                raise RemoteError(f"{self}: no RPC server registered with key {self.key!r} "
                                  f"(registered: {sorted(keys) or 'none'})")
            return tracker.request(self.key, max_retry=1)
        finally:
            tracker.close()


def connect(endpoint: Endpoint, retries: int = RETRIES, backoff_s: float = BACKOFF_S):
    """A TVM ``RPCSession`` to ``endpoint``: up to ``1 + retries`` attempts, then a clear error."""
    last = None
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(backoff_s * 2 ** (attempt - 1))
        try:
            return endpoint.connect_once()
        except RemoteError:
            raise
        except (OSError, RuntimeError, socket.timeout) as e:  # refused, reset, tracker gave up, TVMError
            last = e
    raise RemoteError(f"{endpoint}: cannot connect after {retries + 1} attempts ({_short(last)}); "
                      f"is `python -m tvm.exec.rpc_server` running there?")


def _short(e) -> str:
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def is_connection_error(e: BaseException) -> bool:
    """Whether ``e`` means the connection is gone, as opposed to an error raised by the remote code
    (which TVM reports as "Error caught from RPC call"). A dead peer shows up as a socket error or
    as a failed protocol check (``code == RPCCode::kReturn``)."""
    return isinstance(e, OSError | EOFError) or "Error caught from RPC call" not in str(e)


def load_library(sess, path: str):
    """Upload ``path`` (an exported ``.so``) to the server under a unique name and load it there."""
    name = f"tvmp-{uuid.uuid4().hex[:12]}-{os.path.basename(path)}"
    sess.upload(path, target=name)
    return sess.load_module(name)


def remote_device(sess, kind: str, index: int):
    dev = sess.cuda(index) if kind == "gpu" else sess.cpu(index)
    if kind == "gpu" and not dev.exist:
        raise RemoteError(f"the RPC server has no CUDA GPU {index} (the artifact needs one)")
    return dev


def array_items(sess, obj) -> list:
    """The items of a server-side array (an ``RPCObjectRef``); a tensor is a one-item list."""
    import tvm

    if isinstance(obj, tvm.runtime.Tensor):
        return [obj]
    size, get = sess.get_function("ffi.ArraySize"), sess.get_function("ffi.ArrayGetItem")
    return [get(obj, i) for i in range(int(size(obj)))]


def remote_array(sess, tensors: list, tag: str):
    """A server-side array of ``tensors`` (already on the server), via its tensor cache."""
    update = sess.get_function("vm.builtin.tensor_cache.update")
    names = [f"tvmp.{tag}.{i}" for i in range(len(tensors))]
    for name, t in zip(names, tensors):
        update(name, t, True)
    arr = sess.get_function("vm.builtin.param_array_from_cache_by_name_unpacked")(*names)
    remove = sess.get_function("vm.builtin.tensor_cache.remove")
    for name in names:
        remove(name)  # the array keeps the tensors alive
    return arr


class RemoteRunner(Runner):
    """An artifact run on an RPC server: verified here, its library uploaded, its weights copied
    to the server's devices once. A connection lost mid-run is re-established (bounded) and the
    run repeated once; past that, :class:`RemoteError` says which server went away."""

    local = False  # its devices are the server's: a GPU missing here is no reason to stand a CPU in

    def __init__(self, art_dir: str, endpoint: Endpoint, session=None, retries: int = RETRIES):
        self.endpoint, self.sess, self.retries = endpoint, session, retries
        super().__init__(art_dir)

    def _load(self) -> None:
        from tvm.runtime import vm as rvm

        if self.sess is None:
            self.sess = connect(self.endpoint, self.retries)
        try:
            devs = [remote_device(self.sess, d.kind, d.device_id) for d in self.devices]
            self.host = devs[0]
            self.lib = load_library(self.sess, os.path.join(self.art_dir, "model.so"))
            self.vm = rvm.VirtualMachine(self.lib, devs)
            params = [self.tvm.runtime.tensor(p, device=self.host)
                      for p in artifact.load_params(self.art_dir, self.manifest)]
            if self.manifest.get("transform_params"):
                weights = remote_array(self.sess, params, uuid.uuid4().hex[:12])
                self.params = array_items(self.sess, self.vm["main_transform_params"](weights))
            else:
                self.params = params
            self.main = self.vm["main"]
        except (OSError, RuntimeError) as e:
            if isinstance(e, RemoteError):
                raise
            raise RemoteError(f"{self.endpoint}: loading {self.art_dir} failed: {_short(e)}") from None

    def _outputs(self, out) -> list:
        return array_items(self.sess, out)

    def close(self) -> None:
        """End the session: the server (which serves one session at a time) is free again once
        every remote handle (library, VM, weights) is gone."""
        import gc

        self.main = self.vm = self.lib = self.params = self.host = self.sess = None
        gc.collect()

    def _retrying(self, fn):
        try:
            return fn()
        except (OSError, RuntimeError) as e:
            if isinstance(e, RemoteError):
                raise
            if not is_connection_error(e):
                raise RemoteError(f"{self.endpoint}: the run failed on the server: {_short(e)}") from None
            lost = _short(e)
        self.sess = None
        try:
            self._load()  # reconnects: up to 1 + retries attempts with back-off
        except RemoteError as e:
            raise RemoteError(f"{self.endpoint} went away during the run ({lost}); reconnecting failed: {e}") from None
        try:
            return fn()
        except (OSError, RuntimeError) as e:
            raise RemoteError(f"{self.endpoint}: the run failed again after reconnecting: {_short(e)}") from None

    def run(self, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self._retrying(lambda: Runner.run(self, inputs))

    def time(self, inputs: dict[str, np.ndarray], repeat: int, warmup: int = 3) -> list[float]:
        """End-to-end microseconds as seen here: inputs sent, run, outputs fetched, per run."""
        for _ in range(warmup):
            self.run(inputs)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            self.run(inputs)
            times.append((time.perf_counter() - t0) * 1e6)
        return times

    def device_times(self, inputs: dict[str, np.ndarray], repeat: int) -> list[float]:
        """Microseconds of ``main`` measured on the server by TVM's time evaluator (no RPC)."""
        def timed():
            timer = self.vm.time_evaluator("main", self.host, number=1, repeat=repeat)
            return [t * 1e6 for t in timer(*self._args(inputs), *self.params).results]

        return self._retrying(timed)
