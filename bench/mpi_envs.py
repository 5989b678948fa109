"""The virtual environments of mpi4py over each MPI from PyPI, made once under bench/.envs/
(bench/run.py and bench/across_hosts.py run cases.py's mpi4py code in them)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ENVS = Path(__file__).resolve().parent / ".envs"
MPI_SYSTEMS = {"mpi4py+MPICH": "mpich", "mpi4py+Open MPI": "openmpi"}


def say(text: str) -> None:
    print(f"bench: {text}", flush=True)


def ensure_env(name: str, package: str) -> Path | None:
    """Return the python of an environment with mpi4py over `package`, making it if needed."""
    env = ENVS / package
    python = env / "bin" / "python"
    if not python.exists():
        say(f"making the {name} environment in {env} (once)")
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "mpi4py", package, "numpy"], capture_output=True, text=True
        )
        if done.returncode != 0:
            say(f"could not install {name}: {done.stderr.strip().splitlines()[-1:]}; skipping it")
            shutil.rmtree(env, ignore_errors=True)
            return None
    return python
