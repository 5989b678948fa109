"""Sphinx configuration of rma's documentation (built by ./dev.sh docs, warnings as errors)."""

from pathlib import Path

import rma
from rma.compat import coverage

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
