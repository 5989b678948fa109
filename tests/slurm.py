"""A one-node Slurm for the tests: Debian's slurmctld and slurmd started in the foreground on
this machine, with their configuration, state and logs in a temporary directory, so that
`srun --mpi=pmix` starts rma jobs as on a cluster.

Slurm 22.05 (Debian 12) still has auth/none, so no munge daemon is needed. Ports are chosen
free; the daemons stop, and their directory goes, when the `with` block ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

__all__ = ["Slurm"]

START_TIMEOUT = 30.0  # seconds for the node to become idle


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Slurm:
    """`with Slurm() as slurm: slurm.srun(...)`; Slurm.refusal() says why it cannot run here."""

    @staticmethod
    def refusal() -> str | None:
        missing = [tool for tool in ("slurmctld", "slurmd", "srun") if shutil.which(tool) is None]
        if missing:
            return (
                f"no {', '.join(missing)} here (Debian's slurmctld, slurmd, slurm-client; ./dev.sh test installs them)"
            )
        if os.geteuid() != 0:
            return "starting Slurm's daemons needs root"
        return None

    def __enter__(self) -> Slurm:
        self.directory = tempfile.mkdtemp(prefix="rma-slurm-")
        for part in ("spool", "state", "log"):
            os.mkdir(os.path.join(self.directory, part))
        host = socket.gethostname()
        self.conf = os.path.join(self.directory, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(self._configuration(host))
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self._daemons: list[subprocess.Popen] = []
        # The daemons are not ours to check: a sanitizer preloaded for the ranks stays off them.
        daemon_env = {key: value for key, value in self.env.items() if key != "LD_PRELOAD"}
        try:
            for daemon in (["slurmctld", "-D", "-i"], ["slurmd", "-D"]):
                log = open(os.path.join(self.directory, "log", daemon[0] + ".out"), "w")
                self._daemons.append(subprocess.Popen(daemon, env=daemon_env, stdout=log, stderr=subprocess.STDOUT))
                log.close()
            self._wait_until_idle()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _configuration(self, host: str) -> str:
        d = self.directory
        return "\n".join([
            "ClusterName=rmatest",
            f"SlurmctldHost={host}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/none",
            "CredType=cred/none",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MailProg=/bin/true",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd.log",
            f"NodeName={host} CPUs={os.cpu_count() or 1} State=UNKNOWN",
            f"PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP",
            "",
        ])  # fmt: skip

    def _wait_until_idle(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for daemon in self._daemons:
                if daemon.poll() is not None:
                    raise RuntimeError(f"{daemon.args[0]} ended at start: {self.log(daemon.args[0])}")
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], env=self.env, capture_output=True, text=True)
            if state.stdout.strip() == "idle":
                return
            time.sleep(0.1)
        raise RuntimeError(f"the Slurm node was not idle after {START_TIMEOUT:g} s: {self.log('slurmd')}")

    def log(self, daemon: str, lines: int = 5) -> str:
        """The last lines of a daemon's log (for failure messages)."""
        try:
            with open(os.path.join(self.directory, "log", daemon + ".log")) as f:
                return " | ".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __exit__(self, *exc_info) -> None:
        # Tasks of a job whose srun a test killed run on under slurmstepd: cancel every job, and
        # give the node a moment to end them, before the daemons go.
        if self._daemons and all(daemon.poll() is None for daemon in self._daemons):
            subprocess.run(["scancel", "--user", str(os.geteuid())], env=self.env, capture_output=True, timeout=10)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                jobs = subprocess.run(["squeue", "-h"], env=self.env, capture_output=True, text=True, timeout=10)
                if jobs.returncode != 0 or not jobs.stdout.strip():
                    break
                time.sleep(0.2)
        for daemon in self._daemons:
            daemon.terminate()
        for daemon in self._daemons:
            try:
                daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(self.directory, ignore_errors=True)
