"""A libfabric.so.1 that says it is libfabric 1.5: libfabric's entry points at their symbol
versions, fi_version returning 1.5, nothing behind them. For the tests of the rule that a rank
refuses a libfabric older than 1.17 (src/core/fabric/libfabric_library.cpp) and tries the next."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOURCE = """
#include <stdint.h>
uint32_t fi_version(void) { return (1u << 16) | 5u; }
const char *fi_strerror(int code) { (void)code; return "old"; }
int fi_fabric(void) { return -38; }
int fi_getinfo(void) { return -38; }
void fi_freeinfo(void) {}
void *fi_dupinfo(void) { return 0; }
"""
VERSIONS = """
FABRIC_1.0 { global: fi_version; fi_strerror; local: *; };
FABRIC_1.1 { global: fi_fabric; } FABRIC_1.0;
FABRIC_1.3 { global: fi_getinfo; fi_freeinfo; fi_dupinfo; } FABRIC_1.1;
"""


def old_libfabric(where: Path) -> Path:
    """Compiles it into `where`; skips the test without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to make a libfabric that says it is 1.5")
    (where / "old.c").write_text(SOURCE)
    (where / "versions.map").write_text(VERSIONS)
    library = where / "libfabric.so.1"
    subprocess.run(
        [compiler, "-shared", "-fPIC", "-o", str(library), str(where / "old.c"),
         f"-Wl,--version-script={where / 'versions.map'}", "-Wl,-soname,libfabric.so.1"],
        check=True, timeout=60,
    )  # fmt: skip
    return library
