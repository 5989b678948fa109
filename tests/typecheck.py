"""Running mypy (and its stubtest) on the installed rma, for tests/test_typing.py and test_stubs.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rma


def mypy_environment() -> dict[str, str]:
    """Return the environment for mypy: with the source tree on MYPYPATH when rma is installed
    editable (mypy does not follow the editable install's import hook; a regular install is
    found in site-packages, which must not be on MYPYPATH)."""
    env = dict(os.environ)
    package_parent = Path(rma.__file__).resolve().parent.parent
    if "site-packages" not in package_parent.parts and "dist-packages" not in package_parent.parts:
        env["MYPYPATH"] = str(package_parent)
    return env


def cache_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Return where mypy keeps its cache: pytest's cache, so that later runs are quick."""
    cache = getattr(request.config, "cache", None)
    return cache.mkdir("mypy") if cache is not None else tmp_path / ".mypy_cache"


def run(arguments: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]' installs it)")
    return subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=mypy_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
