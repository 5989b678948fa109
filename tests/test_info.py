"""rma.info() and `python -m rma --info [--json]` (issue 43, item 2): each fact is checked
against what the system does, not against what rma says elsewhere. The library against the file
/proc/self/maps shows mapped; the modes against a real rank's endpoint; shared memory against a
/dev/shm made read-only and a process the kernel forbids reading. Each runs in a process of its
own, so that the settings and the libfabric loaded are the ones given.
"""

import json
import os
import shutil
import sys
import textwrap

import pytest

from processes import run_in_own_group
from tcp_provider import provider_opened, tcp_provider_opened

WAIT = 60

# rma.info() as JSON, then the libfabric files this process has mapped.
REPORT = textwrap.dedent(
    """
    import json, rma
    facts = rma.info().as_dict()
    with open("/proc/self/maps") as maps:
        facts["mapped"] = sorted({line.split()[-1] for line in maps if "libfabric" in line})
    print(json.dumps(facts))
    """
)


def environment(**settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RMA_", "FI_", "PMIX_"))}
    env.update(settings)
    return env


def python(code, prefix=(), **settings):
    done = run_in_own_group([*prefix, sys.executable, "-c", code], timeout=WAIT, env=environment(**settings))
    assert done.returncode == 0, done.stderr
    return done.stdout


def report(prefix=(), **settings):
    return json.loads(python(REPORT, prefix, **settings))


def test_the_library_is_the_file_mapped_and_says_why(tmp_path):
    facts = report()
    assert facts["libfabric"]["source"] == "system"
    assert [os.path.realpath(facts["libfabric"]["path"])] == [os.path.realpath(f) for f in facts["mapped"]]
    own = tmp_path / "libfabric.so.1"
    shutil.copy(facts["mapped"][0], own)
    facts = report(RMA_LIBFABRIC=str(own))
    assert (facts["libfabric"]["source"], facts["libfabric"]["path"], facts["mapped"]) == (
        "RMA_LIBFABRIC",
        str(own),
        [str(own)],
    )


def test_a_library_that_cannot_be_loaded_is_reported_not_raised(tmp_path):
    text = tmp_path / "not-a-library.so"
    text.write_text("hello\n")
    facts = report(RMA_LIBFABRIC=str(text))
    fabric, several = facts["libfabric"], facts["several_hosts"]
    assert (fabric["source"], fabric["path"], fabric["usable_providers"], facts["mapped"]) == (
        "RMA_LIBFABRIC",
        "",
        [],
        [],
    )
    problem = fabric["problem"]
    assert problem.startswith(f"rma: libfabric could not be loaded: RMA_LIBFABRIC: {text}: "), problem
    assert (several["available"], several["modes"], several["problem"]) == (False, None, fabric["problem"])
    done = run_in_own_group(
        [sys.executable, "-m", "rma", "--info"], timeout=WAIT, env=environment(RMA_LIBFABRIC=str(text))
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"libfabric NOT loaded (RMA_LIBFABRIC): {fabric['problem']}"


def test_the_choice_of_provider_and_its_reason():
    facts = report()
    one, several = facts["one_host"], facts["several_hosts"]
    assert (one["uses_libfabric"], one["reason"], one["provider"], one["modes"]) == (
        False,
        "shared memory only",
        "",
        None,
    )
    assert (several["reason"], several["provider"], several["node"]) == ("automatic", "tcp", "")
    assert several["modes"]["provider"] == tcp_provider_opened()
    facts = report(RMA_PROVIDER="tcp")
    for choice, node in ((facts["one_host"], "127.0.0.1"), (facts["several_hosts"], "")):
        assert (choice["uses_libfabric"], choice["reason"], choice["provider"], choice["node"]) == (
            True,
            "RMA_PROVIDER",
            "tcp",
            node,
        )
        assert choice["available"] and choice["knows_sources"] and choice["modes"]["provider"] == tcp_provider_opened()
    one = report(RMA_TRANSPORT="libfabric")["one_host"]
    assert (one["reason"], one["provider"], one["knows_sources"]) == ("automatic", "shm", False)


def test_a_provider_libfabric_does_not_serve_has_no_modes_and_says_why():
    one = report(RMA_PROVIDER="no-such-provider")["one_host"]
    assert (one["available"], one["modes"]) == (False, None)
    assert one["problem"].startswith("fi_getinfo: "), one["problem"]


# What a rank's own endpoint runs under, beside what rma.info() said before it opened it.
RANK = textwrap.dedent(
    """
    import json, rma
    from rma._job import join
    facts = rma.info()
    rma.init()
    print(json.dumps([facts.as_dict()["one_host"]["modes"], dict(join._job.runtime.provider_modes)]))
    rma.finalize()
    """
)


@pytest.mark.parametrize("provider", ["tcp", "shm"])
def test_the_modes_are_those_a_rank_gets(provider):
    # One rank on this host: an endpoint of RMA_PROVIDER bound as rma.init() binds it.
    reported, endpoint = json.loads(python(RANK, RMA_PROVIDER=provider))
    assert endpoint["provider"] == provider_opened(provider)
    assert reported == endpoint
    assert endpoint["cq_wait"] == "FI_WAIT_NONE"  # (a job on one host sleeps on its bell)
    assert endpoint["threading"] == "FI_THREAD_DOMAIN"


@pytest.mark.parametrize("provider", ["tcp", "shm"])
def test_under_rma_mr_strict_a_rank_keeps_to_fi_mr_local(provider):
    # Neither provider asks for FI_MR_LOCAL; RMA_MR_STRICT=1 makes the rank keep to it, and says so.
    reported, endpoint = json.loads(python(RANK, RMA_PROVIDER=provider))
    assert "FI_MR_LOCAL" not in endpoint["mr_mode"].split("|"), endpoint
    reported, strict = json.loads(python(RANK, RMA_PROVIDER=provider, RMA_MR_STRICT="1"))
    assert reported == strict
    assert strict["mr_mode"].split("|") == ["FI_MR_LOCAL"] + [
        bit for bit in endpoint["mr_mode"].split("|") if bit != "none"
    ], (endpoint, strict)


def test_across_hosts_an_idle_rank_sleeps_on_the_completion_queue():
    # RMA_FABRIC_SLEEP applies across hosts only; shm's queue never gets a wait fd. libfabric
    # 1.17's net sleeps on a wait set of its own (its fi_trywait is a stub: fabric/handles.hpp).
    facts = report(RMA_PROVIDER="tcp")
    wait = "FI_WAIT_SET" if tcp_provider_opened() == "net" else "FI_WAIT_FD"
    assert facts["several_hosts"]["modes"]["cq_wait"] == wait
    assert report(RMA_PROVIDER="tcp;ofi_rxm")["several_hosts"]["modes"]["cq_wait"] == "FI_WAIT_FD"
    assert report(RMA_PROVIDER="tcp", RMA_FABRIC_SLEEP="0")["several_hosts"]["modes"]["cq_wait"] == "FI_WAIT_NONE"
    assert report(RMA_PROVIDER="shm")["several_hosts"]["modes"]["cq_wait"] == "FI_WAIT_NONE"


def test_info_json_is_rma_info_and_the_text_says_the_same(tmp_path):
    settings = {"RMA_PROVIDER": "tcp"}
    done = run_in_own_group(
        [sys.executable, "-m", "rma", "--info", "--json"], timeout=WAIT, env=environment(**settings)
    )
    assert done.returncode == 0, done.stderr
    facts = report(**settings)
    del facts["mapped"]
    assert json.loads(done.stdout) == facts
    done = run_in_own_group([sys.executable, "-m", "rma", "--info"], timeout=WAIT, env=environment(**settings))
    assert done.returncode == 0, done.stderr
    modes = facts["one_host"]["modes"]
    assert (
        f"  modes: mr_mode {modes['mr_mode']}; data progress {modes['data_progress']}, control progress "
        f"{modes['control_progress']}; {modes['threading']}; completions {modes['cq_format']}, {modes['cq_wait']}"
    ) in done.stdout.splitlines()
    assert "shared memory: segments in /dev/shm: yes; reading another process's memory: yes" in done.stdout
    assert (
        "--json goes with --info"
        in run_in_own_group([sys.executable, "-m", "rma", "--json"], timeout=WAIT, env=environment()).stderr
    )


def _needs_root(what):
    if os.geteuid() != 0:
        pytest.skip(f"{what} needs root")


def test_a_read_only_dev_shm_is_reported():
    _needs_root("a mount namespace")
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux)")
    # A tmpfs mounted read-only over /dev/shm in a mount namespace of the report's own.
    shared = report(
        [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            'mount -t tmpfs -o ro tmpfs /dev/shm && "$@"',
            "sh",
        ]
    )["shared_memory"]
    assert (shared["segments"], shared["peer_reads"]) == (False, True)
    assert "Read-only file system" in shared["segments_problem"], shared
    assert report()["shared_memory"] == {
        "segments": True,
        "segments_problem": "",
        "peer_reads": True,
        "peer_reads_problem": "",
    }


def test_a_kernel_that_forbids_reading_a_peer_is_reported():
    _needs_root("dropping CAP_SYS_PTRACE")
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv (util-linux)")
    # Not dumpable, and without CAP_SYS_PTRACE (root keeps its user, so the checkout's
    # permissions do not matter): the kernel refuses process_vm_readv of this process to any
    # other, as it would a rank's to its peer.
    drop = ["setpriv", "--bounding-set", "-sys_ptrace", "--inh-caps", "-sys_ptrace"]
    code = "import ctypes; ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n" + REPORT  # PR_SET_DUMPABLE
    done = run_in_own_group([*drop, sys.executable, "-c", code], timeout=WAIT, env=environment())
    if done.returncode != 0 and "setpriv" in done.stderr:
        pytest.skip(f"setpriv cannot drop CAP_SYS_PTRACE here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    shared = json.loads(done.stdout)["shared_memory"]
    assert (shared["segments"], shared["peer_reads"]) == (True, False)
    assert shared["peer_reads_problem"].startswith("process_vm_readv: Operation not permitted"), shared


def test_pmix_is_found_as_rma_init_would_load_it():
    found = python("from rma._job.pmix_client import _library; print(_library()._name)").strip()
    pmix = report()["pmix"]
    assert pmix == {"library": found, "server": False}
    assert report(PMIX_NAMESPACE="job", PMIX_RANK="0")["pmix"]["server"] is True


def test_no_pmix_library_is_reported(tmp_path):
    # A Python whose ctypes finds no libpmix: find_library says none, and the names fail to load.
    blocked = tmp_path / "sitecustomize.py"
    blocked.write_text(
        textwrap.dedent(
            """
            import ctypes, ctypes.util
            ctypes.util.find_library = lambda name: None
            _real = ctypes.CDLL.__init__
            def _refuse_pmix(self, name, *args, **kwargs):
                if name and "pmix" in str(name):
                    raise OSError(f"{name}: hidden by the test")
                _real(self, name, *args, **kwargs)
            ctypes.CDLL.__init__ = _refuse_pmix
            """
        )
    )
    done = run_in_own_group(
        [sys.executable, "-m", "rma", "--info"],
        timeout=WAIT,
        env=environment(PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"),
    )
    assert done.returncode == 0, done.stderr
    assert "PMIx: client library NOT found (apt-get install libpmix2" in done.stdout, done.stdout
