"""Ranks started by hand (not through the pytest plugin, which counts a dying rank as a failed
test): what test_bootstrap.py and test_dead_peers.py share."""

import subprocess


def finish(processes: list[subprocess.Popen], timeout: float = 30) -> list[tuple[int, str, str]]:
    """Wait for every rank; return [(status, stdout, stderr)] in rank order. On a timeout, kill
    them all and raise subprocess.TimeoutExpired, so that no rank outlives its test."""
    results = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in processes:
                other.kill()
            raise
        results.append((process.returncode, out, err))
    return results
