"""The suite's one local Ray cluster (tvm_partition.bench.servers.local_cluster): server A has one
core, B 40% of one (cgroup quotas), C is unconfined; all on loopback. Tests that kill a server add
their own (:func:`spare`), so the shared three stay up for the rest of the session."""

from __future__ import annotations

import itertools

SHARES = {"A": 1.0, "B": 0.4, "C": None}
_names = (f"X{i}" for i in itertools.count())


def spare(cluster) -> str:
    """A new unconfined server, joined; its name."""
    from tvm_partition.bench.servers import add_server

    name = next(_names)
    add_server(cluster, name)
    return name
