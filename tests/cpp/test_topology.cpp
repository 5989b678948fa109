// The job's topology: which ranks share a host, as Topology numbers it, and as the runtime and
// its communicators expose it after connecting forked ranks under pretended host identities.
#include "base/topology.hpp"

#include <sys/wait.h>

#include "base/errors.hpp"
#include "check.hpp"
#include "fork_job.hpp"
#include "runtime/communicator.hpp"
#include "runtime/runtime.hpp"

namespace {
using rma::Topology;
using Ranks = std::vector<int>;

// Forks size ranks of one runtime each over shm, connected with `hosts`; runs body(runtime).
void run_job(const std::vector<std::string>& hosts, rma::TransportSetting transport,
             const std::function<void(rma::Runtime&)>& body) {
  int size = static_cast<int>(hosts.size());
  auto statuses = fork_job::run(size, [&](int rank, const fork_job::Exchange& exchange) {
    test::passed() = test::failed() = 0;  // the child counts only its own checks
    rma::RuntimeOptions options;
    options.trust_network = true;  // hosts made up by name on one machine, reached through shm
    options.rank = rank;
    options.size = size;
    options.timeout_seconds = 30;
    options.transport = transport;
    auto runtime = std::make_shared<rma::Runtime>(options);
    CHECK_THROWS(rma::RmaError, "connected", runtime->topology());
    runtime->connect(exchange(runtime->address()), hosts);
    body(*runtime);
    runtime->finalize(true);
    return test::failed() == 0 ? 0 : 1;
  });
  for (int status : statuses) CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
}  // namespace

int main() {
  test::run("hosts are numbered in the order of their lowest rank", [] {
    Topology topology({"b", "a", "b", "c", "a"}, 2);
    CHECK(topology.size() == 5);
    CHECK(topology.host_count() == 3);
    CHECK(topology.host_of(0) == 0 && topology.host_of(2) == 0);
    CHECK(topology.host_of(1) == 1 && topology.host_of(4) == 1);
    CHECK(topology.host_of(3) == 2);
    CHECK(topology.same_host(1, 4) && !topology.same_host(0, 1));
    CHECK(topology.host_ranks() == (Ranks{0, 2}));
    CHECK(topology.one_host(Ranks{1, 4}) && !topology.one_host(Ranks{0, 1, 4}));
    CHECK(topology.one_host(Ranks{3}) && topology.one_host(Ranks{}));
    CHECK(Topology({"b", "a", "b", "c", "a"}, 3).host_ranks() == Ranks{3});
    CHECK_THROWS(rma::UsageError, "rank 5", topology.host_of(5));
    CHECK_THROWS(rma::UsageError, "rank -1", topology.same_host(-1, 0));
    CHECK_THROWS(rma::UsageError, "rank 2", Topology({"a", "a"}, 2));
    CHECK(Topology().size() == 0);
  });
  test::run("transport settings by name", [] {
    // (RMA_TRANSPORT itself is judged in Python, rma._job.settings: the core parses no text.)
    CHECK(std::string(rma::to_string(rma::TransportSetting::Auto)) == "auto");
    CHECK(std::string(rma::to_string(rma::TransportSetting::SharedMemory)) == "shared-memory");
    CHECK(std::string(rma::to_string(rma::TransportSetting::Libfabric)) == "libfabric");
  });
  test::run("one host", [] {
    run_job({"h", "h", "h"}, rma::TransportSetting::Auto, [](rma::Runtime& runtime) {
      CHECK(runtime.topology().host_count() == 1);
      CHECK(runtime.topology().host_ranks() == (Ranks{0, 1, 2}));
      auto world = runtime.world();
      CHECK(world->on_one_host());
      CHECK(world->host_ranks() == (Ranks{0, 1, 2}));
      auto pair = world->split(world->rank() == 2 ? -1 : 0, -world->rank());  // ranks 1, 0
      if (pair) {
        CHECK(pair->on_one_host());
        CHECK(pair->host_ranks() == (Ranks{0, 1}));
      }
    });
  });
  for (auto transport : {rma::TransportSetting::Auto, rma::TransportSetting::Libfabric}) {
    test::run(std::string("pretended hosts x y x y, ") + rma::to_string(transport), [&] {
      run_job({"x", "y", "x", "y"}, transport, [](rma::Runtime& runtime) {
        const Topology& topology = runtime.topology();
        int me = runtime.rank();
        CHECK(topology.host_count() == 2);
        CHECK(topology.host_of(me) == me % 2);
        CHECK(topology.host_ranks() == (me % 2 == 0 ? Ranks{0, 2} : Ranks{1, 3}));
        auto world = runtime.world();
        CHECK(!world->on_one_host());
        CHECK(world->host_ranks() == topology.host_ranks());
        // Messages cross the pretended hosts (fabric) and stay within them (inboxes).
        auto all = world->allgather(std::as_bytes(std::span(&me, 1)));
        CHECK(all.size() == 4u);
        // A communicator of one host's ranks, and one across hosts (world ranks 2 and 1, in
        // that order: its ranks 0 and 1).
        auto local = world->split(me % 2, 0);
        CHECK(local->on_one_host());
        CHECK(local->host_ranks() == (Ranks{0, 1}));
        auto across = world->split(me == 1 || me == 2 ? 0 : -1, -me);
        if (across) {
          CHECK(!across->on_one_host());
          CHECK(across->host_ranks() == Ranks{across->rank()});
        }
        world->barrier();
      });
    });
  }
  return test::finish();
}
