"""The built package has one C++ runtime (Note [One libstdc++] in CMakeLists.txt).

A libember_core that linked libstdc++ statically carried a second copy of the
C++ runtime beside the interpreter's and crashed formatting an error message.
These tests check the installed (or developer-linked) package itself: every
ember library lists the shared libstdc++.so.6 as NEEDED, the process maps
exactly one libstdc++ after importing ember (and ember._C_cuda when built), and
error messages that format shapes work from each module.
"""
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from child_env import child_env

import ember

# not resolve(): a staged package (tools/sanitize.sh) is a tree of symlinks
PKG = Path(os.path.abspath(ember.__file__)).parent


def _libraries():
    libs = {}
    for pattern in ("libember_core*.so*", "_C.*.so", "_C_cuda.*.so", "_C.so", "_C_cuda.so"):
        for p in Path(ember.__file__).parent.glob(pattern):
            libs[p.name.split(".")[0]] = p.resolve()
    return libs


def elf_needed(path):
    """DT_NEEDED entries of a 64-bit little-endian ELF shared object (a tiny reader:
    program headers -> PT_DYNAMIC -> DT_NEEDED offsets into DT_STRTAB)."""
    data = Path(path).read_bytes()
    assert data[:4] == b"\x7fELF", f"{path} is not an ELF file"
    assert data[4] == 2 and data[5] == 1, f"{path}: only ELF64 little-endian is read here"
    e_phoff, = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic = [], None
    for i in range(e_phnum):
        p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:  # PT_DYNAMIC
            dynamic = (p_offset, p_filesz)
    assert dynamic is not None, f"{path} has no dynamic section"

    def file_offset(vaddr):
        for va, off, size in loads:
            if va <= vaddr < va + size:
                return vaddr - va + off
        raise AssertionError(f"{path}: address {vaddr:#x} is in no PT_LOAD segment")

    needed, strtab = [], None
    off, size = dynamic
    for pos in range(off, off + size, 16):
        tag, val = struct.unpack_from("<qQ", data, pos)
        if tag == 0:
            break
        if tag == 1:
            needed.append(val)
        elif tag == 5:
            strtab = file_offset(val)
    assert strtab is not None, f"{path} has no DT_STRTAB"
    return [data[strtab + n:data.index(b"\0", strtab + n)].decode() for n in needed]


def test_elf_reader_reads_a_known_library():
    # the interpreter's libc-linked extension modules are a fixed point: _ctypes needs libffi
    import _ctypes
    needed = elf_needed(_ctypes.__file__)
    assert any(n.startswith("libffi") for n in needed), needed


def test_ember_libraries_are_found():
    libs = _libraries()
    assert "libember_core" in libs and "_C" in libs, sorted(libs)


@pytest.mark.parametrize("name", ["libember_core", "_C", "_C_cuda"])
def test_each_library_needs_shared_libstdcxx(name):
    libs = _libraries()
    if name not in libs:
        assert name == "_C_cuda", f"{name} missing from {PKG}"
        pytest.skip("this build has no CUDA backend (_C_cuda)")
    assert "libstdc++.so.6" in elf_needed(libs[name]), (
        f"{libs[name]} does not link the shared libstdc++ (statically linked C++ runtime)")


_MAPS_PROBE = r"""
import ember
try:
    import ember._C_cuda  # noqa: F401
    cuda = True
except ImportError:
    cuda = False
maps = {}
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(None, 5)
        if len(parts) == 6 and "libstdc++" in parts[5]:
            path = parts[5].strip()
            maps[__import__("os").path.realpath(path)] = path
print("CUDA" if cuda else "NOCUDA")
for p in sorted(maps):
    print(p)
"""


def test_one_libstdcxx_in_the_process():
    p = subprocess.run([sys.executable, "-c", _MAPS_PROBE], capture_output=True,
                       text=True, env=child_env(), timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    lines = p.stdout.split()
    mapped = lines[1:]
    assert len(mapped) == 1, f"expected one libstdc++ mapped, got {mapped}"
    assert "libstdc++.so" in mapped[0]


def test_error_messages_format_shapes():
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid for input of size 6"):
        ember.ones(2, 3).view(4, 2)
    with pytest.raises(RuntimeError, match=r"\[7\]"):
        ember.ones(2, 3).reshape(7)
    with pytest.raises(RuntimeError, match=r"2x3"):
        ember.ones(2, 3) @ ember.ones(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        ember.ones(2, 3).sum(5)


def test_error_messages_format_shapes_on_cuda():
    if not ember.cuda.is_available():
        pytest.skip("no CUDA device: the _C_cuda module is not loaded")
    x = ember.ones(2, 3, device="cuda")
    with pytest.raises(RuntimeError, match=r"shape '\[4, 2\]' is invalid"):
        x.view(4, 2)
    with pytest.raises(RuntimeError):
        x + ember.ones(4, device="cuda")
