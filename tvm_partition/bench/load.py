"""The conditions a benchmark row is measured under beside the quiet machine: busy neighbours and a
CPU quota (issue 21 item 3: edge servers are shared, and containers get quotas).

``bench --load N`` measures every row a second time while ``N`` busy processes spin beside it
(:func:`neighbours`: pure-Python loops, one core each, that the benchmark starts before the row's
measuring processes and kills after them; each also ends by itself when its time is up or its
parent is gone, and the reaper of :mod:`tvm_partition.processes` kills them with a killed
benchmark). ``--cpu-quota F`` measures it again with the measuring processes in a cgroup limited
to ``F`` CPUs (:func:`quota`: created for the run and removed after it; cgroup v2 ``cpu.max`` where
the unified hierarchy has the cpu controller, else v1 ``cpu.cfs_quota_us``), where the runner's
thread pool sizes itself to the quota (:func:`tvm_partition.devices.usable_cpus`) as it would in
such a container. A cgroup needs a writable cgroup file system (root, or a delegated subtree): where
there is none, ``--cpu-quota`` is refused with one line before anything is measured.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time

from ..devices import CGROUP_V1_CPU
from ..errors import TvmPartitionError

#: A busy neighbour: spin until the deadline (argv[1] seconds) or until the parent is gone.
BUSY = ("import os, sys, time\n"
        "parent, end = os.getppid(), time.monotonic() + float(sys.argv[1])\n"
        "while time.monotonic() < end and os.getppid() == parent:\n"
        "    for _ in range(100000):\n"
        "        pass\n")
#: The name of the cgroups this module creates (with the benchmark's pid).
PREFIX = "tvm-partition-bench-"
PERIOD_US = 100_000


class LoadError(TvmPartitionError, RuntimeError):
    """A condition this machine cannot set up (no writable cgroup)."""


@dataclasses.dataclass(frozen=True)
class Condition:
    """How a row is measured: ``load`` busy neighbours, within ``cpu_quota`` CPUs (None: no quota)."""

    load: int = 0
    cpu_quota: float | None = None

    @property
    def name(self) -> str:
        parts = ([f"load {self.load}"] if self.load else []) + ([f"quota {self.cpu_quota:g}"] if self.cpu_quota else [])
        return ", ".join(parts) or "quiet"


def conditions(load: int, cpu_quota: float | None) -> list[Condition]:
    """The conditions besides the quiet one that ``--load`` / ``--cpu-quota`` ask for, one each."""
    return ([Condition(load=load)] if load else []) + ([Condition(cpu_quota=cpu_quota)] if cpu_quota else [])


@contextlib.contextmanager
def neighbours(n: int, max_s: float = 3600.0):
    """``n`` busy processes for the duration of the block (each ends by itself after ``max_s``)."""
    procs = [subprocess.Popen([sys.executable, "-c", BUSY, str(max_s)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(n)]
    try:
        time.sleep(0.2 if n else 0)  # let them start spinning before the row starts timing
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def _v2_root() -> str | None:
    """The unified (v2) hierarchy's mount point if its cpu controller is available, else None."""
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        try:
            with open(os.path.join(root, "cgroup.controllers"), encoding="utf-8") as f:
                if "cpu" in f.read().split():
                    return root
        except OSError:
            continue
    return None


def _v1_root() -> str | None:
    for root in (os.path.join("/sys/fs/cgroup", name) for name in CGROUP_V1_CPU):
        if os.path.exists(os.path.join(root, "cpu.cfs_quota_us")):
            return root
    return None


def cgroup_root() -> tuple[str | None, bool]:
    """The cgroup cpu controller's root (v2 where it has cpu enabled, else v1's) and whether it is
    v2; ``(None, False)`` where there is none."""
    v2 = _v2_root()
    return v2 or _v1_root(), bool(v2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale(root: str) -> None:
    """Remove the empty cgroups of benchmarks that were killed before they removed them."""
    for name in os.listdir(root):
        if name.startswith(PREFIX) and name[len(PREFIX):].isdigit() and not _alive(int(name[len(PREFIX):])):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(root, name))


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


#: the highest weight a group takes (v1 ``cpu.shares``, v2 ``cpu.weight``): a group holding it gets
#: its quota before processes outside any group, as a machine of its own would
TOP_WEIGHT = {False: 262144, True: 10000}


def make_group(path: str, v2: bool, cpus: float, period_us: int, first: bool = False) -> None:
    """Create cgroup ``path`` limited to ``cpus`` CPUs per ``period_us`` (v2 ``cpu.max``, else v1's cfs
    files); at least 1 ms per period (the kernel's floor). ``first``: the group also takes
    :data:`TOP_WEIGHT`, so other work on this machine cannot hold it under its quota."""
    quota_us = max(1000, int(round(cpus * period_us)))
    os.makedirs(path, exist_ok=True)
    if v2:
        _write(os.path.join(path, "cpu.max"), f"{quota_us} {period_us}")
    else:
        _write(os.path.join(path, "cpu.cfs_period_us"), str(period_us))
        _write(os.path.join(path, "cpu.cfs_quota_us"), str(quota_us))
    if first:
        _write(os.path.join(path, "cpu.weight" if v2 else "cpu.shares"), str(TOP_WEIGHT[v2]))


@contextlib.contextmanager
def quota(cpus: float):
    """A cgroup limited to ``cpus`` CPUs for the block; yields a ``preexec_fn`` that moves a
    starting child process into it. Removed after the block (its processes killed first)."""
    root, v2 = cgroup_root()
    if root is None:
        raise LoadError("--cpu-quota needs the cgroup cpu controller (cgroup v2 with cpu enabled, or v1's "
                        "/sys/fs/cgroup/cpu): none found on this machine")
    _remove_stale(root)
    path = os.path.join(root, f"{PREFIX}{os.getpid()}")
    try:
        make_group(path, v2, cpus, PERIOD_US)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.rmdir(path)
        raise LoadError(f"--cpu-quota: cannot create a cgroup in {root} ({e.strerror}): run as root or in a "
                        "delegated cgroup") from None
    procs = os.path.join(path, "cgroup.procs")

    def enter() -> None:  # runs in the child between fork and exec
        _write(procs, str(os.getpid()))

    try:
        yield enter
    finally:
        _empty_and_remove(path, procs)


def _empty_and_remove(path: str, procs: str) -> None:
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except OSError:
            pass
        with contextlib.suppress(OSError), open(procs, encoding="utf-8") as f:
            for pid in f.read().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.1)


@contextlib.contextmanager
def applied(cond: Condition):
    """Set up ``cond`` for the block; yields the ``preexec_fn`` for the measuring processes (None)."""
    with neighbours(cond.load):
        if cond.cpu_quota:
            with quota(cond.cpu_quota) as enter:
                yield enter
        else:
            yield None
