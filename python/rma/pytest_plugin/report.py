"""Turn what the ranks did with a test into its outcome and report."""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

import pytest

from .pool import FAIL_GRACE, ranks_text

if TYPE_CHECKING:
    from .pool import Outcome, Pool

__all__ = ["report"]


def _plural(ranks) -> str:
    return f"rank {ranks_text(ranks)}" if len(ranks) == 1 else f"ranks {ranks_text(ranks)}"


def _warning_category(names) -> type[Warning]:
    module_name, qualname = names
    obj = sys.modules.get(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def report(item: pytest.Function, pool: Pool, outcome: Outcome, timeout: float | None) -> None:
    """Turn what the ranks did into the item's outcome: return, fail, skip or xfail."""
    size = pool.size
    by_rank = {w.rank: w for w in pool.workers}
    for rank in range(size):
        reply = outcome.replies.get(rank)
        if reply is not None:
            out, err = reply.get("stdout", ""), reply.get("stderr", "")
        else:
            # Died or stopped mid-test: what it wrote before is still in its files.
            out, err = by_rank[rank].read_file(".out", 1 << 20), by_rank[rank].read_file(".err", 1 << 20)
        item.add_report_section("call", f"stdout rank {rank}", out)
        if rank not in outcome.died:  # the end of a dead rank's stderr is in the message
            item.add_report_section("call", f"stderr rank {rank}", err)

    failed = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == "failed")
    if failed or outcome.died or outcome.pending:
        lines = []
        if outcome.timed_out:
            lines.append(f"timed out after {timeout:g} s on {size} rank(s); {_plural(outcome.pending)} still running")
        if outcome.died:
            lines.append(
                "; ".join(f"rank {r} died during the test ({by_rank[r].status()})" for r in sorted(outcome.died))
            )
        if failed:
            # The first failure's own words, so that pytest's one-line summary shows them.
            headline = outcome.replies[failed[0]].get("headline", "")
            which = f"; rank {failed[0]}: " if len(failed) > 1 else ": "
            lines.append(f"{_plural(failed)} failed" + (which + headline if headline else ""))
        if outcome.pending and not outcome.timed_out:
            lines.append(
                f"{_plural(outcome.pending)} still running {FAIL_GRACE:g} s later "
                "(probably waiting for the failed rank): stopped"
            )
        passed = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == "passed")
        if passed and len(passed) < size:
            lines.append(f"({_plural(passed)} passed)")
        # The causes first (failures, deaths), then the ranks stopped in their wake.
        for rank in failed:
            lines.append(f"---- rank {rank} ----\n{outcome.replies[rank].get('text', '').rstrip()}")
        for rank in sorted(outcome.died):
            tail = by_rank[rank].read_file(".err").rstrip() or by_rank[rank].read_file(".log").rstrip()
            lines.append(
                f"---- rank {rank} (died: {by_rank[rank].status()}); end of its stderr ----\n{tail or '(nothing)'}"
            )
        for rank in sorted(outcome.pending):
            stack = outcome.stacks.get(rank) or "(no stack received)"
            lines.append(f"---- rank {rank} (still running); its stack ----\n{stack}")
        pytest.fail("\n".join(lines), pytrace=False)

    # Every rank returned: re-emit their warnings under this session's filters.
    seen: dict[tuple, list[int]] = {}
    for rank in sorted(outcome.replies):
        for record in outcome.replies[rank].get("warnings", ()):
            key = (tuple(record["category"]), record["message"], record["filename"], record["lineno"])
            seen.setdefault(key, []).append(rank)
    for (category_names, message, filename, lineno), ranks in seen.items():
        category = _warning_category(category_names)
        raised = None
        try:
            warnings.warn_explicit(message, category, filename, lineno)
        except Warning as exc:
            # Only if the filters here differ from those the ranks got.
            raised = str(exc)
        if raised is not None:
            pytest.fail(f"{_plural(ranks)}: {filename}:{lineno}: {category.__name__}: {raised}", pytrace=False)

    for kind, give_up in (("xfailed", pytest.xfail), ("skipped", pytest.skip)):
        ranks = sorted(r for r, reply in outcome.replies.items() if reply.get("outcome") == kind)
        if ranks:
            reason = outcome.replies[ranks[0]].get("text", "")
            if len(ranks) < size:
                reason = f"{_plural(ranks)}: {reason}"
            give_up(reason)
