"""Measured under load (issue 21 item 3): the conditions ``bench --load N`` / ``--cpu-quota F`` set up,
and that they are undone. Oracles: ``/proc`` (the neighbours spin, then are gone), the cgroup file
system (the quota is written, the child is in the cgroup, and the cgroup is removed), and the
child's own view of its CPUs (:func:`tvm_partition.devices.usable_cpus` inside the quota)."""

import json
import os
import subprocess
import sys
import time

import pytest

from tvm_partition.bench import load


def test_conditions_are_named_and_one_each():
    assert load.conditions(0, None) == []
    assert [c.name for c in load.conditions(2, 0.5)] == ["load 2", "quota 0.5"]
    assert load.Condition().name == "quiet" and load.Condition(1, 1.0).name == "load 1, quota 1"


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")
def test_neighbours_spin_while_the_block_runs_and_are_gone_after():
    with load.neighbours(2) as procs:
        time.sleep(0.5)
        assert all(p.poll() is None for p in procs)
        assert all(_cpu_seconds(p.pid) > 0.1 for p in procs)  # busy, not sleeping
    assert all(p.poll() is not None for p in procs)


def test_a_neighbour_ends_by_itself_when_its_time_is_up():
    with load.neighbours(1, max_s=0.3) as procs:
        assert procs[0].wait(timeout=30) == 0


def _writable_cgroup() -> bool:
    try:
        with load.quota(1.0):
            return True
    except load.LoadError:
        return False


@pytest.mark.skipif(not _writable_cgroup(), reason="no writable cgroup cpu controller (needs root or delegation)")
def test_the_quota_confines_the_child_and_is_removed_after():
    code = ("import json; from tvm_partition import devices; "
            "print(json.dumps([open('/proc/self/cgroup').read(), devices.usable_cpus()]))")
    with load.quota(1.0) as enter:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=enter,
                             check=True).stdout
        root = load._v2_root() or load._v1_root()
        mine = os.path.join(root, f"{load.PREFIX}{os.getpid()}")
        assert os.path.isdir(mine)
    cgroups, usable = json.loads(out)
    assert f"/{load.PREFIX}{os.getpid()}" in cgroups and usable == 1
    assert not os.path.exists(mine)


def test_without_a_cgroup_file_system_the_quota_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(load, "_v2_root", lambda: None)
    monkeypatch.setattr(load, "_v1_root", lambda: None)
    with pytest.raises(load.LoadError, match="--cpu-quota needs the cgroup cpu controller"):
        with load.quota(1.0):
            pass
