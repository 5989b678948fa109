"""rmarun's command line: its options, the program to run, and what to do with them."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from collections.abc import Sequence

from .._job import settings
from ..errors import BootstrapError
from .hosts import (
    HostError,
    is_local,
    parse_host_list,
    parse_hostfile,
    place,
    refuse_remote_stdin,
    store_address_for,
)
from .info import print_info
from .job import Job
from .output import PROG, say
from .preflight import check_hosts
from .serve_store import serve_store

__all__ = ["main", "build_parser", "split_argv", "build_command", "stdin_ranks"]

# Launcher options that take a value; everything else starting with "-" is a
# flag.  The command-line splitter below needs to know which is which, to
# find where the launcher's options end and the program's arguments begin.
_VALUE_OPTIONS = {
    "-n", "-np", "--np", "--provider", "--timeout", "--store-host", "--store-port", "--host", "--hostfile", "--rsh",
    "--stdin", "--trace",
}  # fmt: skip

_USAGE = (
    "rmarun -n N [--provider P] [--tag-output] [--timeout S] [--mpi4py] [--stdin all|none|RANK] [--trace FILE]\n"
    "              [--store-host H] [--store-port P] [--host A:SLOTS,B:SLOTS | --hostfile FILE] [--rsh COMMAND]\n"
    "              (script.py [args] | -m module [args] | -c code [args] | program [args...])\n"
    "       rmarun --serve-store -n N [--store-host H] [--store-port P]\n"
    "       rmarun --info [--json]"
)


def build_parser() -> argparse.ArgumentParser:
    """Build the parser of rmarun's own options (the program's are split off before)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=_USAGE,
        description="Run N ranks of an rma program on this machine, or on the hosts of --host or --hostfile.",
        epilog="Everything after the script, program, -m module or -c code is passed to the ranks unchanged.",
        allow_abbrev=False,  # abbreviations would defeat the argument splitter
    )
    # -np as mpiexec and mpirun spell it, so that their command lines work unchanged.
    parser.add_argument("-n", "-np", "--np", dest="n", type=int, metavar="N", help="number of ranks")
    parser.add_argument(
        "--provider", metavar="P", help='libfabric provider for the ranks (RMA_PROVIDER), e.g. "shm", "tcp"'
    )
    parser.add_argument("--tag-output", action="store_true", help="prefix every output line with [rank]")
    parser.add_argument("--timeout", type=float, metavar="S", help="stop the job and exit 124 after S seconds")
    parser.add_argument(
        "--store-host",
        metavar="H",
        help="address the rendezvous store listens on (default: 127.0.0.1; with other hosts, this machine's "
        "address on the route to them)",
    )
    parser.add_argument(
        "--store-port", type=int, default=0, metavar="P", help="port of the store (default: any free port)"
    )
    parser.add_argument(
        "--host", metavar="A:SLOTS,B:SLOTS", help="run the ranks on these hosts, filling each one's slots in turn"
    )
    parser.add_argument("--hostfile", metavar="FILE", help="the hosts, one `host slots=N` per line")
    parser.add_argument(
        "--rsh",
        default="ssh",
        metavar="COMMAND",
        help='remote shell that starts ranks on other hosts, given HOST and a command line (default "ssh")',
    )
    parser.add_argument(
        "--mpi4py",
        action="store_true",
        help="run an mpi4py program unchanged: `from mpi4py import MPI` in the ranks gives rma.compat.MPI",
    )
    parser.add_argument(
        "--stdin",
        default="0",
        metavar="all|none|RANK",
        help="which ranks read rmarun's standard input, as Open MPI's mpirun --stdin (default 0: rank 0); "
        "the others read /dev/null. A rank on another host reads it through the remote shell",
    )
    parser.add_argument(
        "--oversubscribe",
        action="store_true",
        help="accepted for mpiexec's command lines, and changes nothing: rmarun starts as many ranks as asked "
        "whatever this machine's cores (only the slots of --host and --hostfile bound them)",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="record every rank's calls, waits and epochs into FILE (RMA_TRACE): a Chrome trace that Perfetto "
        "opens; `python -m rma.trace FILE` summarizes it",
    )
    parser.add_argument("--serve-store", action="store_true", help="only run a store for ranks started by other means")
    parser.add_argument(
        "--info",
        action="store_true",
        help="print what a job here would use: versions, libfabric, providers and their modes, shared memory, PMIx",
    )
    parser.add_argument("--json", action="store_true", help="with --info: print it as JSON (rma.info().as_dict())")
    # -m and -c are listed for --help only; split_argv() handles them.
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a Python module as the ranks")
    parser.add_argument("-c", dest="code", metavar="CODE", help="run Python code as the ranks")
    return parser


def split_argv(argv: Sequence[str]) -> tuple[list[str], list[str] | None, str | None]:
    """Split argv into (launcher options, program argv, kind).

    kind is "-m", "-c", "program" or None (no program).  For -m and -c the
    program argv starts with the module name or the code.  Anything after
    the program belongs to the program, even if it looks like an option of
    rmarun, exactly as with the python command itself.
    """
    own: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest = list(argv[i + 1 :])
            return own, (rest or None), ("program" if rest else None)
        if arg in ("-m", "-c"):
            # A missing value is left to argparse, which reports it.
            if i + 1 >= len(argv):
                return own + [arg], None, None
            return own, list(argv[i + 1 :]), arg
        if arg.startswith(("-m", "-c")) and not arg.startswith("--"):
            # Python also accepts the glued forms -mmodule and -c'code'.
            return own, [arg[2:], *argv[i + 1 :]], arg[:2]
        if arg.startswith("-") and arg != "-":
            own.append(arg)
            if arg in _VALUE_OPTIONS and i + 1 < len(argv):
                own.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return own, list(argv[i:]), "program"
    return own, None, None


def build_command(kind: str, program: list[str], python: str | None = None) -> list[str]:
    """Return the argv each rank runs for a program given as split_argv found it.

    Raises FileNotFoundError when a script or program does not exist.
    """
    python = python or sys.executable
    if kind in ("-m", "-c"):
        return [python, kind, *program]
    target, args = program[0], program[1:]
    if target.endswith(".py") and os.path.isfile(target):
        return [python, target, *args]
    if shutil.which(target) is None:
        raise FileNotFoundError(target)
    return [target, *args]


def stdin_ranks(choice: str, size: int) -> list[int]:
    """The ranks that --stdin gives rmarun's standard input: `all`, `none` or one rank's number
    (ValueError, one line for the user, for anything else)."""
    if choice in ("all", "none"):
        return list(range(size)) if choice == "all" else []
    try:
        rank = int(choice)
    except ValueError:
        rank = -1
    if not 0 <= rank < size:
        raise ValueError(f"--stdin {choice}: expected all, none or a rank from 0 to {size - 1}")
    return [rank]


def _placement(args: argparse.Namespace) -> list[str] | None:
    """Each rank's host from --host or --hostfile (None: all on this machine); fills in -n (the
    hosts' slots) and --store-host when they were left out. Raises HostError."""
    if args.host and args.hostfile:
        raise HostError("--host and --hostfile exclude each other")
    if not (args.host or args.hostfile):
        args.store_host = args.store_host or "127.0.0.1"
        return None
    if args.serve_store:
        raise HostError("--serve-store starts no ranks: --host and --hostfile do not apply")
    hosts = parse_host_list(args.host) if args.host else parse_hostfile(args.hostfile)
    if args.n is None:
        args.n = sum(host.slots for host in hosts)
    placement = place(hosts, max(args.n, 1))
    remote = [name for name in placement if not is_local(name)]
    if args.store_host is None:
        args.store_host = store_address_for(remote) if remote else "127.0.0.1"
    return placement


def main(argv: Sequence[str] | None = None) -> int:
    """Run rmarun with argv (sys.argv[1:] when None) and return its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    own, program, kind = split_argv(argv)
    try:
        args = parser.parse_args(own)
    except SystemExit as exc:  # --help, or a usage error already printed
        return int(exc.code or 0)
    if args.module is not None or args.code is not None:
        # Only reachable as "-m" / "-c" glued into another option's value.
        parser.print_usage(sys.stderr)
        say("-m and -c must come after rmarun's own options")
        return 2
    if args.json and not args.info:
        parser.print_usage(sys.stderr)
        say("--json goes with --info")
        return 2

    if args.trace is not None:
        os.environ["RMA_TRACE"] = args.trace  # (judged with the other settings; the ranks inherit it)
    try:
        if args.info:
            settings.job_settings()  # (what a job here would meet)
            return print_info(as_json=args.json)
        placement = _placement(args)
        if not args.serve_store:
            _judge_settings(args, placement)
    except HostError as exc:
        say(str(exc))
        return 2
    except settings.SettingError as exc:
        say(exc.complaint)
        return 2
    if args.n is None:
        parser.print_usage(sys.stderr)
        say("the number of ranks is required: -n N")
        return 2
    if args.n < 1:
        say(f"the number of ranks must be at least 1, not {args.n}")
        return 2
    if args.timeout is not None and not 0 < args.timeout < math.inf:  # (nan is neither)
        say(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
        return 2
    try:
        args.stdin_ranks = stdin_ranks(args.stdin, args.n)
    except ValueError as exc:
        say(str(exc))
        return 2

    try:
        if args.serve_store:
            if program is not None:
                say("--serve-store runs no program; start the ranks by other means")
                return 2
            return serve_store(args)

        if program is None:
            parser.print_usage(sys.stderr)
            say("nothing to run: give a script, -m module, -c code or a program")
            return 2
        try:
            command = build_command(kind, program)
        except FileNotFoundError as exc:
            what = "no such file" if str(exc).endswith(".py") else "command not found"
            say(f"{what}: {exc}")
            return 127
        if placement is not None:
            try:
                refuse_remote_stdin(args.rsh, placement, args.stdin_ranks)
                check_hosts(args.rsh, list(dict.fromkeys(placement)), command)
            except HostError as exc:
                say(str(exc))
                return 2
            except KeyboardInterrupt:
                say("interrupted while asking the hosts; no rank was started")
                return 130
        trace_file = settings.trace_file()
        if trace_file is not None:
            from . import tracing  # (only a traced job reads trace files)

            tracing.prepare(trace_file)
        status = Job(args, command, placement).run()
        if trace_file is not None:
            tracing.finish(trace_file, args.n)
        return status
    except settings.SettingError as exc:
        say(exc.complaint)
        return 2
    except BootstrapError as exc:
        say(str(exc))
        return 1


def _judge_settings(args: argparse.Namespace, placement: list[str] | None) -> None:
    """Judge the settings the ranks will have (SettingError): rmarun's environment, which they
    inherit, with --provider as their RMA_PROVIDER. Judged here once, a bad one is one line of
    rmarun's rather than the failure of every rank. (--serve-store starts no ranks: its store
    judges RMA_LINK_TIMEOUT.)"""
    env = dict(os.environ)
    name = "RMA_PROVIDER"
    if args.provider:
        name = "--provider"
        settings.requested_provider(args.provider, name)
        env["RMA_PROVIDER"] = args.provider
    job = settings.job_settings(env)
    # Asking this host's libfabric whether it serves a provider costs loading it (half a second):
    # only for a name other than shm and tcp, which nearly every libfabric has (a rank reports
    # one that is missing). The ranks of other hosts ask their own libfabric.
    if job.provider not in ("", "shm", "tcp", "tcp;ofi_rxm") and all(map(is_local, set(placement or []))):
        from .._native import _core

        _core.use_libfabric(job.libfabric)
        unusable = settings.unusable_provider(_core.usable_providers(), env["RMA_PROVIDER"], name)
        if unusable is not None:
            raise unusable
