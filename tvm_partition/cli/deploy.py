"""Bundle an artifact for an edge server that has only Python and numpy.

``DIR`` gets ``artifact/`` (a verified copy), ``site/`` (a runtime-only TVM: the ``tvm`` Python
package with ``libtvm_runtime.so`` but without the compiler library ``libtvm_compiler.so``, the
``tvm_ffi`` package built for the server's Python, ``typing_extensions`` and ``cloudpickle``, and
the runtime half of ``tvm_partition``), and two scripts that set ``TVM_USE_RUNTIME_LIB=1`` and ``sys.path`` themselves:

    python3 DIR/run.py [--input in.npz] [--output out.npz] [--repeat N]   # run the artifact there
    python3 DIR/rpc_server.py [--host 127.0.0.1] [--port 9090]            # serve it to TVM RPC

``--python X.Y`` is the server's Python (default: this one). ``tvm_ffi`` has a CPython-specific
extension: for another version its wheel is fetched with ``pip download`` (needs the package
index, or ``--find-links``); the rest is pure Python or independent of the Python version.
Nothing is written outside ``DIR``, which must not exist or be empty.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

from ..runtime import artifact
from .. import flags
from ..errors import TvmPartitionError

#: What of tvm_partition the runner needs (numpy + TVM runtime only): the base modules and the
#: runtime/ folder, whole. Paths inside the package.
RUNTIME_MODULES = ("__init__.py", "devices.py", "errors.py", "flags.py", "inputs.py", "processes.py", "runtime")
#: Parts of the tvm / tvm_ffi packages an edge server does not need.
DROP = {"3rdparty", "include", "src", "web", "cmake", "lib64", "cython", "__pycache__",
        "libtvm_compiler.so", "CMakeLists.txt"}

SCRIPT = '''#!/usr/bin/env python3
"""{doc}"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # leave the bundle as it was copied
{check}os.environ["TVM_USE_RUNTIME_LIB"] = "1"  # before tvm is imported: load libtvm_runtime.so only
SITE = os.path.join(HERE, "site")
sys.path.insert(0, SITE)
# TVM's RPC server runs its loop in a child python: it must find the bundle too
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (SITE, os.environ.get("PYTHONPATH")) if p)
{body}
'''
VERSION_CHECK = '''if sys.version_info[:2] != {version}:
    sys.exit("error: this bundle was made for Python %d.%d, not %d.%d (rebuild it with deploy --python)"
             % ({version} + sys.version_info[:2]))
'''
RUN_BODY = '''from tvm_partition.runtime.run import main

sys.exit(main([os.path.join(HERE, "artifact"), *sys.argv[1:]]))'''
SERVER_BODY = '''import functools
import runpy

import tvm.rpc

from tvm_partition.devices import init_rpc_server

if "--host" not in sys.argv:
    sys.argv[1:1] = ["--host", "127.0.0.1"]  # loopback unless told otherwise
# a runtime-only TVM loads no CUDA backend: the server's process loads it before it forks sessions
tvm.rpc.Server = functools.partial(tvm.rpc.Server, server_init_callback=init_rpc_server)
sys.argv[0] = "tvm.exec.rpc_server"
runpy.run_module("tvm.exec.rpc_server", run_name="__main__")'''


class DeployError(TvmPartitionError, ValueError):
    """The bundle cannot be made; the message says why and what to do."""


def _ignore(_dir, names):
    return [n for n in names if n in DROP]


def _tvm_ffi(site: str, python: str, work: str, find_links: str | None) -> None:
    """Put a ``tvm_ffi`` package for ``python`` (X.Y) into ``site``."""
    import tvm_ffi

    local = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if python == local:
        shutil.copytree(os.path.dirname(tvm_ffi.__file__), os.path.join(site, "tvm_ffi"), ignore=_ignore)
        return
    version = importlib.metadata.version("apache-tvm-ffi")
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-cache-dir", "--only-binary=:all:",
           "--python-version", python, "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
           "--platform", "manylinux_2_24_x86_64", "--platform", "manylinux_2_17_x86_64",
           "-d", work, f"apache-tvm-ffi=={version}"]
    if find_links:
        cmd[4:4] = ["--no-index", "--find-links", find_links]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = [f for f in os.listdir(work) if f.endswith(".whl")]
    if proc.returncode or not wheels:
        last = (proc.stderr.strip().splitlines() or ["no wheel"])[-1]
        raise DeployError(f"cannot get apache-tvm-ffi=={version} for Python {python} ({last}); run deploy with that "
                          f"Python, or give --find-links DIR holding its wheel")
    with zipfile.ZipFile(os.path.join(work, wheels[0])) as z:
        z.extractall(work, [n for n in z.namelist() if n.startswith("tvm_ffi/")])
    shutil.copytree(os.path.join(work, "tvm_ffi"), os.path.join(site, "tvm_ffi"), ignore=_ignore)


def copy_runtime_package(site: str, modules=RUNTIME_MODULES) -> None:
    """Copy the runtime half of ``tvm_partition`` (``modules``: files and folders inside the
    package) into ``site/tvm_partition``."""
    pkg = os.path.join(site, "tvm_partition")
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for name in modules:
        src, dst = os.path.join(source, name), os.path.join(pkg, name)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst, ignore=_ignore, dirs_exist_ok=True)
        else:
            shutil.copy(src, dst)


def write_script(path: str, doc: str, body: str, version: tuple[int, int] | None = None) -> None:
    """A bundle script: runtime-only TVM (``TVM_USE_RUNTIME_LIB=1``), ``HERE/site`` first on the
    path, then ``body``; with ``version`` it refuses any other Python (the bundled ``tvm_ffi``
    is built for one)."""
    check = VERSION_CHECK.format(version=repr(tuple(version))) if version else ""
    with open(path, "w", encoding="utf-8") as f:
        f.write(SCRIPT.format(doc=doc, check=check, body=body))
    os.chmod(path, 0o755)


def python_version(python: str | None) -> tuple[int, int]:
    """``X.Y`` (default: this Python's) as a pair, 3.10 or newer."""
    python = python or f"{sys.version_info[0]}.{sys.version_info[1]}"
    parts = python.split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or (int(parts[0]), int(parts[1])) < (3, 10):
        raise DeployError(f"--python {python!r}: give the server's Python as X.Y, 3.10 or newer (TVM 0.27 needs it)")
    return int(parts[0]), int(parts[1])


def runtime_site(site: str, python: tuple[int, int], find_links: str | None = None, scratch: str | None = None) -> None:
    """Write a runtime-only TVM for ``python`` into ``site`` (a new folder): the ``tvm`` package
    without the compiler library, ``tvm_ffi`` built for that Python, ``typing_extensions`` and
    ``cloudpickle``, and the runtime half of ``tvm_partition``. ``scratch``: a folder to download
    into (default: beside ``site``), left as it was."""
    import cloudpickle
    import tvm
    import typing_extensions

    shutil.copytree(os.path.dirname(tvm.__file__), os.path.join(site, "tvm"), ignore=_ignore)
    work = tempfile.mkdtemp(prefix=".wheels-", dir=scratch or os.path.dirname(os.path.abspath(site)))
    try:
        _tvm_ffi(site, "%d.%d" % python, work, find_links)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    shutil.copy(typing_extensions.__file__, site)
    # pure Python, needed by TVM's RPC server (its worker process is started with cloudpickle)
    shutil.copytree(os.path.dirname(cloudpickle.__file__), os.path.join(site, "cloudpickle"), ignore=_ignore)
    copy_runtime_package(site)


def bundle(art_dir: str, out: str, python: str | None = None, find_links: str | None = None) -> str:
    manifest = artifact.read_manifest(art_dir)
    artifact.verify(art_dir, manifest)
    version = python_version(python)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise DeployError(f"{out}: exists and is not an empty folder (the bundle needs a fresh one)")
    os.makedirs(out, exist_ok=True)
    try:
        runtime_site(os.path.join(out, "site"), version, find_links, scratch=out)  # nothing written outside it
        shutil.copytree(art_dir, os.path.join(out, "artifact"), ignore=shutil.ignore_patterns(".*"))
        artifact.verify(os.path.join(out, "artifact"), manifest)
        for script, doc, body in (
            ("run.py", "Run the bundled artifact with the bundled runtime-only TVM: python3 run.py --help", RUN_BODY),
            ("rpc_server.py", "TVM's RPC server on the bundled runtime (127.0.0.1 unless --host is given)", SERVER_BODY),
        ):
            write_script(os.path.join(out, script), doc, body, version)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return out


def size_mib(path: str) -> float:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs) / 2**20


def parser():
    ap = flags.parser("deploy", __doc__)
    ap.add_argument("artifact", help="directory written by `tvm-partition compile --out`")
    ap.add_argument("--bundle", required=True, metavar="DIR", help="write the bundle here (a new or empty folder)")
    ap.add_argument("--python", metavar="X.Y", help="the edge server's Python version (default: this one)")
    ap.add_argument("--find-links", metavar="DIR", help="folder holding the apache-tvm-ffi wheel for --python "
                                                        "(offline build hosts)")
    return ap


@flags.command
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        bundle(args.artifact, args.bundle, args.python, args.find_links)
    except OSError as e:
        print(f"error: {args.bundle}: cannot write the bundle ({e.strerror or e})", file=sys.stderr)
        return 2
    print(f"wrote {args.bundle}/ ({size_mib(args.bundle):.0f} MiB): python3 {args.bundle}/run.py runs it "
          f"with numpy and the bundled TVM runtime")
    return 0


if __name__ == "__main__":
    sys.exit(main())
