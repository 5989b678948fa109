"""Issue 37, item 7: every RMA_* setting is judged in one place (rma/_job/settings.py), and a bad
value ends the job with one line naming the variable, the value and what is accepted: rmarun
says it once before it starts any rank (exit status 2); a rank started otherwise raises a
BootstrapError that, uncaught, prints only that line. A rank that cannot reach its store says
so after a few seconds and keeps trying until RMA_TIMEOUT. Every process runs under a timeout."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import time

import pytest

from rma import BootstrapError
from rma._job import settings
from rma._job.settings import SettingError
from rma._job.store_protocol import watch_link

SECONDS = "use a number of seconds from 0 to 1000000 (0 = never)"
SWITCH = "use 1 or 0"

# Every job-wide variable, its bad values, and what the one line says is accepted. The seconds
# variables share one rule: nan, infinities, negatives and text are refused alike.
JOB_WIDE = {
    "RMA_TIMEOUT": (["nan", "inf", "-1", "1e999", "-inf", "soon", "1000001"], SECONDS),
    "RMA_LINK_TIMEOUT": (["nan", "inf", "-1", "1e999", "soon"], SECONDS),
    "RMA_HANG_REPORT": (["nan", "inf", "-1", "1e999", "soon"], SECONDS),
    "RMA_PROGRESS_SLEEP_US": (
        ["nan", "inf", "-1", "1e999", "fast", "1.5", "1000001"],
        "use a whole number of microseconds from 0 to 1000000",
    ),
    "RMA_FABRIC_SLEEP": (["yes", "2", "-1", "nan"], SWITCH),
    "RMA_MALLOC_TUNING": (["yes", "2", "-1", "nan"], SWITCH),
    "RMA_TRUST_NETWORK": (["yes", "2", "nan"], SWITCH),
    "RMA_TRANSPORT": (["shm", "nan"], "use auto, shared-memory or libfabric"),
    "RMA_CHECK": (["maybe", "-1"], "use 1, warn or 0"),
    "RMA_MODEL": (["weak", "nan"], "use unified or separate"),
    "RMA_PROVIDER": (
        ["a b", "tcp;;rxm", "-;"],
        "use auto, shm, tcp or a libfabric provider name (such as verbs;ofi_rxm)",
    ),
}
BAD_JOB_WIDE = [(name, value, accepted) for name, (values, accepted) in JOB_WIDE.items() for value in values]
# What a rank started by hand is given (about half a second each, for loading the core): every
# bad value of RMA_TIMEOUT and two of each other variable. The rules are the same functions
# whoever calls them, and all their values are judged in this process and through rmarun.
PLAIN_JOB_WIDE = [case for case in BAD_JOB_WIDE if case[0] == "RMA_TIMEOUT"] + [
    (name, value, accepted)
    for name, (values, accepted) in JOB_WIDE.items()
    if name != "RMA_TIMEOUT"
    for value in values[:2]
]

# This rank's place in the job: what its launcher sets (rmarun sets them itself).
STORE = {"RMA_STORE": "127.0.0.1:9", "RMA_SECRET": "s"}
BAD_PLACE = [
    ({"RMA_RANK": "x", "RMA_SIZE": "2"}, "RMA_RANK='x': use a rank from 0 to 1 (RMA_SIZE='2')"),
    ({"RMA_RANK": "x"}, "RMA_RANK='x': use a whole number from 0"),
    ({"RMA_RANK": "-1"}, "RMA_RANK='-1': use a whole number from 0"),
    ({"RMA_RANK": "nan"}, "RMA_RANK='nan': use a whole number from 0"),
    ({"RMA_RANK": "2", "RMA_SIZE": "2"}, "RMA_RANK='2': use a rank from 0 to 1 (RMA_SIZE='2')"),
    ({"RMA_SIZE": "0"}, "RMA_SIZE='0': use a whole number of ranks from 1"),
    ({"RMA_SIZE": "inf"}, "RMA_SIZE='inf': use a whole number of ranks from 1"),
    ({"SLURM_PROCID": "1", "SLURM_NTASKS": "-2"}, "SLURM_NTASKS='-2': use a whole number of ranks from 1"),
    (
        {**STORE, "RMA_SIZE": "2"},
        "RMA_RANK='': set it to a whole number from 0: RMA_STORE makes this process a rank of a job",
    ),
    (
        {**STORE, "RMA_RANK": "0", "RMA_SIZE": ""},
        "RMA_SIZE='': set it to a whole number from 1: RMA_STORE makes this process a rank of a job",
    ),
    *(
        (
            {"RMA_STORE": address, "RMA_RANK": "0", "RMA_SIZE": "2"},
            f"RMA_STORE={address!r}: use host:port ([address]:port for IPv6) with a port from 1 to 65535",
        )
        for address in ("nope", "127.0.0.1:99999", "127.0.0.1:", ":80", "127.0.0.1:nan")
    ),
]


def clean_environment(**settings_) -> dict[str, str]:
    """This process's environment without any launcher's or rma's variables, plus `settings_`."""
    launchers = ("RMA_", "SLURM_", "PMI_", "OMPI_", "PMIX_")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(launchers)}, **settings_}


def run(argv, env, timeout=60):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


# -- the rules, judged in this process -----------------------------------------------------


@pytest.mark.parametrize("name, value, accepted", BAD_JOB_WIDE)
def test_a_bad_job_setting_is_refused_in_one_line(name, value, accepted):
    with pytest.raises(SettingError) as caught:
        settings.job_settings({name: value})
    assert str(caught.value) == f"rma: {name}={value!r}: {accepted}"
    assert isinstance(caught.value, BootstrapError)


@pytest.mark.parametrize("env, complaint", BAD_PLACE)
def test_a_bad_place_in_the_job_is_refused_in_one_line(env, complaint):
    with pytest.raises(SettingError) as caught:
        settings.rank_and_size(env)
        settings.store_address(env)
    assert str(caught.value) == f"rma: {complaint}"


@pytest.mark.parametrize(
    "env, field, expected",
    [
        ({}, "timeout", 300.0),
        ({"RMA_TIMEOUT": "0"}, "timeout", 0.0),  # never, as for the two below
        ({"RMA_LINK_TIMEOUT": "0"}, "link_timeout", 0.0),
        ({"RMA_HANG_REPORT": "0"}, "hang_report", 0.0),
        ({"RMA_TIMEOUT": " 2.5 "}, "timeout", 2.5),
        ({"RMA_TIMEOUT": ""}, "timeout", 300.0),
        ({"RMA_TIMEOUT": "1000000"}, "timeout", 1e6),
        ({}, "link_timeout", 8.0),
        ({}, "hang_report", 10.0),
        ({}, "progress_sleep_us", 1000),
        ({"RMA_PROGRESS_SLEEP_US": "0"}, "progress_sleep_us", 0),
        ({"RMA_PROGRESS_SLEEP_US": "1e3"}, "progress_sleep_us", 1000),
        ({"RMA_PROGRESS_SLEEP_US": "250"}, "progress_sleep_us", 250),
        ({}, "fabric_sleep", True),
        ({"RMA_FABRIC_SLEEP": "0"}, "fabric_sleep", False),
        ({}, "trust_network", False),
        ({"RMA_TRUST_NETWORK": "1"}, "trust_network", True),
        ({"RMA_MALLOC_TUNING": "0"}, "malloc_tuning", False),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}, "malloc_tuning", False),
        ({}, "malloc_tuning", True),
        ({}, "transport", "auto"),
        ({"RMA_TRANSPORT": "libfabric"}, "transport", "libfabric"),
        ({"RMA_TRANSPORT": "Shared-Memory"}, "transport", "shared-memory"),
        ({}, "provider", ""),
        ({"RMA_PROVIDER": "auto"}, "provider", ""),
        ({"RMA_PROVIDER": "tcp"}, "provider", "tcp"),
        ({"RMA_PROVIDER": "verbs;ofi_rxm"}, "provider", "verbs;ofi_rxm"),
        ({}, "check", None),
        ({"RMA_CHECK": "1"}, "check", "raise"),
        ({"RMA_CHECK": "warn"}, "check", "warn"),
        ({"RMA_CHECK": "off"}, "check", None),
        ({}, "model", "unified"),
        ({"RMA_MODEL": "separate"}, "model", "separate"),
    ],
)
def test_good_values_parse_as_documented(env, field, expected):
    assert getattr(settings.job_settings(env), field) == expected


def test_rma_transport_is_judged_here_and_named_as_the_core_names_it():
    # settings.py is the one judge of RMA_TRANSPORT; the core takes the member of its enum whose
    # name settings.py accepted, and parses no text itself.
    from rma._native import _core

    assert tuple(member.value for member in _core.TransportSetting) == settings.TRANSPORTS
    for name in settings.TRANSPORTS:
        assert settings.transport({"RMA_TRANSPORT": name.upper()}) == name
        assert _core.TransportSetting(name).value == name
    with pytest.raises(TypeError, match="transport must be an rma._core.TransportSetting, not str"):
        _core.Runtime(0, 1, "shm", transport="auto")


def test_the_place_in_the_job_parses_as_before():
    assert settings.rank_and_size({}) == (None, None)
    assert settings.rank_and_size({"RMA_RANK": "3", "RMA_SIZE": "4"}) == (3, 4)
    assert settings.rank_and_size({"SLURM_PROCID": "1", "SLURM_NTASKS": "2"}) == (1, 2)
    assert settings.store_address({}) == ""
    assert settings.store_address({"RMA_STORE": "[::1]:5000", "RMA_RANK": "0", "RMA_SIZE": "1"}) == "[::1]:5000"


def test_a_setting_error_survives_pickling():
    # (The pytest plugin and the notebook send a rank's exceptions to their controller.)
    error = pickle.loads(pickle.dumps(SettingError("RMA_TIMEOUT", "nan", SECONDS)))
    assert str(error) == f"rma: RMA_TIMEOUT='nan': {SECONDS}" and error.complaint == f"RMA_TIMEOUT='nan': {SECONDS}"


@pytest.mark.parametrize("seconds", [0.5, 8, 191, 1000, 86400, 1_000_000])
def test_every_accepted_link_timeout_can_be_applied_to_a_socket(seconds):
    # The kernel refuses more than 127 keepalive probes, or more than 32767 s between them.
    with socket.socket() as sock:
        watch_link(sock, seconds)
        idle, interval, count = (
            sock.getsockopt(socket.IPPROTO_TCP, option)
            for option in (socket.TCP_KEEPIDLE, socket.TCP_KEEPINTVL, socket.TCP_KEEPCNT)
        )
        assert abs(idle + interval * count - seconds) <= max(1.5, seconds * 0.01)


# -- a rank started by another launcher, or by hand: one line per rank, no traceback --------

INIT = [sys.executable, "-c", "import rma; rma.init()"]


@pytest.mark.parametrize("name, value, accepted", PLAIN_JOB_WIDE)
def test_a_plain_rank_says_a_bad_setting_in_one_line(name, value, accepted):
    done = run(INIT, clean_environment(**{name: value}))
    assert done.returncode != 0
    assert done.stderr.splitlines() == [f"rma: {name}={value!r}: {accepted}"]


@pytest.mark.parametrize("env, complaint", BAD_PLACE[::3])
def test_a_plain_rank_says_a_bad_place_in_one_line(env, complaint):
    done = run(INIT, clean_environment(**env))
    assert done.returncode != 0
    assert done.stderr.splitlines() == [f"rma: {complaint}"]


def test_a_provider_libfabric_does_not_serve_here_is_one_line():
    done = run(INIT, clean_environment(RMA_PROVIDER="nosuchprovider"))
    assert done.returncode != 0
    (line,) = done.stderr.splitlines()
    assert line.startswith("rma: RMA_PROVIDER='nosuchprovider': no provider of that name serves rma here; use auto")


def test_a_caught_setting_error_leaves_other_tracebacks_alone():
    code = "import rma\ntry:\n    rma.init()\nexcept rma.BootstrapError as e:\n    print(e)\nraise KeyError('next')"
    done = run([sys.executable, "-c", code], clean_environment(RMA_TIMEOUT="nan"))
    assert done.stdout == f"rma: RMA_TIMEOUT='nan': {SECONDS}\n"
    assert "Traceback" in done.stderr and done.stderr.endswith("KeyError: 'next'\n")


def test_good_values_run_a_job():
    # The largest values every consumer takes (the core's deadlines, the kernel's keepalive), and
    # 0 = never, on a job of one rank.
    code = "import rma; c = rma.init(); c.barrier(); print(c.allgather(c.rank))"
    for extremes in ("0", "1000000"):
        env = clean_environment(
            RMA_TIMEOUT=extremes, RMA_LINK_TIMEOUT=extremes, RMA_HANG_REPORT=extremes, RMA_PROGRESS_SLEEP_US=extremes
        )
        done = run([sys.executable, "-c", code], env)
        assert (done.returncode, done.stdout) == (0, "[0]\n"), done.stderr


# -- rmarun: one line for the whole job, before any rank starts -----------------------------


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("settings") / "job.py"
    path.write_text("import rma\ncomm = rma.init()\ncomm.barrier()\nprint('rank', comm.rank, 'done')\n")
    return str(path)


def rmarun(args, env, timeout=60):
    return run([sys.executable, "-m", "rma", *args], env, timeout)


@pytest.mark.parametrize("name, value, accepted", BAD_JOB_WIDE)
def test_rmarun_says_a_bad_setting_once_and_starts_no_rank(script, name, value, accepted):
    done = rmarun(["-n", "2", script], clean_environment(**{name: value}))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"rmarun: {name}={value!r}: {accepted}"]
    assert done.stdout == ""  # (no rank ran)


def test_rmarun_names_a_bad_provider_option_as_given(script):
    done = rmarun(["-n", "2", "--provider", "no such", script], clean_environment())
    assert (done.returncode, done.stderr.splitlines()) == (
        2,
        ["rmarun: --provider='no such': use auto, shm, tcp or a libfabric provider name (such as verbs;ofi_rxm)"],
    )
    done = rmarun(["-n", "2", "--provider", "nosuchprovider", script], clean_environment())
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("rmarun: --provider='nosuchprovider': no provider of that name serves rma here")


def test_rmarun_runs_a_job_with_good_values_and_sets_the_place_itself(script):
    # 0 = never for all three deadlines; a stale place from another job in rmarun's environment
    # is not the ranks' (rmarun sets RMA_RANK, RMA_SIZE and RMA_STORE for each).
    env = clean_environment(
        RMA_TIMEOUT="0", RMA_LINK_TIMEOUT="0", RMA_HANG_REPORT="0", RMA_RANK="x", RMA_SIZE="0", RMA_STORE="nope"
    )
    done = rmarun(["-n", "2", script], env)
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == ["rank 0 done", "rank 1 done"]


def test_a_notebook_cluster_says_a_bad_setting_before_it_starts_ranks():
    # (Its ranks' errors would go to the kernel's terminal, not to the notebook.)
    from rma.notebook.cluster import Cluster

    with pytest.raises(SettingError, match="^rma: RMA_MODEL='weak': use unified or separate$"):
        Cluster(2, env={"RMA_MODEL": "weak"})


# -- a store that cannot be reached ----------------------------------------------------------


def closed_port() -> int:
    """A port of this machine that nothing listens on (connecting to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_store_is_reported_within_seconds_and_still_retried():
    address = f"127.0.0.1:{closed_port()}"
    env = clean_environment(RMA_STORE=address, RMA_SECRET="s", RMA_RANK="2", RMA_SIZE="3", RMA_TIMEOUT="6")
    lines: list[tuple[float, str]] = []  # (seconds since the start, line of stderr)
    start = time.monotonic()
    with subprocess.Popen(INIT, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as rank:

        def read() -> None:
            for line in rank.stderr:
                lines.append((time.monotonic() - start, line.rstrip("\n")))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            status = rank.wait(timeout=60)
        finally:
            rank.kill()
        reader.join(timeout=10)
    reports = [(when, line) for when, line in lines if "cannot reach the job's store" in line]
    assert len(reports) == 1, lines
    reported_at, report = reports[0]
    assert report == (
        f"rma: rank 2: cannot reach the job's store at {address} (Connection refused); retrying until RMA_TIMEOUT (6 s)"
    )
    assert reported_at < 5.5, lines
    # It kept trying until RMA_TIMEOUT: the end came seconds after the report, naming the store.
    ended_at, last = lines[-1]
    assert status != 0 and ended_at - reported_at > 1.5, lines
    assert last.startswith("rma.errors.BootstrapError: rma: cannot reach the rendezvous store at " + address)
    assert "within 6 s: Connection refused" in last


def test_rma_libfabric_names_the_libraries_to_try_in_order(tmp_path, monkeypatch):
    # Built from source, this install has no libfabric of its own: the system's alone.
    assert not os.path.exists(settings.BUNDLED_LIBFABRIC)
    assert settings.libfabric({}) == (("", "system"),)
    with pytest.raises(SettingError, match="carries no libfabric of its own"):
        settings.libfabric({"RMA_LIBFABRIC": "bundled"})
    # A wheel's install carries one: the default tries the system's first, then that one.
    own = tmp_path / "libfabric.so.1"
    own.write_bytes(b"")
    monkeypatch.setattr(settings, "BUNDLED_LIBFABRIC", str(own))
    assert settings.libfabric({}) == (("", "system"), (str(own), "bundled"))
    assert settings.libfabric({"RMA_LIBFABRIC": " Bundled "}) == ((str(own), "bundled"),)
    assert settings.libfabric({"RMA_LIBFABRIC": "system"}) == (("", "system"),)
    assert settings.libfabric({"RMA_LIBFABRIC": str(own)}) == ((str(own), "RMA_LIBFABRIC"),)
    with pytest.raises(SettingError, match="use system, bundled or the path of a libfabric.so.1$"):
        settings.libfabric({"RMA_LIBFABRIC": str(tmp_path / "none")})
