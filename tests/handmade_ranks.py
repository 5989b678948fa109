"""Ranks started by hand (not through the pytest plugin, which counts a dying rank as a failed
test): what test_bootstrap.py and test_dead_peers.py share."""

import os
import subprocess
import sys
import textwrap


def start_ranks(code, size, store, *, prologue="", extra_env=None, secret=None, rank_variable="SLURM_PROCID"):
    """Start `size` ranks running `prologue + code` with the variables another launcher would
    set: the store's address and secret, the size, and the rank in `rank_variable` (SLURM_PROCID
    by default: what rma.init takes when RMA_RANK is unset). extra_env: a dict, or a function of
    the rank returning one."""
    processes = []
    for rank in range(size):
        env = dict(os.environ)
        for name in ("RMA_RANK", "RMA_SIZE", "RMA_STORE", "RMA_SECRET", "RMA_PROVIDER"):
            env.pop(name, None)
        env.update(RMA_STORE=store.address, RMA_SECRET=secret or store.secret, RMA_SIZE=str(size))
        env[rank_variable] = str(rank)
        env.setdefault("OMP_NUM_THREADS", "1")  # as rmarun gives ranks that share 2 cores (spawn.py)
        env.update((extra_env(rank) if callable(extra_env) else extra_env) or {})
        processes.append(
            subprocess.Popen(
                [sys.executable, "-c", prologue + textwrap.dedent(code)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    return processes


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


def run_job(code, size, env, timeout=60):
    """Run `code` on `size` ranks joined by a store of their own, with `env` added to their
    environment; return [(status, stdout, stderr)] in rank order."""
    from rma._job.store_server import StoreServer

    store = StoreServer(size=size)
    store.start()
    try:
        return finish(start_ranks(code, size, store, extra_env=env, rank_variable="RMA_RANK"), timeout=timeout)
    finally:
        store.close()
