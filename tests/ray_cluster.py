"""The suite's one local Ray cluster (tvm_partition.bench.servers.local_cluster): server A has one
core, B 40% of one (cgroup quotas), C is unconfined; all on loopback. Tests that kill a server add
their own (:func:`spare`), so the shared three stay up while the worker runs Ray tests.

Started when a test first asks for it (the ``ray_cluster`` fixture, tests/conftest.py) and stopped
when the worker's next test is not a Ray one: idle, its 23 processes took 5 CPU seconds a minute
of the build machine's two cores (2026-11-29, ``ps`` over 60 s), which a cluster kept to the end
of the session took from the rest of the suite."""

from __future__ import annotations

import contextlib
import itertools

SHARES = {"A": 1.0, "B": 0.4, "C": None}
_names = (f"X{i}" for i in itertools.count())


class SuiteCluster:
    """The running :class:`~tvm_partition.bench.servers.LocalCluster` (its attributes, read through),
    started by :meth:`start` and stopped by :meth:`stop`; started again if asked for after."""

    def __init__(self):
        self._stack: contextlib.ExitStack | None = None
        self._cluster = None

    def start(self) -> "SuiteCluster":
        if self._stack is None:
            from tvm_partition.bench.servers import local_cluster

            stack = contextlib.ExitStack()
            self._cluster = stack.enter_context(local_cluster(SHARES))
            self._stack = stack
        return self

    def stop(self) -> None:
        stack, self._stack, self._cluster = self._stack, None, None
        if stack is not None:
            stack.close()

    def __getattr__(self, name):  # address, nodes, kill... of the running cluster
        if name.startswith("_") or self._cluster is None:
            raise AttributeError(name)
        return getattr(self._cluster, name)


def spare(cluster) -> str:
    """A new unconfined server, joined; its name."""
    from tvm_partition.bench.servers import add_server

    name = next(_names)
    add_server(cluster, name)
    return name
