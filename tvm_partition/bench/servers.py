"""Edge servers of unequal speed on this one machine: a local Ray cluster, one node per server,
each node confined to a share of a CPU (issue 20 item 2; the testbed of FlexPie's and EOP's
heterogeneous-device experiments, made here).

:func:`local_cluster` starts a Ray head (no CPUs, no server resource: nothing is scheduled on it)
and then one Ray node per server, all bound to loopback. Each node carries the custom resource of
its server (:func:`tvm_partition.runtime.cluster.resource_of`), which the runtime's actors ask for.
Once a node has registered, its processes (the ``ray start --block`` launcher, raylet, workers,
object store) are moved into a cgroup v1 CPU controller group
``/sys/fs/cgroup/cpu/tvm-partition-bench-<server>-<pid>`` with ``cpu.cfs_period_us`` 10 ms and
``cpu.cfs_quota_us`` = share x period: the node runs at most ``share`` of one core; workers the raylet
forks later inherit the group. Share None leaves the node unconfined. (cgroup v2: ``cpu.max``.)
The group also takes the kernel's highest weight (:data:`tvm_partition.bench.load.TOP_WEIGHT`), so
a server gets its share whatever else this machine runs, as a machine of its own would: at the
default weight a group counts as one process against every other on the machine, and beside six
busy sessions on the 2-core build machine server A (one core) measured 2.1-2.8 ms a probe and B
(40% of one) 2.0-2.5, against 0.49 and 1.45 alone; with the weight, 0.48-0.50 and 1.05-1.47
(``time_on`` of the LSTM at batch 2, 2026-12-03, after CI's suite measured A slower than B).

Ray facts this relies on (Ray 2.60):

* A raylet must register with the GCS within about 30 s or it exits; a node started while the
  head is still coming up, or starved of CPU before it registered, fails. So nodes are started one
  at a time, after the head has registered, each waited for before the next, and confined only
  after it has joined.
* A starved node (40% of a core under load) answers the GCS's health checks late; with Ray's
  default threshold (5 missed checks) the GCS declares it dead and kills its actors.
  ``RAY_health_check_failure_threshold=40`` in every node's environment (the GCS, on the head,
  reads it) tolerates that; a node really killed is then noticed late by the GCS, which is why
  the runtime does not wait for the GCS (:mod:`tvm_partition.runtime.cluster`: a bounded retry,
  then the request moves).
* Nodes register under the machine's IP even with ``--node-ip-address=127.0.0.1``; the ports are
  bound to loopback all the same.
* ``ray start --block`` keeps the node's processes in the launcher's session (Ray starts its
  processes without a new session, with kernel fate-sharing): each node is started in its own
  session and stopped by killing that session's process group; an atexit hook and the reaper of
  :mod:`tvm_partition.processes` do it if the caller dies. No raylet or GCS outlives the cluster.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from .load import PREFIX, _empty_and_remove, _write, cgroup_root, make_group
from ..runtime.cluster import ClusterError

#: cfs period of the servers' cgroups: short, so a 40% share is 4 ms in every 10 ms, not 40 in 100
#: (a stage of a few milliseconds sees its share, not a long stall)
PERIOD_US = 10_000
#: how long a node may take to register (Ray's own limit for a raylet is about 30 s)
JOIN_S = 60.0
OBJECT_STORE_BYTES = 256 * 1024 * 1024
#: the GCS tolerates this many missed health checks of a node (Ray's default: 5)
NODE_ENV = {"RAY_health_check_failure_threshold": "40", "RAY_USAGE_STATS_ENABLED": "0"}
#: Ray's token authentication on the nodes as in this driver, ``RAY_AUTH_MODE`` (the driver's
#: ``ray.init(address=...)`` reads it; unset, off). Ray 2.60's ``ray start --head`` turns it on by
#: itself where ``~/.ray/auth_token`` exists (any local ``ray.init()`` writes one), its ``ray start
#: --address`` does not: the servers could not join their head ("InvalidAuthToken"), and a driver
#: and cluster of different modes cannot run an actor (2026-11-26).
AUTH_DEFAULT = {"RAY_AUTH_MODE": "disabled"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Node:
    """One ``ray start --block`` launcher (its own session) and what confines it."""

    name: str
    proc: subprocess.Popen
    log: str
    share: float | None = None
    cgroup: str | None = None

    def pids(self) -> list[int]:
        """The launcher and every process of its session (raylet, workers, object store...)."""
        out = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    if os.getsid(int(entry)) == self.proc.pid:
                        out.append(int(entry))
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)
        end = time.monotonic() + 10
        while self.pids() and time.monotonic() < end:  # until init has reaped them (no zombie raylet)
            for pid in self.pids():  # one that left the group but not the session
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        if self.cgroup:
            _empty_and_remove(self.cgroup, os.path.join(self.cgroup, "cgroup.procs"))
            self.cgroup = None


def _cgroup_root() -> tuple[str, bool]:
    root, v2 = cgroup_root()
    if root is None:
        raise ClusterError("servers with a CPU share need the cgroup cpu controller (v1 /sys/fs/cgroup/cpu or v2 "
                           "with cpu enabled): none found; give every server share None")
    return root, v2


def _remove_stale(root: str) -> None:
    """Remove the groups of clusters whose process is gone (killed before it could clean up)."""
    for name in os.listdir(root):
        pid = name.rsplit("-", 1)[-1]
        if name.startswith(PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            _empty_and_remove(os.path.join(root, name), os.path.join(root, name, "cgroup.procs"))


def confine(node: Node) -> None:
    """Move ``node``'s processes into a new cgroup limited to its share of one core."""
    root, v2 = _cgroup_root()
    _remove_stale(root)
    path = os.path.join(root, f"{PREFIX}{node.name}-{os.getpid()}")
    try:
        make_group(path, v2, node.share, PERIOD_US, first=True)
    except OSError as e:
        raise ClusterError(f"server {node.name}: cannot create the cgroup {path} ({e.strerror}): run as root") from None
    node.cgroup = path
    procs = os.path.join(path, "cgroup.procs")
    for _ in range(CONFINE_PASSES):  # a child forked while its parent moved stays where it was: again
        with open(procs, encoding="ascii") as f:
            inside = {int(p) for p in f.read().split()}
        left = [pid for pid in node.pids() if pid not in inside]
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):  # a worker that just exited
                _write(procs, str(pid))


#: rounds of :func:`confine` moving the node's processes not yet in its group (a raylet may fork a
#: worker while it is moved: the child keeps the cgroup it was forked in)
CONFINE_PASSES = 5


@dataclasses.dataclass
class LocalCluster:
    """A running local cluster: its address and nodes (``nodes[0]`` is the head)."""

    address: str
    nodes: list[Node]
    temp_dir: str
    env: dict

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def kill(self, name: str) -> None:
        """Kill server ``name``'s node (raylet, workers, object store) at once, as a crash would."""
        self.node(name).stop()

    def stop(self) -> None:
        for n in reversed(self.nodes):
            n.stop()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def _start(args: list[str], log: str, env: dict) -> subprocess.Popen:
    with open(log, "ab") as f:
        return subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def _ray_start(extra: list[str]) -> list[str]:
    ray = os.path.join(os.path.dirname(sys.executable), "ray")
    return [ray if os.path.exists(ray) else "ray", "start", "--block", "--node-ip-address", "127.0.0.1",
            "--object-store-memory", str(OBJECT_STORE_BYTES), "--disable-usage-stats", *extra]


#: the resource of the head node (Ray's own)
HEAD = "node:__internal_head__"


def _joined(address: str, resource: str) -> bool:
    """Whether a live node of the cluster carries ``resource``."""
    from ..runtime import cluster

    cluster.connect(address, timeout=JOIN_S)
    import ray

    return any(n.get("Alive") and resource in n.get("Resources", {}) for n in ray.nodes())


def _wait_joined(address: str, resource: str, node: Node) -> None:
    """Until the node just started, which carries ``resource``, has registered."""
    end = time.monotonic() + JOIN_S
    while time.monotonic() < end:
        if node.proc.poll() is not None:
            raise ClusterError(f"server {node.name}: ray start exited with {node.proc.returncode} (see {node.log})")
        with contextlib.suppress(Exception):  # the GCS not up yet
            if _joined(address, resource):
                return
        time.sleep(0.5)
    raise ClusterError(f"server {node.name}: did not join the cluster within {JOIN_S:.0f} s (see {node.log})")


def _start_head(cluster: LocalCluster) -> None:
    port = int(cluster.address.rsplit(":", 1)[1])
    log = os.path.join(cluster.temp_dir, "head.log")
    head = Node("head", _start(_ray_start([
        "--head", "--port", str(port), "--num-cpus", "0", "--include-dashboard", "false",
        "--temp-dir", cluster.temp_dir]), log, cluster.env), log)
    cluster.nodes.append(head)
    _wait_joined(cluster.address, HEAD, head)


def add_server(cluster: LocalCluster, name: str, share: float | None = None) -> Node:
    """Start server ``name``'s node, wait until it has joined, then confine it to ``share``."""
    from ..runtime.cluster import resource_of

    if share is not None and not 0 < share <= 64:
        raise ClusterError(f"server {name}: a share must be > 0 (a fraction of one core), got {share}")
    log = os.path.join(cluster.temp_dir, f"{name}.log")
    args = _ray_start(["--address", cluster.address, "--num-cpus", "1",
                                            "--resources", json.dumps({resource_of(name): 1})])
    node = Node(name, _start(args, log, cluster.env), log, share)
    cluster.nodes.append(node)
    _wait_joined(cluster.address, resource_of(name), node)
    if share is not None:
        confine(node)
    return node


@contextlib.contextmanager
def local_cluster(shares: dict[str, float | None], env: dict | None = None):
    """A Ray cluster on loopback with one node per server (``{name: share of a core or None}``),
    started, confined and, after the block (or at exit, or by the reaper if this process is
    killed), stopped and its cgroups removed. Yields a :class:`LocalCluster`; the driver (this
    process) is connected to it."""
    from ..processes import reap_on_exit

    if any(s is not None for s in shares.values()):
        _cgroup_root()  # refuse before starting anything
    reap_on_exit()
    # short: Ray's socket paths must stay under 107 bytes
    temp_dir = tempfile.mkdtemp(prefix="tvmp-ray-", dir="/tmp")
    cluster = LocalCluster(f"127.0.0.1:{free_port()}", [], temp_dir, {**AUTH_DEFAULT, **os.environ, **NODE_ENV, **(env or {})})
    atexit.register(cluster.stop)
    try:
        _start_head(cluster)
        for name, share in shares.items():
            add_server(cluster, name, share)
        yield cluster
    finally:
        from ..runtime import cluster as rt

        rt.disconnect()
        cluster.stop()
        atexit.unregister(cluster.stop)
