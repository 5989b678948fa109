"""Every RMA_* setting of the environment, read and judged in one place.

Each variable has one function here, which reads it through the reader of its kind (a switch,
seconds with 0 = never, a whole number, a choice, an address) and the kind holds the range:
what is finite, what may be 0, what the core and the kernel can take. A value out of range
raises SettingError, a BootstrapError whose message is one line naming the variable, the value
and what is accepted. rmarun judges the job's settings (job_settings) in its own environment,
which its ranks inherit, before it starts any rank, and rma.init() judges them again for ranks
that other launchers started; either way a bad value ends the job with that one line: an
uncaught SettingError prints only its message (see _print_in_one_line).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..errors import BootstrapError
from .store_protocol import parse_address

__all__ = [
    "SettingError", "JobSettings", "job_settings", "timeout", "link_timeout", "hang_report", "progress_sleep_us",
    "fabric_sleep", "trust_network", "malloc_tuning", "transport", "provider", "requested_provider",
    "unusable_provider", "libfabric", "mr_strict", "check_mode", "memory_model", "trace_file", "trace_events",
    "rank_and_size", "store_address",
    "secret", "under_rmarun", "LONGEST_SECONDS", "LONGEST_SLEEP_US", "TRANSPORTS", "BUNDLED_LIBFABRIC",
    "TRACE_EVENTS", "MOST_TRACE_EVENTS",
]  # fmt: skip

# Seconds settings (RMA_TIMEOUT, RMA_LINK_TIMEOUT, RMA_HANG_REPORT) stop here, about 11.6 days:
# the kernel takes RMA_LINK_TIMEOUT in milliseconds in an int (TCP_USER_TIMEOUT), a PMIx fence
# takes RMA_TIMEOUT in whole seconds in an int, the core adds seconds, as int64 nanoseconds,
# to its steady clock, and Python's socket and event timeouts overflow (OverflowError) long
# before inf. One limit for all three keeps one rule; 0 says "never" to each.
LONGEST_SECONDS = 1_000_000
# RMA_PROGRESS_SLEEP_US stops at a second: a rank busy in Python would answer its peers later
# still, and the core's backoff doubles its sleeps in an int.
LONGEST_SLEEP_US = 1_000_000

_SECONDS = f"use a number of seconds from 0 to {LONGEST_SECONDS} (0 = never)"
_SWITCH = "use 1 or 0"

# Ranks started by other launchers: where those put the rank and the size, in this order.
_RANK_VARIABLES = ("RMA_RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
_SIZE_VARIABLES = ("RMA_SIZE", "SLURM_NTASKS", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE")

_T = TypeVar("_T")


class SettingError(BootstrapError):
    """A variable of the environment holds a value rma does not accept.

    `complaint` is the one line without the "rma: " in front, for a launcher that prints it
    under its own name.
    """

    def __init__(self, name: str, value: str, accepted: str) -> None:
        self.name = name
        self.value = value
        self.accepted = accepted
        self.complaint = f"{name}={value!r}: {accepted}"
        super().__init__(f"rma: {self.complaint}")

    def __reduce__(self):
        # (The default would call the class with the message alone.)
        return SettingError, (self.name, self.value, self.accepted)


def _refuse(name: str, value: str, accepted: str) -> SettingError:
    """The error for a bad value; uncaught, it ends the process with its one line only."""
    if not getattr(sys.excepthook, "_rma_settings", False):
        sys.excepthook = _print_in_one_line(sys.excepthook)
    return SettingError(name, value, accepted)


def _print_in_one_line(previous):
    """An excepthook that prints an uncaught SettingError as its message alone and hands every
    other exception to `previous`: the message says all there is (which variable, which value,
    what to use), and the traceback through rma.init would only bury it. Installed only once a
    SettingError is made, so a job with good settings keeps Python's hook (and rma.init's)."""

    def hook(kind, value, traceback):
        if isinstance(value, SettingError):
            print(value, file=sys.stderr, flush=True)
        else:
            previous(kind, value, traceback)

    hook._rma_settings = True
    return hook


def _environment(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


# -- the readers, one per kind ---------------------------------------------------------------


def _seconds(name: str, default: float, env: Mapping[str, str] | None) -> float:
    """A number of seconds from 0 to LONGEST_SECONDS, 0 meaning never; unset or blank: default."""
    raw = _environment(env).get(name, "")
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value <= LONGEST_SECONDS:  # (nan is neither; inf and 1e999 are too large)
        raise _refuse(name, raw, _SECONDS)
    return value


def _whole(raw: str) -> int | None:
    """The whole number `raw` spells ("12", "+12", "1e3", "12.0"), or None."""
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        value = float(raw)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def _whole_number(name: str, default: int, lowest: int, highest: int, unit: str, env: Mapping[str, str] | None) -> int:
    """A whole number from `lowest` to `highest`; unset or blank: default."""
    raw = _environment(env).get(name, "")
    if not raw.strip():
        return default
    value = _whole(raw)
    if value is None or not lowest <= value <= highest:
        raise _refuse(name, raw, f"use a whole number of {unit} from {lowest} to {highest}")
    return value


def _choice(name: str, choices: Mapping[str, _T], default: _T, accepted: str, env: Mapping[str, str] | None) -> _T:
    """One of `choices` (any case, blanks around ignored); unset or blank: default."""
    raw = _environment(env).get(name, "")
    text = raw.strip().lower()
    if not text:
        return default
    if text not in choices:
        raise _refuse(name, raw, accepted)
    return choices[text]


def _switch(name: str, env: Mapping[str, str] | None, default: bool = True) -> bool:
    """1 or 0 (unset: default)."""
    return _choice(name, {"1": True, "0": False}, default, _SWITCH, env)


# RMA_TRACE_EVENTS: a rank's ring of trace records (64 bytes each): 4 MiB by default, 1 GiB at
# most (a ring that large is a mistake more often than a wish).
TRACE_EVENTS = 65536
MOST_TRACE_EVENTS = 1 << 24

# -- the job's settings: the same for every rank, judged by rmarun and by rma.init ------------


def timeout(env: Mapping[str, str] | None = None) -> float:
    """RMA_TIMEOUT: the deadline of every blocking call in seconds (0 = never; default 300)."""
    return _seconds("RMA_TIMEOUT", 300.0, env)


def link_timeout(env: Mapping[str, str] | None = None) -> float:
    """RMA_LINK_TIMEOUT: seconds after which a store connection whose other end stopped
    answering counts as closed (0 = never; default 8).

    A rank that dies closes its connection at once (its kernel does), but a host that loses
    its link, or stops, says nothing: the kernel's keepalive probes find that out
    (store_protocol.watch_link), and the store then announces that host's ranks dead to the
    others, while those ranks lose the store (both end their blocked calls with PeerError).
    """
    return _seconds("RMA_LINK_TIMEOUT", 8.0, env)


def hang_report(env: Mapping[str, str] | None = None) -> float:
    """RMA_HANG_REPORT: seconds after which a blocked call says once that it still waits
    (0 = never; default 10)."""
    return _seconds("RMA_HANG_REPORT", 10.0, env)


def progress_sleep_us(env: Mapping[str, str] | None = None) -> int:
    """RMA_PROGRESS_SLEEP_US: the longest sleep of a rank's progress thread between two polls
    while messages came lately, in microseconds (default 1000)."""
    return _whole_number("RMA_PROGRESS_SLEEP_US", 1000, 0, LONGEST_SLEEP_US, "microseconds", env)


def fabric_sleep(env: Mapping[str, str] | None = None) -> bool:
    """RMA_FABRIC_SLEEP (1, the default, or 0): whether an idle rank of a job that spans hosts
    sleeps on the fabric's wait fd (under 0.1% of a core; a message round trip over tcp costs
    about 10 us more) rather than polling the fabric every RMA_PROGRESS_SLEEP_US (about 1.3%
    of a core). Judged on one host too, where it does not apply."""
    return _switch("RMA_FABRIC_SLEEP", env)


def trust_network(env: Mapping[str, str] | None = None) -> bool:
    """RMA_TRUST_NETWORK (0, the default, or 1): 1 lets a job span hosts through a libfabric
    provider that cannot tell where a message came from (no FI_SOURCE), trusting every machine
    that reaches the network to speak only as itself."""
    return _switch("RMA_TRUST_NETWORK", env, default=False)


def malloc_tuning(env: Mapping[str, str] | None = None) -> bool:
    """Whether rma.init raises glibc's malloc thresholds (RMA_MALLOC_TUNING, default 1): not when
    the user set them through GLIBC_TUNABLES."""
    tunables = _environment(env).get("GLIBC_TUNABLES", "")
    return (
        _switch("RMA_MALLOC_TUNING", env)
        and "malloc.mmap_threshold" not in tunables
        and "malloc.trim_threshold" not in tunables
    )


# RMA_TRANSPORT's settings: the names of the core's TransportSetting (runtime/runtime.hpp), in
# its order. Judged here only: rma.init() hands the core the member of rma._core.TransportSetting
# of the name judged (not asked of the core here, so that rmarun need not load it; the suite
# checks that the two agree, tests/test_settings.py).
TRANSPORTS = ("auto", "shared-memory", "libfabric")


def transport(env: Mapping[str, str] | None = None) -> str:
    """RMA_TRANSPORT: auto (the default), shared-memory or libfabric. rma.init() then checks
    that every rank gives the same, and the runtime keeps it; rmarun --info shows it."""
    choices = {name: name for name in TRANSPORTS}
    accepted = f"use {', '.join(TRANSPORTS[:-1])} or {TRANSPORTS[-1]}"
    return _choice("RMA_TRANSPORT", choices, "auto", accepted, env)


# "tcp" (RMA_PROVIDER, rmarun --provider, and the automatic choice across hosts) asks libfabric
# for its fastest RDM endpoint over TCP: its own (net in libfabric 1.17, bare tcp from 1.18 on)
# where it has one, else tcp;ofi_rxm (src/core/fabric/fabric_endpoint.cpp, FabricEndpoint::find).
# Any of these serves it.
_TCP_PROVIDERS = ("net", "tcp", "tcp;ofi_rxm")
# A core provider, then perhaps a utility provider after a ";".
_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]+(;[A-Za-z0-9_-]+)?")


def requested_provider(raw: str, name: str = "RMA_PROVIDER") -> str:
    """The libfabric provider asked for by `name` (RMA_PROVIDER, rmarun --provider): "" for the
    automatic choice (blank or auto), else its name ("tcp": libfabric's fastest endpoint over TCP).

    Here only its form is judged: libfabric names its providers with letters, digits, "_" and
    "-", a utility provider after a ";" (verbs;ofi_rxm). Whether one by that name serves rma is
    for the libfabric of the rank's host to say (unusable_provider)."""
    text = raw.strip()
    if text.lower() in ("", "auto"):
        return ""
    if not _PROVIDER_NAME.fullmatch(text):
        raise _refuse(name, raw, "use auto, shm, tcp or a libfabric provider name (such as verbs;ofi_rxm)")
    return text


def provider(env: Mapping[str, str] | None = None) -> str:
    """RMA_PROVIDER: "" for the automatic choice (unset, blank or auto), else the provider asked
    for (requested_provider)."""
    return requested_provider(_environment(env).get("RMA_PROVIDER", ""))


def unusable_provider(usable: Sequence[str], raw: str | None = None, name: str = "RMA_PROVIDER") -> SettingError | None:
    """The error for a provider asked for by name (`raw`; None: RMA_PROVIDER) that is not among
    `usable`, this host's providers that serve rma (_core.usable_providers()); None when it is,
    or when none was asked for."""
    raw = os.environ.get("RMA_PROVIDER", "") if raw is None else raw
    requested = requested_provider(raw, name)
    if not requested or serves(requested, usable):
        return None
    return _refuse(name, raw, f"no provider of that name serves rma here; use auto or one of {', '.join(usable)}")


def serves(requested: str, usable: Sequence[str]) -> bool:
    """Whether a libfabric whose usable providers are `usable` serves the provider asked for."""
    return requested in usable or (requested == "tcp" and any(name in _TCP_PROVIDERS for name in usable))


def mr_strict(env: Mapping[str, str] | None = None) -> bool:
    """RMA_MR_STRICT (0, the default, or 1): 1 makes every rank that opens a libfabric endpoint
    pass the descriptor of a live registration for each local buffer of every data-transfer call,
    and check that it does, whatever the provider needs (src/core/fabric/local_registrations.hpp):
    for tests of what FI_MR_LOCAL providers (verbs, efa) ask, on tcp and shm."""
    return _switch("RMA_MR_STRICT", env, default=False)


# The libfabric a wheel of rma carries (./dev.sh wheel puts it there, with the libraries it needs
# in rma.libs/); an install built from source has none.
BUNDLED_LIBFABRIC = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_libfabric", "libfabric.so.1"
)

# What a rank tries when it needs libfabric: (file, origin) pairs, in order, for _core.use_libfabric.
LibfabricCandidates = tuple[tuple[str, str], ...]


def libfabric(env: Mapping[str, str] | None = None) -> LibfabricCandidates:
    """RMA_LIBFABRIC: the libfabrics a rank tries, in order, when it needs one (src/core/fabric/
    libfabric_library.cpp loads the first that loads and is 1.17 or newer), as (file, origin)
    pairs: unset, the system's ("", as the dynamic loader finds libfabric.so.1) and then this
    install's own (BUNDLED_LIBFABRIC, a wheel's; "bundled"); `system`, the system's alone;
    `bundled`, this install's own alone; or the path of a libfabric.so.1 (a site's own build),
    returned absolute. Judged here: a path must name a file, and `bundled` an install that has
    one; whether a file is a libfabric new enough is for the loader to say."""
    raw = _environment(env).get("RMA_LIBFABRIC", "")
    text = raw.strip()
    system, bundled = ("", "system"), (BUNDLED_LIBFABRIC, "bundled")
    has_own = os.path.isfile(BUNDLED_LIBFABRIC)
    if text == "":
        return (system, bundled) if has_own else (system,)
    if text.lower() == "system":
        return (system,)
    if text.lower() == "bundled" and has_own:
        return (bundled,)
    if text.lower() == "bundled" or not os.path.isfile(text):
        accepted = (
            "use system, bundled or the path of a libfabric.so.1"
            if has_own
            else "use system or the path of a libfabric.so.1 (this install of rma, built from source, carries "
            "no libfabric of its own)"
        )
        raise _refuse("RMA_LIBFABRIC", raw, accepted)
    return ((os.path.abspath(text), "RMA_LIBFABRIC"),)


def check_mode(env: Mapping[str, str] | None = None) -> str | None:
    """RMA_CHECK: "raise" (1), "warn", or None (0, the default)."""
    choices: dict[str, str | None] = {word: None for word in ("0", "off", "no", "false")}
    choices.update({word: "raise" for word in ("1", "on", "yes", "true", "raise")})
    choices["warn"] = "warn"
    return _choice("RMA_CHECK", choices, None, "use 1, warn or 0", env)


def trace_file(env: Mapping[str, str] | None = None) -> str | None:
    """RMA_TRACE: the trace file the job writes (None: unset or blank, no trace), as an
    absolute path (every rank and rmarun name the same file, whatever their directory)."""
    raw = _environment(env).get("RMA_TRACE", "")
    if not raw.strip():
        return None
    path = os.path.abspath(os.path.expanduser(raw.strip()))
    if os.path.isdir(path) or not os.path.isdir(os.path.dirname(path)):
        raise _refuse("RMA_TRACE", raw, "use the path of a file to write, in a directory that exists")
    return path


def trace_events(env: Mapping[str, str] | None = None) -> int:
    """RMA_TRACE_EVENTS: how many records each rank's trace keeps (its newest; default 65536,
    64 bytes each)."""
    return _whole_number("RMA_TRACE_EVENTS", TRACE_EVENTS, 16, MOST_TRACE_EVENTS, "records", env)


def memory_model(env: Mapping[str, str] | None = None) -> str:
    """RMA_MODEL: "unified" (the default) or "separate"."""
    choices = {name: name for name in ("unified", "separate")}
    return _choice("RMA_MODEL", choices, "unified", "use unified or separate", env)


@dataclass(frozen=True)
class JobSettings:
    """The job's settings, as judged (every rank has the same environment)."""

    timeout: float
    link_timeout: float
    hang_report: float
    progress_sleep_us: int
    fabric_sleep: bool
    trust_network: bool
    malloc_tuning: bool
    transport: str
    provider: str
    libfabric: LibfabricCandidates
    mr_strict: bool
    check: str | None
    model: str
    trace: str | None
    trace_events: int


def job_settings(env: Mapping[str, str] | None = None) -> JobSettings:
    """Judge every setting of the job in `env` (None: this process's environment) and return
    them; SettingError names the first bad one. rmarun calls it before it starts any rank,
    rma.init() before it starts anything."""
    return JobSettings(
        timeout=timeout(env),
        link_timeout=link_timeout(env),
        hang_report=hang_report(env),
        progress_sleep_us=progress_sleep_us(env),
        fabric_sleep=fabric_sleep(env),
        trust_network=trust_network(env),
        malloc_tuning=malloc_tuning(env),
        transport=transport(env),
        provider=provider(env),
        libfabric=libfabric(env),
        mr_strict=mr_strict(env),
        check=check_mode(env),
        model=memory_model(env),
        trace=trace_file(env),
        trace_events=trace_events(env),
    )


# -- this rank's place in the job: set by its launcher ----------------------------------------


def _first_set(names: tuple[str, ...], env: Mapping[str, str]) -> tuple[str, str] | None:
    for name in names:
        raw = env.get(name, "")
        if raw.strip():
            return name, raw
    return None


def rank_and_size(env: Mapping[str, str] | None = None) -> tuple[int | None, int | None]:
    """This process's rank and its job's size as its launcher set them (RMA_RANK, RMA_SIZE, else
    Slurm's, PMI's, Open MPI's or PMIx's variables), None for what none of them sets."""
    env = _environment(env)
    rank = size = None
    found_size = _first_set(_SIZE_VARIABLES, env)
    if found_size is not None:
        size = _whole(found_size[1])
        if size is None or size < 1:
            raise _refuse(*found_size, "use a whole number of ranks from 1")
    found_rank = _first_set(_RANK_VARIABLES, env)
    if found_rank is not None:
        rank = _whole(found_rank[1])
        if size is not None and (rank is None or not 0 <= rank < size):
            raise _refuse(*found_rank, f"use a rank from 0 to {size - 1} ({found_size[0]}={found_size[1]!r})")
        if rank is None or rank < 0:
            raise _refuse(*found_rank, "use a whole number from 0")
    return rank, size


def store_address(env: Mapping[str, str] | None = None) -> str:
    """RMA_STORE: host:port of the job's rendezvous store ([v6addr]:port for IPv6), "" when
    unset (a job of one rank, or one that PMIx started). A rank of a store needs its rank and
    the job's size as well."""
    env = _environment(env)
    raw = env.get("RMA_STORE", "")
    if not raw.strip():
        return ""
    try:
        parse_address(raw)
    except ValueError:
        raise _refuse("RMA_STORE", raw, "use host:port ([address]:port for IPv6) with a port from 1 to 65535") from None
    rank, size = rank_and_size(env)
    for name, value, kind in (("RMA_RANK", rank, "a whole number from 0"), ("RMA_SIZE", size, "a whole number from 1")):
        if value is None:
            raise _refuse(name, env.get(name, ""), f"set it to {kind}: RMA_STORE makes this process a rank of a job")
    return raw.strip()


def secret(env: Mapping[str, str] | None = None) -> str:
    """RMA_SECRET: the job's secret, which the store checks (any text)."""
    return _environment(env).get("RMA_SECRET", "")


def under_rmarun(env: Mapping[str, str] | None = None) -> bool:
    """Whether rmarun started this process (RMA_LAUNCHER=rmarun)."""
    return _environment(env).get("RMA_LAUNCHER") == "rmarun"
