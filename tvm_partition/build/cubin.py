"""What each kernel of a CUDA cubin asks of the GPU, read from the cubin itself: no GPU, no driver.

A cubin is an ELF file. For every kernel ``K``, ptxas writes (checked against ``ptxas -v``'s info
log for sm_75, sm_87 and sm_90 with NVRTC 13.5: ``tests/test_cuda_kernels.py``):

* registers per thread: ``EIATTR_REGCOUNT`` (0x2f) in the section ``.nv.info``, keyed by K's symbol;
* the stack frame (local memory: spills and arrays kept off registers): ``EIATTR_FRAME_SIZE`` (0x11);
* the threads per block it was compiled for: ``EIATTR_MAX_THREADS`` (0x05, ``.maxntid``: x, y, z) in
  ``.nv.info.K``, written from ``__launch_bounds__`` (also where ptxas ignores an impossible bound);
* static shared memory: the size of the section ``.nv.shared.K``. For sm_90 ptxas puts the
  1 KiB the CUDA driver reserves per block (compute capability 8.0 and newer) into that section
  too, and says so with a ``.nv.shared.reserved.*`` section; ptxas -v does not count it.

Every attribute entry of an ``.nv.info`` section is ``[format][attribute]`` then, for format 4
(``EIFMT_SVAL``), a 16-bit size and that many bytes, else a 16-bit value.
"""

from __future__ import annotations

import dataclasses
import struct

EIATTR_MAX_THREADS = 0x05
EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
EIFMT_SVAL = 0x04

#: Shared memory the CUDA driver reserves per block on compute capability 8.0 and newer (CUDA C
#: Programming Guide, "Shared Memory", cc 8.x / 9.x); sm_90 cubins carry it in the kernel's section.
DRIVER_RESERVED_SMEM = 1024


class CubinError(ValueError):
    """The bytes are not a cubin this parser understands."""


@dataclasses.dataclass(frozen=True)
class KernelResources:
    name: str
    registers: int  # per thread
    shared_bytes: int  # static shared memory the kernel declares (what ptxas -v reports)
    stack_bytes: int  # local memory per thread (spills, arrays off registers)
    max_threads: int | None  # threads per block of __launch_bounds__ (x*y*z); None: no bound


@dataclasses.dataclass(frozen=True)
class _Section:
    name: str
    offset: int
    size: int


def _sections(elf: bytes) -> list[_Section]:
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise CubinError("not a 64-bit little-endian ELF file (a cubin)")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = raw[shstrndx][4]

    def name(off: int) -> str:
        start = names_at + off
        return elf[start:elf.index(b"\0", start)].decode()

    return [_Section(name(r[0]), r[4], r[5]) for r in raw]


def _symbols(elf: bytes, sections: list[_Section]) -> list[str]:
    symtab = next((s for s in sections if s.name == ".symtab"), None)
    if symtab is None:
        raise CubinError("the cubin has no symbol table")
    strtab = next(s for s in sections if s.name == ".strtab")
    out = []
    for i in range(symtab.size // 24):
        (off,) = struct.unpack_from("<I", elf, symtab.offset + 24 * i)
        start = strtab.offset + off
        out.append(elf[start:elf.index(b"\0", start)].decode())
    return out


def _attributes(elf: bytes, section: _Section):
    """Yield (attribute, payload bytes) of one ``.nv.info`` section."""
    p, end = section.offset, section.offset + section.size
    while p + 4 <= end:
        fmt, attr = elf[p], elf[p + 1]
        if fmt == EIFMT_SVAL:
            (size,) = struct.unpack_from("<H", elf, p + 2)
            yield attr, elf[p + 4:p + 4 + size]
            p += 4 + size
        else:
            yield attr, elf[p + 2:p + 4]
            p += 4


def kernel_resources(cubin: bytes) -> dict[str, KernelResources]:
    """``{kernel name: KernelResources}`` for every kernel (``.text.NAME`` section) of ``cubin``."""
    elf = bytes(cubin)
    sections = _sections(elf)
    by_name = {s.name: s for s in sections}
    kernels = [s.name[len(".text."):] for s in sections if s.name.startswith(".text.")]
    symbols = _symbols(elf, sections)
    per_symbol: dict[str, dict[int, int]] = {}
    if ".nv.info" in by_name:
        for attr, data in _attributes(elf, by_name[".nv.info"]):
            if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(data) == 8:
                sym, value = struct.unpack("<II", data)
                per_symbol.setdefault(symbols[sym], {})[attr] = value
    reserved = any(s.name.startswith(".nv.shared.reserved") for s in sections)
    out = {}
    for k in kernels:
        attrs = per_symbol.get(k, {})
        if EIATTR_REGCOUNT not in attrs:
            raise CubinError(f"kernel {k} has no register count (EIATTR_REGCOUNT) in .nv.info")
        threads = None
        info = by_name.get(f".nv.info.{k}")
        for attr, data in _attributes(elf, info) if info else ():
            if attr == EIATTR_MAX_THREADS and len(data) == 12:
                x, y, z = struct.unpack("<III", data)
                threads = x * y * z
        shared = by_name[f".nv.shared.{k}"].size if f".nv.shared.{k}" in by_name else 0
        if reserved and shared:
            shared -= DRIVER_RESERVED_SMEM
        out[k] = KernelResources(k, attrs[EIATTR_REGCOUNT], shared, attrs.get(EIATTR_FRAME_SIZE, 0), threads)
    return out
