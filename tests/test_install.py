"""The package as pip installs it from a wheel or ``pip install .``, not from this tree.

The README installs in editable mode, where the package runs from this tree; a user who installs
the package the usual way gets setuptools' ``build_py`` output instead. That output must carry
the shipped tuning logs (databases, profiles, XGBoost models), and the installed package must
find them there: without them a build plans on roofline estimates and transfers no record.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tracked(folder: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return out.stdout.split()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The package as setuptools builds it for a wheel (``build_py``, what ``bdist_wheel`` packs)."""
    pytest.importorskip("setuptools")
    lib = tmp_path_factory.mktemp("install") / "lib"
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return lib


def _printed(built, cwd, code: str) -> str:
    """What ``code`` prints, run in ``cwd`` with the built package first on the path."""
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env={**os.environ, "PYTHONPATH": str(built)},
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_built_package_carries_every_shipped_log(built):
    shipped = _tracked("tuning_logs")
    assert any(f.endswith("profile.jsonl") for f in shipped)
    missing = [f for f in shipped
               if not os.path.isfile(built / "tvm_partition" / "tuning_logs" / os.path.relpath(f, "tuning_logs"))]
    assert missing == []


def test_the_installed_package_reads_its_own_logs(built, tmp_path):
    """Run from another folder with the built package first on the path, the default logs are the
    package's own copy."""
    assert _printed(built, tmp_path, "from tvm_partition import devices; print(devices.DEFAULT_LOGS)") == \
        str(built / "tvm_partition" / "tuning_logs")


def test_the_installed_package_writes_benchmarks_in_the_current_folder(built, tmp_path):
    """``bench`` and ``bench-kernels`` write ``benchmarks/results/`` (and ``BENCHMARKS.md``) of the
    source tree they run from; an installed package has none, and writes into the current folder,
    not into site-packages."""
    assert _printed(built, tmp_path, "from tvm_partition.bench import results; print(results.workspace())") == \
        str(tmp_path)


def test_this_tree_keeps_its_logs_and_benchmarks_beside_the_package():
    from tvm_partition import devices

    from tvm_partition.bench import results

    assert devices.DEFAULT_LOGS == os.path.join(REPO, "tuning_logs")
    assert results.workspace() == REPO
