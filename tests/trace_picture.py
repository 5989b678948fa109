"""Headless Chromium for the trace's HTML page, and the docs' picture of a real trace.

tests/test_trace_views.py opens pages with `browser()` to count what Chromium rendered;
docs/conf.py calls `make_docs_picture` so that the "Seeing a job" page shows the HTML page of a
real trace of examples/bulletin_board.py at 4 ranks, made on the machine that builds the docs
(CI included) rather than committed. Chromium and its driver are Debian's (`chromium`,
`chromium-driver`: ./dev.sh test installs them), driven by Selenium (the `test` extra).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from processes import run_in_own_group

ROOT = Path(__file__).resolve().parent.parent
BULLETIN_BOARD = ROOT / "examples" / "bulletin_board.py"
JOB_TIMEOUT = 120  # seconds, for the traced 4-rank job (it takes about one)


class Unavailable(Exception):
    """Chromium, its driver or Selenium is missing here; the message says which."""


def missing_browser() -> str | None:
    """Why no headless Chromium can be driven here, or None if one can."""
    if shutil.which("chromium") is None:
        return "chromium is not installed (Debian: apt-get install chromium chromium-driver)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (Debian: apt-get install chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]' installs it)"
    return None


@contextmanager
def browser(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A headless Chromium driven by Selenium; Unavailable if there is none."""
    if (why := missing_browser()) is not None:
        raise Unavailable(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    # No sandbox: CI runs as root, where Chromium's sandbox refuses to start; /dev/shm may be small
    # in containers.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={width},{height}")
    # Without the sanitizers' runtimes that ./dev.sh test's ASan pass preloads into everything it
    # starts: Chromium's own allocator aborts under them, and the browser is not under test.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    service = Service(shutil.which("chromedriver") or "chromedriver", env=env)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, html: Path, png: Path) -> None:
    """Open the page and save a picture of its timeline (the title, legend and rows, not the
    summary below them), the window sized to show it whole."""
    driver.get(html.resolve().as_uri())
    width, bottom = driver.execute_script(
        "const svg = document.querySelector('svg.timeline').getBoundingClientRect();"
        "const box = document.querySelector('.scroll').getBoundingClientRect();"
        "return [Math.ceil(svg.right) + 16, Math.ceil(box.bottom + window.scrollY) + 16];"
    )
    # The window's size is its outer one: what its frame takes is added, so that the page's
    # viewport is the size wanted.
    driver.set_window_size(width, bottom)
    inner_width, inner_height = driver.execute_script("return [window.innerWidth, window.innerHeight];")
    driver.set_window_size(2 * width - inner_width, 2 * bottom - inner_height)
    driver.save_screenshot(str(png))


def record_bulletin_board(trace: Path, ranks: int = 4, rounds: int = 20) -> subprocess.CompletedProcess[str]:
    """Run examples/bulletin_board.py under `rmarun --trace` (20 rounds: a picture whose calls
    can still be told apart); its CompletedProcess. Past JOB_TIMEOUT the whole job is killed."""
    argv = [sys.executable, "-m", "rma", "-n", str(ranks), "--trace", str(trace), str(BULLETIN_BOARD)]
    return run_in_own_group([*argv, "--rounds", str(rounds)], timeout=JOB_TIMEOUT, cwd=ROOT)


def save_docs_picture(driver: Any, trace: Path, png: Path) -> None:
    """The docs' picture of `trace`: its HTML page, screenshotted. Written whole or not at all
    (a temporary file renamed), as two passes of the suite may make it at once."""
    from rma.trace.html_page import page
    from rma.trace.reading import load

    with tempfile.TemporaryDirectory(prefix="rma-docs-trace-") as tmp:
        html = Path(tmp) / "bulletin_board.html"
        html.write_text(page(load(trace), "bulletin_board.py at 4 ranks"), encoding="utf-8")
        screenshot(driver, html, Path(tmp) / png.name)
        png.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(Path(tmp) / png.name, png.with_name(png.name + ".part"))
        os.replace(png.with_name(png.name + ".part"), png)


def make_docs_picture(png: Path) -> None:
    """The docs' picture, from a real trace of the bulletin board at 4 ranks. Unavailable if no
    browser; RuntimeError if the job fails."""
    if (why := missing_browser()) is not None:
        raise Unavailable(why)
    with tempfile.TemporaryDirectory(prefix="rma-docs-trace-") as tmp:
        trace = Path(tmp) / "bulletin_board.json"
        done = record_bulletin_board(trace)
        if done.returncode != 0 or not trace.exists():
            raise RuntimeError(f"the traced bulletin board failed ({done.returncode}): {done.stderr[-2000:]}")
        with browser() as driver:
            save_docs_picture(driver, trace, png)
