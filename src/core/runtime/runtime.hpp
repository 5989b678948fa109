// One rank's runtime: the transport, the progress engine, the peers' liveness, the job's
// topology and the queue of arrived point-to-point messages. The bootstrap (rendezvous store)
// lives above it, in Python: it publishes address(), and hands every rank's address and host
// identity to connect().
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "base/topology.hpp"
#include "base/transport.hpp"
#include "messages/message_matcher.hpp"
#include "runtime/progress_engine.hpp"

namespace rma {

class Communicator;

// How the ranks of one host reach each other (RMA_TRANSPORT). python/rma/_job/settings.py reads
// and judges the variable, and the bootstrap hands the core the setting as a member of
// rma._core.TransportSetting (made from kTransportSettingNames): the core parses no text.
enum class TransportSetting : uint8_t {
  Auto,          // shared memory between the ranks of a host, libfabric between hosts
  SharedMemory,  // the same; the window layer refuses a window whose ranks span hosts
  Libfabric,     // everything through libfabric, messages between the ranks of a host too
};
// Each setting's name in RMA_TRANSPORT, in the order of the enum.
inline constexpr std::array<const char*, 3> kTransportSettingNames = {"auto", "shared-memory", "libfabric"};
inline const char* to_string(TransportSetting setting) noexcept {
  return kTransportSettingNames[static_cast<size_t>(setting)];
}

struct RuntimeOptions {
  int rank = 0;
  int size = 1;
  // Open a libfabric endpoint. Without one (every rank on this host, messages through the
  // inboxes), libfabric is never loaded, and provider and node are unused (FabricOptions::fabric).
  bool fabric = true;
  std::string provider = "shm";     // libfabric provider name
  std::string node;                 // bind address for network providers ("" = default)
  double timeout_seconds = 300;     // deadline of every blocking call (RMA_TIMEOUT); <= 0: none
  int progress_sleep_us = 1000;     // longest sleep of the idle progress engine
  double hang_report_seconds = 10;  // a blocked call says once on stderr that it still waits (RMA_HANG_REPORT)
  TransportSetting transport = TransportSetting::Auto;
  // The job spans hosts and idle ranks sleep on the fabric's wait fd (RMA_FABRIC_SLEEP) rather
  // than polling it for the other hosts' traffic (FabricOptions::fabric_sleep).
  bool fabric_sleep = false;
  // Take messages across hosts through a provider that cannot tell where a message came from
  // (no FI_SOURCE): then anyone who reaches the network can speak as a rank (RMA_TRUST_NETWORK).
  bool trust_network = false;
  // Strict memory registration, for tests (RMA_MR_STRICT; FabricOptions::mr_strict).
  bool mr_strict = false;
};

// Active-message handler ids (Transport::set_handler). Ids below kFirstLayerMessageId are the
// runtime's own; the layers above take theirs from kFirstLayerMessageId up (the windows:
// window/window_messages.hpp), each layer a range of its own. Keep them below 256: the
// handler table is indexed by id.
enum ActiveMessageId : uint16_t {
  kCommunicatorMessage = 1,  // a point-to-point message of a communicator (the collectives')
};
inline constexpr uint16_t kFirstLayerMessageId = 10;

class Runtime : public std::enable_shared_from_this<Runtime> {
 public:
  // Opens the endpoint; throws UsageError when rank is outside [0, size), FabricError when
  // the provider cannot be used.
  explicit Runtime(const RuntimeOptions& options);
  ~Runtime();

  int rank() const noexcept { return options_.rank; }
  int size() const noexcept { return options_.size; }
  const RuntimeOptions& options() const noexcept { return options_; }
  // The libfabric provider opened; "" without one, and once finalized.
  std::string provider() const { return transport_ ? transport_->provider() : std::string(); }
  // What peers need to reach this rank. Throws RmaError once finalized.
  std::vector<std::byte> address() const;

  // Makes every rank reachable and starts the progress engine. addresses[r] is rank r's
  // address(), hosts[r] its host identity (ranks with equal identities share a host). Call
  // once. Throws UsageError when either list does not have size() entries, RmaError when
  // called twice or after finalize().
  void connect(const std::vector<std::vector<std::byte>>& addresses, const std::vector<std::string>& hosts);
  // Which ranks share a host (see topology.hpp). Throws RmaError before connect().
  const Topology& topology() const;
  // The communicator of all ranks. Throws RmaError unless active().
  std::shared_ptr<Communicator> world();

  // PeerStatus::mark_dead: rank -1 is the whole job; unreachable says it went silent.
  void mark_peer_dead(int rank, bool unreachable = false) noexcept;
  // Ends this rank's part in the job. collective=true: a barrier with everyone and a drain of
  // outgoing messages first (best effort: errors are swallowed, a dead peer does not block).
  // Then stops progress and closes the endpoint. Idempotent.
  void finalize(bool collective);
  bool active() const noexcept { return active_.load(std::memory_order_acquire); }
  // Throws RmaError naming `call` when finalize() has been called.
  void require_active(const char* call) const;

  // Throws RmaError once finalized.
  Transport& transport();
  MessageMatcher& matcher() noexcept { return matcher_; }
  Deadline deadline() const { return Deadline::after(options_.timeout_seconds); }
  // Context ids of communicators: a split agrees on the largest next_context() of its members.
  uint32_t next_context() const noexcept { return next_context_.load(); }
  void context_taken(uint32_t context) noexcept;
  // A context for a communicator of this rank alone, which needs no agreement.
  uint32_t take_context() noexcept { return next_context_.fetch_add(1); }

  // A per-runtime service of a layer above (the windows' message handlers, for instance),
  // made on first use with Service(Runtime&) and destroyed before the transport closes.
  template <class Service>
  Service& service() {
    std::lock_guard lock(services_mutex_);
    auto& slot = services_[std::type_index(typeid(Service))];
    if (!slot) slot = std::make_shared<Service>(*this);
    return *static_cast<Service*>(slot.get());
  }

 private:
  void require_active_or_unconnected() const;
  RuntimeOptions options_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<ProgressEngine> progress_;
  Topology topology_;  // set once by connect(), before active_
  MessageMatcher matcher_;
  std::atomic<bool> active_{false};
  std::atomic<uint32_t> next_context_{1};  // 0 is the world
  std::mutex services_mutex_;
  std::map<std::type_index, std::shared_ptr<void>> services_;
};

}  // namespace rma
