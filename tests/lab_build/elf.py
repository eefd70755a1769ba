"""What the dynamic loader needs to run an ELF file: its interpreter (PT_INTERP) and the shared libraries
its dynamic section names (DT_NEEDED), read in pure Python from the program headers, as the loader does
(a stripped file keeps these; section headers are not needed).

Only 64-bit little-endian files (x86-64 and arm64, what the lab builds for); anything else is refused.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 14, 15, 29


class ElfError(ValueError):
    """A file that starts like ELF but cannot be read as a 64-bit little-endian one."""


@dataclass(frozen=True)
class Elf:
    interpreter: str | None    # PT_INTERP: /lib64/ld-linux-x86-64.so.2 for a dynamic program
    needed: tuple[str, ...]     # DT_NEEDED, in the file's order
    soname: str | None
    runpath: str | None         # DT_RUNPATH, else DT_RPATH


def is_elf(data: bytes) -> bool:
    return data[:4] == MAGIC


def _cstring(data: bytes, offset: int) -> str:
    end = data.index(b"\0", offset)
    return data[offset:end].decode()


def read_elf(data: bytes) -> Elf:
    if not is_elf(data):
        raise ElfError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ElfError("not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    interpreter = None
    dynamic: tuple[int, int] | None = None
    for i in range(phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_INTERP:
            interpreter = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
    if dynamic is None:  # a static program needs nothing
        return Elf(interpreter, (), None, None)
    entries: list[tuple[int, int]] = []
    offset, size = dynamic
    for pos in range(offset, offset + size, 16):
        tag, value = struct.unpack_from("<qQ", data, pos)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    strtab = next((v for t, v in entries if t == DT_STRTAB), None)
    if strtab is None:
        raise ElfError("a dynamic section without a string table")
    # DT_STRTAB is an address: the PT_LOAD segment holding it maps it to a file offset
    base = next((off + strtab - vaddr for vaddr, off, filesz in loads if vaddr <= strtab < vaddr + filesz),
                None)
    if base is None:
        raise ElfError("the string table is outside every loaded segment")

    def string(tag: int) -> str | None:
        return next((_cstring(data, base + v) for t, v in entries if t == tag), None)

    needed = tuple(_cstring(data, base + v) for t, v in entries if t == DT_NEEDED)
    return Elf(interpreter, needed, string(DT_SONAME), string(DT_RUNPATH) or string(DT_RPATH))
