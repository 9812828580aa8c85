"""The scripts in examples/ are what a new user runs first: they must keep working."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("script,args", [("pass_in_pipeline.py", []), ("custom_plan.py", ["--seq-len", "3"])])
def test_example_runs(script, args, tmp_path):
    if script == "custom_plan.py":
        args = args + ["--out", str(tmp_path / "custom")]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "max_abs_err=" in proc.stdout
