#include "runtime/runtime.hpp"

#include "base/errors.hpp"
#include "base/waiting.hpp"
#include "fabric/fabric_transport.hpp"
#include "runtime/communicator.hpp"

namespace rma {

Runtime::Runtime(const RuntimeOptions& options) : options_(options) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    throw UsageError("rma: rank " + std::to_string(options.rank) + " is outside a job of size " +
                     std::to_string(options.size));
  }
  FabricOptions fabric;
  fabric.fabric = options.fabric;
  fabric.provider = options.provider;
  fabric.node = options.node;
  fabric.rank = options.rank;
  fabric.size = options.size;
  fabric.timeout_seconds = options.timeout_seconds;
  fabric.inbox_messages = options.transport != TransportSetting::Libfabric;
  fabric.fabric_sleep = options.fabric_sleep;
  fabric.trust_network = options.trust_network;
  fabric.mr_strict = options.mr_strict;
  transport_ = open_fabric_transport(fabric);
  transport_->report_hangs_after(options.hang_report_seconds);
  // Communicator messages (point_to_point.cpp).
  transport_->set_handler(kCommunicatorMessage, [this](int source, std::vector<std::byte>&& payload) {
    deliver_communicator_message(*this, source, std::move(payload));
  });
}

Runtime::~Runtime() { finalize(false); }

std::vector<std::byte> Runtime::address() const {
  require_active_or_unconnected();
  return transport_->address();
}

void Runtime::require_active_or_unconnected() const {
  if (!transport_) throw RmaError("rma: the runtime has been finalized");
}

void Runtime::connect(const std::vector<std::vector<std::byte>>& addresses, const std::vector<std::string>& hosts) {
  require_active_or_unconnected();
  if (active()) throw RmaError("rma: the runtime is already connected");
  if (addresses.size() != static_cast<size_t>(size()) || hosts.size() != static_cast<size_t>(size())) {
    throw UsageError("rma: connect needs " + std::to_string(size()) + " addresses and host identities, got " +
                     std::to_string(addresses.size()) + " and " + std::to_string(hosts.size()));
  }
  Topology topology(hosts, rank());
  transport_->connect(addresses, topology);
  // (The host's processors, not this rank's affinity: a rank bound to one core, as mpirun
  // --bind-to core does, has one, and would count as crowded with any other rank.)
  if (topology.host_count() > 1 && static_cast<int>(topology.host_ranks().size()) >= host_processors())
    transport_->spin_before_yielding(std::chrono::microseconds(0));
  topology_ = std::move(topology);
  progress_ = std::make_unique<ProgressEngine>(*transport_, options_.progress_sleep_us);
  active_.store(true, std::memory_order_release);
}

const Topology& Runtime::topology() const {
  if (topology_.size() == 0) throw RmaError("rma: the job's topology is known once the runtime is connected");
  return topology_;
}

std::shared_ptr<Communicator> Runtime::world() {
  require_active("world");
  std::vector<int> everyone(size());
  for (int i = 0; i < size(); ++i) everyone[i] = i;
  return std::make_shared<Communicator>(shared_from_this(), 0, std::move(everyone), rank(), BarrierBoard::kWorldSlot);
}

void Runtime::mark_peer_dead(int rank, bool unreachable) noexcept {
  if (transport_) transport_->peers().mark_dead(rank, unreachable);
}

void Runtime::finalize(bool collective) {
  // The goodbye is a barrier of the world: with a rank known dead it can only end in PeerError,
  // and on the way it may never end at all: a rank killed inside libfabric's shm provider can
  // leave a spin lock of the shared region held, and a survivor's send then spins on it for
  // ever (seen in the peer-death matrix: a survivor stuck in pthread_spin_lock under this
  // barrier's first send). So a job with a dead rank skips it.
  if (active() && collective && !transport_->peers().any_dead()) {
    try {
      world()->barrier();
      transport_->flush_sends(deadline());
    } catch (const std::exception&) {
      // Finalizing must not fail: a peer that died or hangs only ends the goodbye early.
    }
  }
  active_.store(false, std::memory_order_release);
  progress_.reset();
  {
    std::lock_guard lock(services_mutex_);
    services_.clear();
  }
  transport_.reset();
}

void Runtime::require_active(const char* call) const {
  if (!active()) {
    throw RmaError(std::string("rma: ") + call +
                   ": the runtime is not running (rma.finalize() was called, or init() failed)");
  }
}

Transport& Runtime::transport() {
  require_active_or_unconnected();
  return *transport_;
}

void Runtime::context_taken(uint32_t context) noexcept {
  uint32_t next = next_context_.load();
  while (next <= context && !next_context_.compare_exchange_weak(next, context + 1)) {
  }
}

}  // namespace rma
