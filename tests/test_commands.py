"""The one command line: ``tvm-partition COMMAND`` lists and dispatches every command, and every
command answers bad input with one line, ``error: ...``, and status 2: no traceback, no usage block.

The matrix runs in process (``cli.main``), so it costs only what each command does before it
refuses; the commands that load a model load a 2-step LSTM.
"""

import os
import subprocess
import sys

import pytest

from tvm_partition import cli

TINY = ["lstm", "--seq-len", "2", "--batch", "2"]


@pytest.fixture(scope="module")
def corrupt_logs(tmp_path_factory):
    """A tuning-logs folder whose MetaSchedule database is not JSON (a disk that filled up mid-write)."""
    d = tmp_path_factory.mktemp("corrupt_logs")
    (d / "database_workload.json").write_text('{"not json')
    (d / "database_tuning_record.json").write_text("garbage\n")
    return str(d)


def _matrix(tmp):
    missing = str(tmp / "missing")
    return {
        "compile-flag": (["compile", "lstm", "--batch", "0"], "--batch must be >= 1"),
        "compile-model": (["compile", "nosuchmodel"], "unknown model 'nosuchmodel'"),
        "compile-devices": (["compile", *TINY, "--devices", "cpu,tpu"], "unknown device kind 'tpu'"),
        "compile-plan": (["compile", *TINY, "--devices", "cpu,cpu", "--plan", missing], "cannot read plan"),
        "compile-corrupt-db": (["compile", *TINY, "--devices", "cpu,cpu", "--strategy", "cpu", "--tuning-logs", "CORRUPT"],
                               "unreadable tuning database"),
        "compile-strategy": (["compile", "lstm", "--strategy", "magic"], "--strategy invalid choice"),
        "run-artifact": (["run", missing], "no such artifact"),
        "run-repeat": (["run", missing, "--repeat", "-1"], "--repeat must be >= 0"),
        "deploy-artifact": (["deploy", missing, "--bundle", str(tmp / "bundle")], "no such artifact"),
        "deploy-no-bundle": (["deploy", missing], "--bundle"),
        "profile-nothing": (["profile"], "name at least one model"),
        "profile-budget": (["profile", "lstm", "--budget-s", "-1"], "--budget-s must be >= 0"),
        "profile-corrupt-db": (["profile", *TINY, "--tuning-logs", "CORRUPT", "--budget-s", "1"],
                               "unreadable tuning database"),
        "tune-trials": (["tune", "lstm", "--trials", "-1"], "--trials must be >= 0"),
        "tune-corrupt-db": (["tune", *TINY, "--tuning-logs", "CORRUPT", "--list"], "unreadable tuning database"),
        "place-problem": (["place", missing], "cannot read problem"),
        "place-time": (["place", missing, "--time-limit", "0"], "--time-limit must be > 0"),
        "stages-servers": (["stages", "lstm", "--servers", "0", "--out", str(tmp / "st")], "--servers must be >= 1"),
        "stages-out": (["stages", "lstm"], "--out"),
        "pipeline-servers": (["pipeline", missing], "the following arguments are required: --ray"),
        "pipeline-repeat": (["pipeline", missing, "--repeat", "x"], "'x' is not an integer"),
        "bench-repeat": (["bench", "--repeat", "0"], "--repeat must be >= 1"),
        "bench-kernels-model": (["bench-kernels", "nosuchmodel", "--no-models", "--out", str(tmp / "bk")],
                                "unknown model 'nosuchmodel'"),
        "bench-kernels-corrupt-db": (["bench-kernels", "lstm", "--tuning-logs", "CORRUPT"], "unreadable tuning database"),
        "unknown-command": (["frobnicate"], "unknown command 'frobnicate'"),
    }


CASES = sorted(_matrix(__import__("pathlib").Path("/x")))


def test_matrix_covers_every_command():
    covered = {argv[0] for argv, _ in _matrix(__import__("pathlib").Path("/x")).values()}
    assert set(cli.COMMANDS) <= covered


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line(case, tmp_path, corrupt_logs, capsys):
    argv, expected = _matrix(tmp_path)[case]
    argv = [corrupt_logs if a == "CORRUPT" else a for a in argv]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "bundle").exists() and not (tmp_path / "st").exists()  # nothing half written


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in cli.COMMANDS)


@pytest.mark.parametrize("name", sorted(cli.COMMANDS))
def test_every_command_has_help_from_its_parser(name, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([name, "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: tvm-partition {name} ")


def test_module_entry_point_and_runtime_commands_import_no_compiler():
    """``python -m tvm_partition`` dispatches; ``run`` and ``pipeline`` (what an edge server runs)
    load without the compiler: no Relax, no planner, no build."""
    code = ("import sys; from tvm_partition import cli; cli.command_module('run'); cli.command_module('pipeline'); "
            "print(sorted(m for m in sys.modules if m in ('tvm.relax', 'tvm_partition.build.executable', "
            "'tvm_partition.planners', 'tvm_partition.cli.compile', 'tvm_partition.ir.graph')))")
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr
    proc = subprocess.run([sys.executable, "-m", "tvm_partition", "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0 and "bench-kernels" in proc.stdout


def test_the_parsers_lists_are_the_zoos_and_the_planners():
    """``flags.ZOO_MODELS``, ``flags.STRATEGIES`` and ``flags.PLACEMENT_STRATEGIES`` (what ``--help``
    lists without importing TVM) are ``frontend.zoo.NAMES``, ``planners.NAMES`` and
    ``planners.placement.STRATEGY_NAMES``, in their order."""
    from tvm_partition import flags, planners
    from tvm_partition.frontend import zoo
    from tvm_partition.planners.placement import STRATEGY_NAMES

    assert flags.ZOO_MODELS == zoo.NAMES and flags.STRATEGIES == planners.NAMES
    assert flags.PLACEMENT_STRATEGIES == STRATEGY_NAMES


def test_readme_usage_is_what_the_parsers_print():
    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md"),
                  encoding="utf-8").read()
    block = readme.split("<!-- usage:begin", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    assert block.rstrip() == cli.usage_block().rstrip(), "regenerate the README's usage block (see its marker)"


def test_readme_python_imports_resolve():
    """The imports of the README's Python examples name modules and names that exist (they went
    stale once when modules moved into layer folders)."""
    readme = open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md"),
                  encoding="utf-8").read()
    blocks = [b.split("```", 1)[0] for b in readme.split("```python\n")[1:]]
    imports = [line for b in blocks for line in b.splitlines() if line.startswith(("from tvm_partition", "import tvm_partition"))]
    assert len(imports) >= 3
    for line in imports:
        exec(line, {})  # raises ImportError on a stale path


def _cgroup(tmp_path, proc: str, files: dict) -> tuple[str, str]:
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "proc_cgroup").write_text(proc)
    return str(root), str(tmp_path / "proc_cgroup")


@pytest.mark.parametrize("proc,files,quota", [
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),  # v2, no quota
    ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),  # v2 at the container's root (docker --cpus 1.5)
    ("0::/app/web\n", {"cpu.max": "max 100000\n", "app/cpu.max": "100000 100000\n",
                       "app/web/cpu.max": "300000 100000\n"}, 1.0),  # the tightest ancestor
    ("4:cpu,cpuacct:/job\n1:memory:/job\n", {"cpu,cpuacct/job/cpu.cfs_quota_us": "50000\n",
                                            "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n"}, 0.5),  # v1
    ("4:cpu,cpuacct:/job\n", {"cpu,cpuacct/job/cpu.cfs_quota_us": "-1\n",
                              "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n"}, None),
    ("0::/\n", {}, None),  # nothing readable
])
def test_cpu_quota_of_this_process(tmp_path, proc, files, quota):
    from tvm_partition.devices import _cgroup_quota, usable_cpus

    root, proc_file = _cgroup(tmp_path, proc, files)
    assert _cgroup_quota(root, proc_file) == quota
    affinity = len(os.sched_getaffinity(0))
    assert usable_cpus(root, proc_file) == max(1, min(affinity, int(quota)) if quota is not None else affinity)


def test_threads_never_exceed_what_the_process_may_use(monkeypatch):
    from tvm_partition import devices

    for var in ("TVM_NUM_THREADS", devices.CHOSEN_THREADS, "TVM_BIND_THREADS"):  # restored after the test
        monkeypatch.setenv(var, "")
    monkeypatch.setattr(devices, "usable_cpus", lambda: 1)
    assert devices.use_cpu_threads(4) == 1 and os.environ["TVM_NUM_THREADS"] == "1"  # a built-for-4 artifact
    assert os.environ["TVM_BIND_THREADS"] == "" and not devices.threads_fixed_by_user()  # "" is the user's
    monkeypatch.setattr(devices, "usable_cpus", lambda: 2)  # a child process inherits our choice...
    assert devices.use_cpu_threads(4) == 2  # ...and sizes its own pool (e.g. outside the quota)
    monkeypatch.setenv("TVM_NUM_THREADS", "3")  # the documented override wins
    assert devices.threads_fixed_by_user() and devices.use_cpu_threads(4) == 3
    monkeypatch.delenv("TVM_BIND_THREADS")
    devices.use_cpu_threads(4)
    assert os.environ["TVM_BIND_THREADS"] == "0"  # unbound unless the user binds them
