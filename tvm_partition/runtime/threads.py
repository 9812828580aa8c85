"""Latency that holds on a shared server: a CPU thread pool that leaves the cores other processes
are busy on (issue 21 item 2).

TVM splits every parallel kernel into one task per worker and waits at a barrier for the last.
A worker that shares its core with a busy process gets the core in the scheduler's time slices,
milliseconds long, and every kernel waits for it. Measured on the 2-core build machine beside one
busy process (unbound workers, ``run --repeat 40``, 2026-11-24): BERT-tiny, CPU build, 2 threads
median 108 ms / p90 132 ms, 1 thread 30.9 / 31.1 ms (quiet: 17.2 ms with 2 threads, 30.8 ms with 1);
ResNet-18 at 64 px 8.5 / 64.0 ms against 8.3 / 8.5 ms. With one core taken, one thread is as fast
as it can be and steady; on a quiet machine it costs 1.8x. So the pool follows the load:

:class:`Governor` reads, at most every :data:`INTERVAL_S` between runs, how busy the CPUs this
process may run on were (``/proc/stat``: user, system, interrupts and the time a hypervisor
stole) less this process's own CPU time (``/proc/self/stat``), and sizes the pool to the CPUs left
(rounded, at least 1, at most the pool the process started with) through TVM's
``runtime.config_threadpool``, which changes how many workers a parallel kernel uses without
restarting them (the workers must be unbound: :func:`tvm_partition.devices.use_cpu_threads`).
A user's ``TVM_NUM_THREADS`` fixes the pool instead (:func:`tvm_partition.devices.threads_fixed_by_user`).
Linux only (``/proc``); elsewhere the pool keeps its size.
"""

from __future__ import annotations

import os
import time

#: Seconds between two readings of the load: short enough to follow a neighbour that starts,
#: long enough that a reading (two small files, tens of microseconds) costs nothing per run.
INTERVAL_S = 0.1


def _cpu_lines(cpus: set[int]) -> tuple[int, int]:
    """``(busy, total)`` clock ticks of ``cpus`` since boot; busy counts steal, not idle or iowait."""
    busy = total = 0
    with open("/proc/stat", encoding="ascii") as f:
        for line in f:
            if not (line.startswith("cpu") and line[3:4].isdigit()):
                continue
            name, *values = line.split()
            if int(name[3:]) not in cpus:
                continue
            ticks = [int(v) for v in values[:8]]  # user nice system idle iowait irq softirq steal
            total += sum(ticks)
            busy += sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy, total


def _own_ticks() -> int:
    """User + system clock ticks of this process, all its threads."""
    with open("/proc/self/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)


class Governor:
    """Keep the pool at the CPUs other processes leave free; call :meth:`poll` before each run."""

    def __init__(self, max_threads: int, set_threads, cpus: set[int] | None = None, interval_s: float = INTERVAL_S):
        self.cpus = set(cpus if cpus is not None else os.sched_getaffinity(0))
        self.max_threads = self.threads = max(1, max_threads)
        self.interval_s = interval_s
        self._set = set_threads
        self._last = self._reading()

    def _reading(self) -> tuple[float, int, int, int]:
        busy, total = _cpu_lines(self.cpus)
        return time.monotonic(), busy, total, _own_ticks()

    def others(self, then, now) -> float:
        """CPUs' worth of time other processes used between two readings."""
        _, busy0, total0, own0 = then
        _, busy1, total1, own1 = now
        if total1 <= total0:
            return 0.0
        share = max(0, (busy1 - busy0) - (own1 - own0)) / (total1 - total0)  # of all the CPUs' time
        return share * len(self.cpus)

    def poll(self) -> int:
        """The pool size to run with now (resized if the load changed since the last reading)."""
        if time.monotonic() - self._last[0] < self.interval_s:
            return self.threads
        now = self._reading()
        free = len(self.cpus) - self.others(self._last, now)
        self._last = now
        want = max(1, min(self.max_threads, int(free + 0.5)))
        if want != self.threads:
            self._set(want)
            self.threads = want
        return self.threads


def governor(threads: int):
    """A :class:`Governor` for this process's TVM pool of ``threads``, or None where it cannot
    follow the load (no ``/proc``, a pool the user fixed, one thread)."""
    from ..devices import threads_fixed_by_user

    if threads <= 1 or threads_fixed_by_user() or not os.path.exists("/proc/self/stat"):
        return None
    import tvm

    config = tvm.get_global_func("runtime.config_threadpool", allow_missing=True)
    if config is None:
        return None
    try:
        return Governor(threads, lambda n: config(1, n))  # mode 1: TVM's "big" cores, all of them here
    except (OSError, ValueError):
        return None
