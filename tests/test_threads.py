"""The thread pool follows the load (issue 21 item 2): :class:`tvm_partition.runtime.threads.Governor`
sizes TVM's pool to the CPUs other processes leave free. Oracles: scripted ``/proc`` readings, and
the real machine with a busy process of the test's own pinned beside it."""

import os
import subprocess
import sys
import time

import pytest

from tvm_partition.runtime import threads


def _scripted(monkeypatch, readings):
    """Feed the governor ``(busy, total, own)`` tick readings, one per reading taken."""
    it = iter(readings)
    current = {}

    def cpu_lines(cpus):
        current["r"] = next(it)
        return current["r"][0], current["r"][1]

    monkeypatch.setattr(threads, "_cpu_lines", cpu_lines)
    monkeypatch.setattr(threads, "_own_ticks", lambda: current["r"][2])


def test_the_pool_leaves_the_cpus_others_use_and_takes_them_back(monkeypatch):
    # two CPUs, 100 ticks each per interval: (busy, total, ours) since boot
    _scripted(monkeypatch, [(0, 0, 0),
                            (100, 200, 0),      # a neighbour used one CPU, we nothing: one left
                            (300, 400, 100),    # we used one, the neighbour the other: still one left
                            (340, 600, 140),    # the neighbour is gone (we used 40 ticks)
                            (540, 800, 340)])   # we used both CPUs ourselves: that is no neighbour
    sizes = []
    gov = threads.Governor(2, sizes.append, cpus={0, 1}, interval_s=0.0)
    assert [gov.poll() for _ in range(4)] == [1, 1, 2, 2]
    assert sizes == [1, 2]  # TVM is called only when the size changes


def test_the_pool_never_grows_past_its_start_nor_below_one(monkeypatch):
    _scripted(monkeypatch, [(0, 0, 0), (0, 800, 0), (800, 1600, 0)])  # 8 idle CPUs, then 8 busy ones
    sizes = []
    gov = threads.Governor(3, sizes.append, cpus=set(range(8)), interval_s=0.0)
    assert gov.poll() == 3 and gov.poll() == 1 and sizes == [1]


def test_readings_are_spaced(monkeypatch):
    _scripted(monkeypatch, [(0, 0, 0)])  # a second reading would raise StopIteration
    gov = threads.Governor(2, lambda n: None, cpus={0, 1}, interval_s=60.0)
    assert gov.poll() == 2


@pytest.mark.skipif(not os.path.exists("/proc/stat") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs /proc and two CPUs")
def test_a_busy_neighbour_on_the_real_machine_takes_a_thread():
    cpus = sorted(os.sched_getaffinity(0))[:2]
    busy = subprocess.Popen(["taskset", "-c", str(cpus[1]), sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        sizes = []
        gov = threads.Governor(2, sizes.append, cpus=set(cpus), interval_s=0.2)
        time.sleep(0.5)
        assert gov.poll() == 1 and sizes == [1]
    finally:
        busy.kill()
        busy.wait()


def test_warm_up_runs_three_then_up_to_its_most_within_its_time(monkeypatch):
    """Runner.time's warm-up: a process's first runs are slow until its memory is reused (seven
    runs for a 6 MB copy, 50-100 for a model of one 9 us kernel); enough runs for that, but no
    more than its time where runs are long. On a clock that each run moves on by its length (real
    sleeps overran on a loaded 2-core CI machine: three of 12 ms took over 50)."""
    import types

    from tvm_partition.runtime import runner

    clock = [0.0]
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(runner, "WARMUP_S", 0.05)

    def run_for(seconds):
        def run():
            clock[0] += seconds
        return run

    assert runner.warm_up(run_for(0.0)) == runner.WARMUP_RUNS[1] == 200  # quick runs: the most
    assert runner.warm_up(run_for(0.03)) == 3  # past the time after the fewest
    assert runner.warm_up(run_for(0.012)) == 5  # until the time is up: 48 ms after four, 60 after five


def test_timing_a_kernel_alone_sizes_the_pool_as_a_runner_does():
    # TVM's own default on x86 is half the CPUs: a script timing kernels before anything sized the
    # pool timed them on one thread here (tuning.time_kernel)
    code = ("import os; os.environ.pop('TVM_NUM_THREADS', None)\n"
            "from test_transfer import TARGET, matmul\n"
            "from tvm_partition.build.tuning import time_kernel\n"
            "from tvm_partition.devices import usable_cpus\n"
            "time_kernel(matmul(8, 8, 8)['main'], TARGET, 1, 1)\n"
            "assert os.environ['TVM_NUM_THREADS'] == str(usable_cpus()), os.environ['TVM_NUM_THREADS']\n"
            "os.environ['TVM_NUM_THREADS'] = '1'\n"  # a pool sized before (bench --threads 1) is kept
            "time_kernel(matmul(8, 8, 8)['main'], TARGET, 1, 1)\n"
            "assert os.environ['TVM_NUM_THREADS'] == '1'\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "TVM_PARTITION_CHOSEN_THREADS")}
    env["PYTHONPATH"] = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
