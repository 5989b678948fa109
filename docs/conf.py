"""Sphinx configuration of rma's documentation (built by ./dev.sh docs, warnings as errors)."""

import sys
from pathlib import Path

import rma
from rma.compat import coverage

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))  # trace_picture.py, below
import trace_picture  # noqa: E402

project = "rma"
author = "the rma developers"
release = version = rma.__version__
copyright = "2026, the rma developers"

extensions = [
    "sphinx.ext.autodoc",  # the API reference comes from the docstrings
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",  # the pages are Markdown
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# Pages include parts of the README (one place for each text), whose headings start at level 2.
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
exclude_patterns = ["_build", "_generated"]  # (_generated: parts that pages include)
html_theme = "alabaster"
html_title = f"rma {release}"

# The porting guide's table of mpi4py's names, made from the facade's code at each build so that
# it cannot drift (rma.compat.coverage; docs/porting.md includes it).
_generated = Path(__file__).parent / "_generated"
_generated.mkdir(exist_ok=True)
(_generated / "mpi4py_coverage.md").write_text(coverage.table())

# The "Seeing a job" page's picture: the HTML page (python -m rma.trace --html) of a real trace of
# examples/bulletin_board.py at 4 ranks, screenshotted in headless Chromium
# (tests/trace_picture.py). Made, not committed, so that it shows what the code draws today:
# here when it is absent, so that the first build of a fresh clone shows it (CI's: ./dev.sh test
# installs Chromium before it builds the docs, which it does before the tests), and again by
# tests/test_trace_views.py, whose real job checks that same page. Where Chromium is missing (a
# machine that never ran ./dev.sh test) the page says how to get the picture rather than fail
# the build; where it is present, a failure to make the picture fails the build.
_picture = _generated / "seeing_a_job.png"
if not _picture.exists() and trace_picture.missing_browser() is None:
    trace_picture.make_docs_picture(_picture)
(_generated / "seeing_a_job_picture.md").write_text(
    "```{image} /_generated/seeing_a_job.png\n:alt: The timeline page of a trace of the bulletin board at 4 ranks\n"
    ":width: 100%\n```\n"
    if _picture.exists()
    else "*(The picture is made by `./dev.sh docs` where Debian's `chromium` and `chromium-driver` are "
    f"installed, which `./dev.sh test` does: here {trace_picture.missing_browser()}.)*\n"
)
