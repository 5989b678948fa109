// The libfabric transport between real processes: active messages (order, sizes, self),
// write/read with remote completion, the progress engine, dead peers and deadlines, on one
// host and on pretended hosts (messages between those go through the fabric, not the inboxes).
// Each case forks its ranks; every rank opens its own endpoint after the fork.
#include "fabric/fabric_transport.hpp"

#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/errors.hpp"
#include "check.hpp"
#include "fabric/check.hpp"
#include "fabric/fabric_endpoint.hpp"
#include "fork_job.hpp"
#include "host/shm_inbox.hpp"
#include "runtime/progress_engine.hpp"

namespace {
using rma::Deadline;
using rma::RegionDescriptor;
using rma::RemoteAddress;
using rma::Transport;
using Bytes = std::vector<std::byte>;

constexpr uint16_t kBarrier = 20, kDescriptor = 21, kData = 22, kNote = 23;

// What every rank of a test job has: the transport, a barrier and everyone's region.
struct Rank {
  Transport& transport;
  int rank, size;
  std::mutex mutex;
  std::map<int, int> arrivals;  // barrier phase -> ranks arrived
  std::vector<RegionDescriptor> regions;
  int regions_known = 0;
  std::vector<Bytes> addresses;  // every rank's, as connect() took them

  explicit Rank(Transport& t) : transport(t), rank(t.rank()), size(t.size()), regions(t.size()) {
    transport.set_handler(kBarrier, [this](int, Bytes&& payload) {
      int phase;
      std::memcpy(&phase, payload.data(), sizeof phase);
      std::lock_guard lock(mutex);
      ++arrivals[phase];
    });
    transport.set_handler(kDescriptor, [this](int source, Bytes&& payload) {
      std::lock_guard lock(mutex);
      std::memcpy(&regions[source], payload.data(), sizeof(RegionDescriptor));
      ++regions_known;
    });
  }

  template <class Done>
  void wait(Done done, const char* what, double seconds = 30) {
    transport.wait_until(done, Deadline::after(seconds), {}, [what] { return std::string(what); });
  }

  void barrier(int phase) {
    for (int peer = 0; peer < size; ++peer) {
      if (peer != rank) transport.send(peer, kBarrier, std::as_bytes(std::span(&phase, 1)));
    }
    wait(
        [&] {
          std::lock_guard lock(mutex);
          return arrivals[phase] == size - 1;
        },
        "barrier");
  }

  void publish(const RegionDescriptor& mine) {
    for (int peer = 0; peer < size; ++peer) {
      transport.send(peer, kDescriptor, std::as_bytes(std::span(&mine, 1)));
    }
    wait(
        [&] {
          std::lock_guard lock(mutex);
          return regions_known == size;
        },
        "region exchange");
  }
};

// Flags between the forked ranks of a job that need no progress of the transport under test
// (a rank that must not drain its inbox waits on one): words in memory the parent mapped before
// forking. run_job lowers them all before each job.
class SharedFlags {
 public:
  static constexpr int kCount = 16;
  SharedFlags() {
    void* memory =
        mmap(nullptr, sizeof(std::atomic<int>) * kCount, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) std::abort();
    words_ = new (memory) std::atomic<int>[kCount];
    lower_all();
  }
  void lower_all() {
    for (int i = 0; i < kCount; ++i) words_[i].store(0);
  }
  void raise(int flag) { words_[flag].store(1, std::memory_order_release); }
  // Waits (sleeping) until flag is raised; false if it was not within `seconds`.
  bool wait(int flag, double seconds) const {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (words_[flag].load(std::memory_order_acquire) == 0) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  std::atomic<int>* words_;
};

SharedFlags& flags() {
  static SharedFlags shared;  // (main maps it before the first fork)
  return shared;
}

// How run_job starts a job's ranks, beyond provider, messages and size.
struct JobSetup {
  std::vector<std::string> hosts;  // each rank's host identity (default: one host)
  double timeout_seconds = 30;     // of a post or send that finds no room (FabricOptions)
  // The address each rank binds (FabricOptions::node); default: none for shm, 127.0.0.1 else.
  std::function<std::string(int rank)> node;
  // Whether the ranks meet in a barrier after the body; a body that breaks the way to a rank
  // keeps its ranks in step by itself (with flags()).
  bool closing_barrier = true;
  // What each rank publishes, given its address() (default: that address).
  std::function<Bytes(int rank, Bytes address)> publish;
  // Non-empty: connect() must throw a FabricError saying this on every rank (no body then).
  std::string connect_error;
};

// Forks `size` ranks that run body(rank) over `provider` (messages through the ranks'
// shared-memory inboxes, or through the fabric); CHECKs that each exits 0 in time.
void run_job(const std::string& provider, bool inboxes, int size, const std::function<void(Rank&)>& body,
             JobSetup setup = {}) {
  if (setup.hosts.empty()) setup.hosts.assign(size, "here");
  flags().lower_all();
  auto statuses = fork_job::run(size, [&](int r, const fork_job::Exchange& exchange) {
    test::passed() = test::failed() = 0;  // the child counts only its own checks
    rma::FabricOptions options;
    options.provider = provider;
    options.node = setup.node ? setup.node(r) : provider == "shm" ? "" : "127.0.0.1";
    options.rank = r;
    options.size = size;
    options.timeout_seconds = setup.timeout_seconds;
    options.inbox_messages = inboxes;
    // Hosts made up by name on one machine, where shm (which cannot tell a message's source)
    // may carry "their" traffic: the trust that the real network would need.
    options.trust_network = true;
    auto transport = rma::open_fabric_transport(options);
    Rank rank(*transport);  // handlers are in place before anyone knows our address
    Bytes address = transport->address();
    rank.addresses = exchange(setup.publish ? setup.publish(r, std::move(address)) : std::move(address));
    if (!setup.connect_error.empty()) {
      CHECK_THROWS(rma::fabric::FabricError, setup.connect_error,
                   transport->connect(rank.addresses, rma::Topology(setup.hosts, r)));
      return test::failed() == 0 ? 0 : 1;
    }
    transport->connect(rank.addresses, rma::Topology(setup.hosts, r));
    body(rank);
    if (setup.closing_barrier) rank.barrier(1000);  // nobody tears down while a peer still needs it
    try {
      transport->flush_sends(Deadline::after(30));
    } catch (const rma::PeerError&) {
      // deadlines_and_dead_peers marked a live neighbour dead on purpose.
    }
    return test::failed() == 0 ? 0 : 1;
  });
  for (int r = 0; r < size; ++r) {
    bool ok = WIFEXITED(statuses[r]) && WEXITSTATUS(statuses[r]) == 0;
    if (!ok) std::fprintf(stderr, "%s: rank %d of %d failed (status %d)\n", provider.c_str(), r, size, statuses[r]);
    CHECK(ok);
  }
}

uint8_t pattern(int source, int message, size_t index) {
  return static_cast<uint8_t>(source * 31 + message * 7 + index);
}

void active_messages(Rank& me) {
  // Every rank sends every rank (itself too) messages of awkward sizes, one of them larger
  // than a fragment; each arrives whole and in the order its source sent it.
  const std::vector<size_t> sizes = {0, 1, 1000, 3 * rma::kFragmentPayload + 17, 7, 65536};
  std::mutex mutex;
  std::vector<int> next(me.size, 0);
  int received = 0, wrong = 0;
  me.transport.set_handler(kData, [&](int source, Bytes&& payload) {
    std::lock_guard lock(mutex);
    int message = next[source]++;
    bool ok = payload.size() == sizes[message];
    for (size_t i = 0; ok && i < payload.size(); ++i) {
      ok = payload[i] == std::byte{pattern(source, message, i)};
    }
    if (!ok) ++wrong;
    ++received;
  });
  me.barrier(1);
  for (int peer = 0; peer < me.size; ++peer) {
    for (size_t m = 0; m < sizes.size(); ++m) {
      Bytes payload(sizes[m]);
      for (size_t i = 0; i < payload.size(); ++i) payload[i] = std::byte{pattern(me.rank, int(m), i)};
      me.transport.send(peer, kData, payload);
    }
  }
  me.wait(
      [&] {
        std::lock_guard lock(mutex);
        return received == me.size * int(sizes.size());
      },
      "all messages");
  CHECK(wrong == 0);
  me.barrier(2);
}

void one_sided(Rank& me) {
  const size_t kBytes = 4096;
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(4096, kBytes));
  std::memset(memory, 0, kBytes);
  auto region = me.transport.register_region(memory, kBytes);
  me.publish(region->descriptor());
  int right = (me.rank + 1) % me.size, left = (me.rank - 1 + me.size) % me.size;

  // write: 64 bytes of (rank + 1) into the right neighbour's slot for us.
  std::vector<uint8_t> out(64, static_cast<uint8_t>(me.rank + 1));
  me.transport.write(right, out.data(), out.size(), RemoteAddress{me.regions[right], 64u * me.rank});
  me.transport.flush(right, Deadline::after(30));
  me.barrier(10);
  bool landed = true;
  for (int i = 0; i < 64; ++i) landed &= memory[64 * left + i] == std::byte(left + 1);
  CHECK(landed);

  // read back what we wrote.
  std::vector<uint8_t> back(64, 0);
  me.transport.read(right, back.data(), back.size(), RemoteAddress{me.regions[right], 64u * me.rank});
  me.transport.flush(right, Deadline::after(30));
  CHECK(back == out);

  me.barrier(12);
  region.reset();
  std::free(memory);
}

void progress_engine_runs_handlers(Rank& me) {
  // Rank 0 makes no call into the transport while rank 1's message arrives: only the progress
  // engine can run the handler.
  std::atomic<bool> handled{false};
  me.transport.set_handler(kData, [&](int, Bytes&&) { handled = true; });
  me.barrier(30);
  if (me.rank == 0) {
    rma::ProgressEngine engine(me.transport, 1000);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!handled && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHECK(handled.load());
  } else if (me.rank == 1) {
    me.transport.send(0, kData, std::span<const std::byte>{});
  }
  me.barrier(31);
}

void deadlines_and_dead_peers(Rank& me) {
  auto never = [] { return false; };
  auto what = [] { return std::string("a test wait"); };
  CHECK_THROWS(rma::TimeoutError, "RMA_TIMEOUT", me.transport.wait_until(never, Deadline::after(0.2), {}, what));
  if (me.size > 1) {
    int right = (me.rank + 1) % me.size;
    me.transport.peers().mark_dead(right);
    CHECK_THROWS(rma::PeerError, "rank " + std::to_string(right) + " died",
                 me.transport.wait_until(never, Deadline::after(10), std::span(&right, 1), what));
  }
}

// Messages from rank 0 to rank 1 (a job of two) carry [index, count]; rank 1 records them.
struct Received {
  Transport& transport;
  std::mutex mutex;
  std::vector<std::pair<int32_t, int32_t>> messages;
  explicit Received(Rank& me) : transport(me.transport) {
    transport.set_handler(kData, [this](int, Bytes&& payload) {
      std::pair<int32_t, int32_t> message;
      std::memcpy(&message, payload.data(), sizeof message);
      std::lock_guard lock(mutex);
      messages.push_back(message);
    });
  }
  // A message that comes later (a failing case's) must not find this gone.
  ~Received() {
    transport.set_handler(kData, [](int, Bytes&&) {});
  }
  size_t count() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
};

Bytes numbered(int32_t index, int32_t count, size_t bytes) {
  Bytes payload(std::max(bytes, sizeof(int32_t) * 2));
  std::memcpy(payload.data(), &index, sizeof index);
  std::memcpy(payload.data() + sizeof index, &count, sizeof count);
  return payload;
}

// Flags of the two cases below.
constexpr int kReceiverIdle = 0, kReceiverDrains = 1, kReceiverDone = 2;

void failed_send_leaves_no_gap(Rank& me) {
  // Rank 1 makes no progress while rank 0 sends to it until a send finds no room before its
  // deadline. That send took no sequence number: the next message arrives once rank 1 drains,
  // right after the ones before it (a gap in the numbers would hold it back for ever).
  Received received(me);
  constexpr int32_t kAfter = -1;
  me.barrier(40);  // both ways connected (a first message needs the peer's progress)
  if (me.rank == 0) {
    CHECK(flags().wait(kReceiverIdle, 60));
    int32_t sent = 0;
    bool refused = false;
    while (!refused && sent < 100000) {
      try {
        me.transport.send(1, kData, numbered(sent, 0, 48 * 1024));
        ++sent;
      } catch (const rma::TimeoutError&) {
        refused = true;
      }
    }
    CHECK(refused);
    CHECK(sent > 0);
    flags().raise(kReceiverDrains);
    // Rank 1 has much to take in first (the shm and tcp providers: a thousand fragments or
    // more) and this deadline is short: a refusal here leaves no gap either, so try again.
    bool delivered = false;
    for (int attempt = 0; !delivered && attempt < 15; ++attempt) {
      try {
        me.transport.send(1, kData, numbered(kAfter, sent, 0));
        delivered = true;
      } catch (const rma::TimeoutError&) {
      }
    }
    CHECK(delivered);
  } else if (me.rank == 1) {
    flags().raise(kReceiverIdle);
    CHECK(flags().wait(kReceiverDrains, 30));
    try {
      me.wait(
          [&] {
            std::lock_guard lock(received.mutex);
            return !received.messages.empty() && received.messages.back().first == kAfter;
          },
          "the message after the refused one", 20);
    } catch (const rma::TimeoutError& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
    std::lock_guard lock(received.mutex);
    auto& messages = received.messages;
    CHECK(!messages.empty() && messages.back().first == kAfter);
    if (!messages.empty() && messages.back().first == kAfter) {
      int32_t sent = messages.back().second;
      bool in_order = static_cast<int32_t>(messages.size()) == sent + 1;
      for (int32_t i = 0; in_order && i < sent; ++i) in_order = messages[i].first == i;
      CHECK(in_order);
    }
  }
}

void failed_message_breaks_the_route(Rank& me) {
  // Through rank 1's inbox (kSlots fragments from each source), which rank 1 does not drain:
  // a message of 4 fragments finds room for 2 only, and fails at its deadline with half of it
  // in the inbox. Rank 1 can never complete it, so it would hold back every later message:
  // rank 0's next send says so (PeerError) instead of queueing behind it.
  Received received(me);
  constexpr size_t kSmall = rma::ShmInbox::kSlots - 2;
  me.barrier(50);  // rank 1 has taken everything rank 0 sent until now
  if (me.rank == 0) {
    CHECK(flags().wait(kReceiverIdle, 60));
    for (size_t i = 0; i < kSmall; ++i) me.transport.send(1, kData, numbered(static_cast<int32_t>(i), 0, 0));
    CHECK_THROWS(rma::TimeoutError, "inbox stayed full",
                 me.transport.send(1, kData, numbered(-1, 0, 3 * rma::kFragmentPayload + 1)));
    CHECK_THROWS(rma::PeerError, "failed after part of it had left", me.transport.send(1, kData, numbered(-2, 0, 0)));
    flags().raise(kReceiverDrains);
    CHECK(flags().wait(kReceiverDone, 60));
  } else if (me.rank == 1) {
    flags().raise(kReceiverIdle);
    CHECK(flags().wait(kReceiverDrains, 30));
    me.wait([&] { return received.count() >= kSmall; }, "the messages before the broken one");
    // (what arrives meanwhile would be a wrongly completed message, or one sent after it)
    CHECK_THROWS(rma::TimeoutError, "nothing more", me.wait([] { return false; }, "nothing more", 0.3));
    std::lock_guard lock(received.mutex);
    CHECK(received.messages.size() == kSmall);
    flags().raise(kReceiverDone);
  }
}

// Endpoint names (FabricAddress::endpoint) of the job's ranks, by rank.
std::vector<Bytes> endpoint_names(const std::vector<Bytes>& addresses) {
  std::vector<Bytes> names;
  for (const Bytes& address : addresses) {
    names.push_back(rma::FabricAddress::decode(address, static_cast<int>(names.size())).endpoint);
  }
  return names;
}

void names_of_different_lengths(Rank& me) {
  // Every rank's endpoint name has a length of its own; each reaches every other all the same
  // (messages through the fabric go through the address vector, and so do one-sided operations).
  std::set<size_t> lengths;
  for (const Bytes& name : endpoint_names(me.addresses)) lengths.insert(name.size());
  CHECK(lengths.size() == me.addresses.size());
  active_messages(me);
  one_sided(me);
}
}  // namespace

int main() {
  flags();  // mapped before the first fork, so that every rank shares it
  test::run("handles keep their parents alive", [] {
    auto info = rma::fabric::get_info(rma::FabricEndpoint::hints("shm"), nullptr, 0);
    std::optional<rma::fabric::Fabric> fabric(std::in_place, info.get());
    rma::fabric::Domain domain(*fabric, info.get());
    fabric.reset();  // the domain holds the fabric open; ASan would see a use after close
    rma::fabric::CompletionQueue queue(domain, 16);
    fi_cq_data_entry entry;
    fi_cq_err_entry error;
    CHECK(queue.read(&entry, 1, &error) == 0);
    std::vector<std::byte> memory(4096);
    rma::fabric::MemoryRegion region(domain, memory.data(), memory.size(), FI_REMOTE_WRITE, 1, nullptr);
    CHECK(region.key() != FI_KEY_NOTAVAIL);
  });
  test::run("a completion queue that signals a wait set sleeps on it, and closes before it", [] {
    // (net, libfabric 1.17's own RDM endpoint over TCP: its fi_trywait is a stub, handles.hpp.)
    auto info = rma::FabricEndpoint::find("net", "127.0.0.1");
    std::optional<rma::fabric::Fabric> fabric(std::in_place, info.get());
    rma::fabric::Domain domain(*fabric, info.get());
    rma::fabric::CompletionQueue queue(domain, 16, rma::fabric::CompletionWait::wait_set, &*fabric);
    CHECK(queue.wait_fd() >= 0);
    CHECK(queue.try_wait(*fabric));  // nothing pending: the set's own check says so
    fabric.reset();                  // the queue holds its wait set, and the set its fabric
    fi_cq_data_entry entry;
    fi_cq_err_entry error;
    CHECK(queue.read(&entry, 1, &error) == 0);
  });
  test::run("an unknown provider is a FabricError naming the call", [] {
    rma::FabricOptions options;
    options.provider = "no-such-provider";
    CHECK_THROWS(rma::fabric::FabricError, "fi_getinfo", rma::open_fabric_transport(options));
    CHECK_THROWS(rma::fabric::FabricError, "no-such-provider", rma::open_fabric_transport(options));
  });
  for (const std::string provider : {"shm", "tcp;ofi_rxm", "net"}) {
    for (bool inboxes : {true, false}) {
      for (int size : {1, 2, 3}) {
        test::run(provider + (inboxes ? ", inboxes" : ", fabric messages") + " x" + std::to_string(size), [&] {
          run_job(provider, inboxes, size, [](Rank& me) {
            CHECK(me.transport.incoming_bell() != nullptr);  // every peer rings it: one host
            active_messages(me);
            one_sided(me);
            if (me.size >= 2) progress_engine_runs_handlers(me);
            deadlines_and_dead_peers(me);
          });
        });
      }
    }
  }
  for (const std::string provider : {"shm", "tcp;ofi_rxm"}) {
    // Rank 1 pretends to run elsewhere: its messages go through the fabric, the others'
    // between themselves through their inboxes, and nobody may sleep on a bell rank 1 cannot ring.
    test::run(provider + ", pretended hosts a b a", [&] {
      run_job(
          provider, true, 3,
          [](Rank& me) {
            CHECK(me.transport.incoming_bell() == nullptr);
            active_messages(me);
            one_sided(me);
            progress_engine_runs_handlers(me);
          },
          JobSetup{{"a", "b", "a"}});
    });
  }
  for (const std::string provider : {"shm", "tcp;ofi_rxm"}) {
    for (bool inboxes : {true, false}) {
      test::run(provider + (inboxes ? ", inboxes" : ", fabric messages") + ": a send refused until its deadline", [&] {
        JobSetup setup;
        setup.timeout_seconds = 2;
        run_job(provider, inboxes, 2, failed_send_leaves_no_gap, setup);
      });
    }
  }
  // Endpoint names of different lengths, really: shm names are the node each rank binds to
  // ("fi_shm://<node>:<uid>:<n>"), so nodes of different lengths make them differ.
  for (bool inboxes : {false, true}) {
    test::run(std::string("shm, names of different lengths, ") + (inboxes ? "inboxes" : "fabric messages"), [&] {
      JobSetup setup;
      setup.node = [](int r) { return std::to_string(getpid()) + "-rank" + std::string(1 + 37 * r, 'n'); };
      run_job("shm", inboxes, 3, names_of_different_lengths, setup);
    });
  }
  test::run("shm, a name that counts no terminator", [] {
    // The provider reads a shm name up to its NUL (fi_av_insert takes no length): rank 1
    // publishes its name without it. Read from our bytes alone, it is the same name.
    JobSetup setup;
    setup.publish = [](int r, Bytes address) {
      if (r != 1) return address;
      rma::FabricAddress parts = rma::FabricAddress::decode(address, r);
      CHECK(parts.endpoint.back() == std::byte{0});
      parts.endpoint.pop_back();
      return parts.encode();
    };
    run_job(
        "shm", false, 2,
        [](Rank& me) {
          CHECK(endpoint_names(me.addresses)[1].back() != std::byte{0});
          active_messages(me);
          one_sided(me);
        },
        setup);
  });
  test::run("tcp;ofi_rxm over IPv6 loopback", [] {
    JobSetup setup;
    setup.node = [](int) { return std::string("::1"); };
    run_job(
        "tcp;ofi_rxm", false, 2,
        [](Rank& me) {
          for (const Bytes& name : endpoint_names(me.addresses)) CHECK(name.size() == sizeof(sockaddr_in6));
          active_messages(me);
          one_sided(me);
        },
        setup);
  });
  test::run("tcp;ofi_rxm, IPv4 and IPv6 in one job", [] {
    // One address vector takes one address family in libfabric 1.17 (the util AV sizes its
    // entries by the first name it takes, or by the domain's format, and refuses longer ones):
    // every rank says which name it could not take, at connect, rather than crash or hang.
    JobSetup setup;
    setup.node = [](int r) { return std::string(r == 1 ? "::1" : "127.0.0.1"); };
    setup.connect_error = "fi_av_insert: Invalid argument (22): endpoint of rank 1";
    run_job("tcp;ofi_rxm", false, 2, [](Rank&) {}, setup);
  });
  test::run("inboxes: a message that fails partway", [] {
    JobSetup setup;
    setup.timeout_seconds = 1;
    setup.closing_barrier = false;
    run_job("shm", true, 2, failed_message_breaks_the_route, setup);
  });
  return test::finish();
}
