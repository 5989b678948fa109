"""The core's folders are its layers (src/core/layers.txt, lowest first): a file includes only
its own layer and the ones below, and the bindings sit above them all. The build checks this
before the core compiles (cmake/check_layers.cmake, from CMakeLists.txt); these tests run the
same check on the tree, show that it fails, naming file, line and layers, when an include runs
up, and keep each layer's README and the core's files short enough to read."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "core"
LAYERS = [line for line in (CORE / "layers.txt").read_text().splitlines() if line and not line.startswith("#")]
LONGEST_FILE = 500  # lines, for a file of src/core


def _cmake() -> str:
    found = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if found is None:
        pytest.skip("cmake is not installed (pip install -e '.[test]' installs it)")
    return found


def _check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_cmake(), f"-DSOURCE_DIR={root}", "-P", str(ROOT / "cmake" / "check_layers.cmake")],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_core_keeps_its_layers() -> None:
    done = _check(ROOT)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("path", "include", "says"),
    [
        ("src/core/base/transport.hpp", "window/window.hpp", "layer base must not include layer window"),
        ("src/core/host/shm_inbox.hpp", "fabric/handles.hpp", "layer host must not include layer fabric"),
        ("src/core/elements/region.cpp", "window_object.hpp", "of the bindings, which sit above every layer"),
        ("src/core/window/window.hpp", "epochs.hpp", "names no layer of src/core/layers.txt"),
    ],
)
def test_an_include_against_the_layers_fails(tmp_path: Path, path: str, include: str, says: str) -> None:
    shutil.copytree(ROOT / "src", tmp_path / "src")
    lines = (tmp_path / path).read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("#include")) + 1
    lines.insert(at, f'#include "{include}"\n')
    (tmp_path / path).write_text("".join(lines))
    done = _check(tmp_path)
    assert done.returncode != 0
    assert f'{path}:{at + 1}: includes "{include}"' in done.stderr and says in done.stderr, done.stderr


def test_a_file_outside_the_layers_fails(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src", tmp_path / "src")
    (tmp_path / "src" / "core" / "stray.hpp").write_text('#include "base/errors.hpp"\n')
    done = _check(tmp_path)
    assert done.returncode != 0 and "src/core/stray.hpp: lies in no layer" in done.stderr, done.stderr


def test_each_layer_is_a_folder_that_says_what_it_owns() -> None:
    folders = sorted(path.name for path in CORE.iterdir() if path.is_dir())
    assert folders == sorted(LAYERS)
    for layer in LAYERS:
        assert (CORE / layer / "README.md").is_file(), f"src/core/{layer}/README.md is missing"


def test_no_file_of_the_core_is_too_long_to_read() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in CORE.rglob("*")
        if path.suffix in (".hpp", ".cpp") and (lines := len(path.read_text().splitlines())) > LONGEST_FILE
    }
    assert not long, f"over {LONGEST_FILE} lines (cut them by concept): {long}"
