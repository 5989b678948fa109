"""mpi4py 4.1.2's source distribution, fetched from PyPI at test time for the tests that run or
read its files against the facade (test_mpi4py_suite.py, test_compat_coverage.py).

It is checked against the sdist's published sha256 and kept in ~/.cache/rma-tests, never in
this repository: what the project holds, it wrote.
"""

from __future__ import annotations

import hashlib
import os
import tarfile
import urllib.request
from pathlib import Path

import pytest

VERSION = "4.1.2"
SDIST = (
    "https://files.pythonhosted.org/packages/75/83/231445bbcf7ef10864746c244ff2d82000011449b79275642c5d4ed8c8f4/"
    f"mpi4py-{VERSION}.tar.gz"
)
SHA256 = "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"


def archive() -> Path:
    """The sdist (downloaded once per machine); skips where PyPI cannot be reached, outside CI."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rma-tests"
    path = cache / f"mpi4py-{VERSION}.tar.gz"
    if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != SHA256:
        cache.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(SDIST, timeout=120) as response:
                data = response.read()
        except OSError as exc:
            if os.environ.get("CI"):
                raise  # (CI reaches PyPI: not finding it there is a failure, not a skip)
            pytest.skip(f"mpi4py's sdist cannot be fetched from PyPI here: {exc}")
        if hashlib.sha256(data).hexdigest() != SHA256:
            pytest.fail(f"the mpi4py {VERSION} sdist from PyPI does not have the published sha256")
        path.write_bytes(data)
    return path


def unpack(folder: Path, inside: str) -> Path:
    """Unpack the sdist's files under `inside` ("test/", "src/mpi4py/") into folder; return
    that folder of the sdist."""
    prefix = f"mpi4py-{VERSION}/{inside}"
    with tarfile.open(archive()) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix) and m.isfile()]
        tar.extractall(folder, members=members, filter="data")
    return folder / prefix
