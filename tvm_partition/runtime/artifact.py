"""Artifacts: what ``compile --out DIR`` writes and what an edge server loads.

``DIR/model.so`` (the multi-device Relax VM executable), ``DIR/params.npz`` (the weights, in
``main``'s order; ``main_transform_params`` slices and copies them to their devices once at load
time; written byte for byte the same for the same weights, :func:`write_params`), ``DIR/plan.json`` and ``DIR/manifest.json`` (inputs/outputs with names, shapes and dtypes,
devices, targets, TVM version, hardware fingerprint, and the sha256 of every file).

This module imports only numpy and the TVM *runtime* (lazily): an edge server needs no compiler.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import time
import zipfile

import numpy as np

from ..devices import DeviceSpec
from ..errors import TvmPartitionError

FILES = ("model.so", "params.npz", "plan.json")
MANIFEST = "manifest.json"
#: 2: the CPU virtual devices of a build share one memory (no copies between them; every CPU is
#: the runtime's ``cpu(0)``: :attr:`tvm_partition.devices.DeviceSpec.device_id`). A format-1
#: artifact with one CPU runs the same way; one with two CPUs copies to ``cpu(1)`` and is refused.
FORMAT_VERSION = 2
#: The bytecode twin of ``main`` in every ``model.so`` (``main`` itself is compiled to native
#: code, which calls its kernels past the VM's instrument): ``run --kernels`` times this one.
#: Artifacts built before it have only ``main``, in bytecode.
KERNELS_MAIN = "main_kernels"


class ArtifactError(TvmPartitionError, ValueError):
    """A missing, corrupt or mismatched artifact; the message names the file."""


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def save(out_dir: str, *, executable, params: list, plan_json: dict, manifest: dict) -> str:
    """Write the artifact; files are written under temporary names and renamed, so a crash never
    leaves a half-written artifact that looks complete."""
    try:
        return _write(out_dir, executable=executable, params=params, plan_json=plan_json, manifest=manifest)
    except OSError as e:  # --out is a file, its parent is missing, no permission, disk full
        raise ArtifactError(f"{out_dir}: cannot write the artifact ({e.strerror or e})") from None


def _write(out_dir: str, *, executable, params: list, plan_json: dict, manifest: dict) -> str:
    os.makedirs(out_dir, exist_ok=True)
    tmp = {name: os.path.join(out_dir, f".{name}.tmp") for name in FILES}
    executable.export_library(tmp["model.so"])
    write_params(tmp["params.npz"], params)
    with open(tmp["plan.json"], "w", encoding="utf-8") as f:
        json.dump(plan_json, f, indent=2)
        f.write("\n")
    manifest = dict(manifest)
    manifest["format_version"] = FORMAT_VERSION
    manifest["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    manifest["num_params"] = len(params)
    manifest["sha256"] = {name: sha256(tmp[name]) for name in FILES}
    for name in FILES:
        os.replace(tmp[name], os.path.join(out_dir, name))
    with open(os.path.join(out_dir, f".{MANIFEST}.tmp"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    os.replace(os.path.join(out_dir, f".{MANIFEST}.tmp"), os.path.join(out_dir, MANIFEST))
    return out_dir


#: The fixed fields of every member of a params.npz (:func:`write_params`): the zip format's
#: earliest date, stored (random weights do not compress), Unix, rw-------.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_NPY_MAGIC = b"\x93NUMPY\x01\x00"


def npy_bytes(a: np.ndarray) -> bytes:
    """``a`` as a version 1.0 ``.npy`` file, header written here (the dict numpy writes, padded with
    spaces to a multiple of 64 bytes), so the bytes do not depend on the numpy version."""
    a = np.asarray(a, order="C")  # (np.ascontiguousarray makes a 0-d array 1-d)
    header = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (np.lib.format.dtype_to_descr(a.dtype),
                                                                     tuple(int(d) for d in a.shape))
    pad = -(len(_NPY_MAGIC) + 2 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    return _NPY_MAGIC + struct.pack("<H", len(header)) + header + a.tobytes()


def write_params(path: str, params: list) -> None:
    """Write the weights as ``params.npz`` (members ``p0.npy``, ``p1.npy``... that ``np.load``
    reads) whose bytes depend on the weights alone: no time stamps, no numpy or Python version in
    them. The same weights give the same file and the same sha256 on any machine, so a file drawn
    again from a seed elsewhere (``manifest["weights"]``) is checked against the manifest like a
    copied one, and identical weights of two artifacts are one file in a bundle."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for i, p in enumerate(params):
            info = zipfile.ZipInfo(f"p{i}.npy", date_time=_ZIP_DATE)
            info.create_system, info.external_attr = 3, 0o600 << 16
            z.writestr(info, npy_bytes(np.asarray(p)))


def read_manifest(art_dir: str) -> dict:
    path = os.path.join(art_dir, MANIFEST)
    if not os.path.isdir(art_dir):
        raise ArtifactError(f"{art_dir}: no such artifact directory")
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise ArtifactError(f"{art_dir}: no {MANIFEST} (not an artifact written by tvm_partition.cli.compile --out)") from None
    except (OSError, json.JSONDecodeError) as e:
        raise ArtifactError(f"{path}: unreadable manifest ({e})") from None
    if not isinstance(manifest, dict):
        raise ArtifactError(f"{path}: not a manifest (expected a JSON object)")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION and not (version == 1 and _cpus(manifest) <= 1):
        raise ArtifactError(f"{path}: artifact format {version!r} is not supported (recompile the artifact)")
    missing = [k for k in ("inputs", "outputs", "devices", "num_params", "sha256") if k not in manifest]
    if missing:
        raise ArtifactError(f"{path}: manifest lacks {', '.join(missing)} (recompile the artifact)")
    return manifest


def _cpus(manifest: dict) -> int:
    devices = manifest.get("devices")
    return sum(1 for d in devices if isinstance(d, dict) and d.get("kind") == "cpu") if isinstance(devices, list) else 0


def verify(art_dir: str, manifest: dict) -> None:
    """Refuse an artifact whose files are missing or do not match their recorded sha256."""
    digests = manifest.get("sha256")
    if not isinstance(digests, dict) or any(name not in digests for name in FILES):
        raise ArtifactError(f"{os.path.join(art_dir, MANIFEST)}: no sha256 for each of {', '.join(FILES)}")
    for name, digest in digests.items():
        path = os.path.join(art_dir, name)
        if not os.path.exists(path):
            raise ArtifactError(f"{path}: missing")
        if sha256(path) != digest:
            raise ArtifactError(f"{path}: checksum mismatch (the file changed after compile; recompile or re-copy it)")


def devices_of(manifest: dict) -> list[DeviceSpec]:
    return [DeviceSpec.from_json(d) for d in manifest["devices"]]


def host_stand_in(manifest: dict, gpu_here: bool) -> list[DeviceSpec] | None:
    """The artifact's devices with a CPU in each GPU's place, where this machine has no GPU
    (``gpu_here`` false) and the artifact launches no kernel on one (a ``cpu,gpu`` plan that keeps
    every op on the CPU: the README's LSTM, ``auto`` choosing ``cpu``); None where it runs as
    built. Any copy between the two then moves the same values (``compile --check`` runs such an
    artifact so). An artifact whose manifest does not list its kernels' devices runs as built; one
    that lists none launches none on a GPU (a model of a ``cumsum`` alone, whose scan kernel the
    build's ``DispatchSortScan`` makes on its operand's device, the host)."""
    devices = devices_of(manifest)
    launched = manifest.get("kernel_devices")
    if gpu_here or all(d.kind == "cpu" for d in devices) or launched is None or not cpu_kernels_only(devices, launched):
        return None
    host = next(d for d in devices if d.kind == "cpu")
    return [d if d.kind == "cpu" else DeviceSpec(d.name, "cpu", i, host.target) for i, d in enumerate(devices)]


def cpu_kernels_only(devices: list[DeviceSpec], kernel_devices: dict[str, str]) -> bool:
    """Whether every kernel (``kernel_devices``: kernel -> device name, as a build and its
    manifest name them) runs on a CPU of ``devices``."""
    kinds = {d.name: d.kind for d in devices}
    return all(kinds.get(name) == "cpu" for name in kernel_devices.values())


def load_params(art_dir: str, manifest: dict) -> list[np.ndarray]:
    with np.load(os.path.join(art_dir, "params.npz")) as z:
        return [z[f"p{i}"] for i in range(manifest["num_params"])]
