// Setting a window up and taking it down: what every member publishes, and which route and
// which synchronization follow from it.
#include "window/window.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <numeric>

#include "base/errors.hpp"
#include "runtime/runtime.hpp"
#include "window/route_fabric.hpp"
#include "window/route_mapped.hpp"
#include "window/shared_control.hpp"
#include "window/sync_strategy.hpp"

namespace rma {

namespace {

struct Published {
  uint32_t next_id{};
  RegionDescriptor region{};
  char segment[64]{};  // a shared window's segment name, else empty
  bool lasting{};      // that name outlives the creation: peers keep it mapped (SegmentPool)
  char control[64]{};  // a same-host window's control block name, else empty
  // Whether this rank could make its part (CreationFailure::Kind); if not, the note's place
  // carries why, and the rest means nothing.
  uint8_t failed{};
  int32_t pid{};       // this process, for process_vm_* (a same-host create() window)
  uint64_t address{};  // this rank's memory in it
};
}  // namespace

// ---- creation and teardown ----

std::shared_ptr<Window> Window::create(const Communicator& comm, void* base, uint64_t bytes, const std::string& label,
                                       bool near, const std::string& call, const std::string& note) {
  return establish(comm, base, bytes, label, call, false, note, nullptr, near);
}

std::shared_ptr<Window> Window::create_dynamic(const Communicator& comm, const std::string& label,
                                               const std::string& call, const std::string& note) {
  return establish(comm, nullptr, 0, label, call, true, note);
}

std::shared_ptr<Window> Window::create_shared(const Communicator& comm, uint64_t bytes, bool pooled,
                                              const std::string& label, const std::string& call,
                                              const std::string& note) {
  Runtime& runtime = comm.runtime();
  runtime.require_active(call.c_str());
  // The memory is made here, not by the caller, so that a rank that cannot have it still takes
  // part in the creation's exchange, and tells the others there.
  std::shared_ptr<SharedSegment> segment;
  CreationFailure failure;
  try {
    segment = pooled ? runtime.service<WindowService>().segments().take(bytes) : SharedSegment::create(bytes);
  } catch (const std::exception&) {
    failure = CreationFailure(std::current_exception());
  }
  return establish(comm, segment ? segment->data() : nullptr, bytes, label, call, false, note, segment, true,
                   std::move(failure));
}

namespace {
std::atomic<uint64_t> open_count{0};  // Window::open_windows()
}  // namespace

uint64_t Window::open_windows() noexcept { return open_count.load(std::memory_order_relaxed); }

std::shared_ptr<SharedSegment> Window::segment(int rank) const {
  return rank >= 0 && rank < static_cast<int>(segments_.size()) ? segments_[rank] : nullptr;
}

const char* Window::reach_name(int rank) const {
  check_rank("transport_to", rank, false);
  bool fabric = routes_[rank] == fabric_.get() && fabric_->one_sided();
  return fabric ? "libfabric" : "shared-memory";
}

std::shared_ptr<Window> Window::establish(const Communicator& comm, void* base, uint64_t bytes,
                                          const std::string& label, const std::string& call, bool dynamic,
                                          const std::string& note, std::shared_ptr<SharedSegment> segment, bool near,
                                          CreationFailure failure) {
  Runtime& runtime = comm.runtime();
  runtime.require_active(call.c_str());
  CallName named = [&call] { return call; };  // (the collectives below run inside this call)
  WindowService& service = runtime.service<WindowService>();
  std::unique_ptr<LocalRegion> registration;
  Published mine{.next_id = service.next_id(),
                 .lasting = segment && segment->lasting(),
                 .pid = static_cast<int32_t>(getpid()),
                 .address = reinterpret_cast<uint64_t>(base)};
  // Which ranks this one reaches without the fabric: those of its host, unless every peer goes
  // through the fabric (RMA_TRANSPORT=libfabric, a dynamic window). A shared segment is mapped
  // by the ranks of its host whatever the setting (allocate_shared).
  near = (near || segment != nullptr) && !dynamic;
  const Topology& topology = runtime.topology();
  std::vector<char> local(comm.size(), 0);
  bool all_local = true;
  for (int r = 0; r < comm.size(); ++r) {
    local[r] = near && topology.same_host(comm.members()[r], runtime.rank());
    all_local = all_local && local[r];
  }
  // Control blocks, among the ranks of each host: the whole synchronization when every rank is
  // on this host (SharedSync), else only the accumulate locks of a shared window.
  bool shared_sync = near && all_local;
  bool controlled = shared_sync || segment != nullptr;
  std::shared_ptr<SharedSegment> control_block;
  // This rank's part (its memory the caller made): a failure travels in the exchange below.
  if (!failure) {
    try {
      if (segment) std::strncpy(mine.segment, segment->name().c_str(), sizeof mine.segment - 1);
      if (controlled) {
        control_block = service.controls().take(comm.size());
        std::strncpy(mine.control, control_block->name().c_str(), sizeof mine.control - 1);
      }
      if (bytes > 0) {
        registration = runtime.transport().register_region(base, bytes);
        mine.region = registration->descriptor();
      }
    } catch (const std::exception&) {
      failure = CreationFailure(std::current_exception());
    }
  }
  mine.failed = failure.kind();
  // A communicator of its own, so the window's fences never meet the user's messages; the
  // split carries what each rank publishes, and its note (one collective, not three), or why
  // it could not make its part. Ordered as comm.
  const std::string& told = failure ? failure.text() : note;
  Bytes published(sizeof mine + told.size());
  std::memcpy(published.data(), &mine, sizeof mine);
  std::memcpy(published.data() + sizeof mine, told.data(), told.size());
  std::vector<Bytes> entries;
  std::shared_ptr<Communicator> own = const_cast<Communicator&>(comm).split(0, comm.rank(), named, published, entries);
  // Every rank raises when one could not make its part, before any maps a peer's segment.
  std::string creating = call + " on rank " + std::to_string(comm.rank()) + " (" + label + ")";
  auto failed_in = [&entries](size_t r) {
    Published theirs;
    std::memcpy(&theirs, entries[r].data(), sizeof theirs);
    return static_cast<CreationFailure::Kind>(theirs.failed);
  };
  size_t failed_peer = 0;
  while (failed_peer < entries.size() && failed_in(failed_peer) == CreationFailure::kNone) ++failed_peer;
  if (failure || failed_peer < entries.size()) {
    // Nobody saw this rank's control block or memory: both may serve the next window.
    if (control_block) service.controls().give_back(std::move(control_block), comm.size());
    if (segment) segment->mark_reusable();
    if (failure) failure.raise(creating, open_windows());
    const Bytes& entry = entries[failed_peer];
    CreationFailure::raise_for_peer(
        failed_in(failed_peer),
        std::string(reinterpret_cast<const char*>(entry.data()) + sizeof(Published), entry.size() - sizeof(Published)),
        static_cast<int>(failed_peer), creating);
  }
  std::vector<std::string> notes;
  uint32_t id = 0;
  std::vector<RegionDescriptor> peers;
  std::vector<std::shared_ptr<SharedSegment>> segments, control_blocks;
  std::vector<int> pids;
  std::vector<uint64_t> addresses;
  bool names_last = segment != nullptr;  // every member's segment name outlives this call
  try {
    for (size_t r = 0; r < entries.size(); ++r) {
      Published theirs;
      std::memcpy(&theirs, entries[r].data(), sizeof theirs);
      notes.emplace_back(reinterpret_cast<const char*>(entries[r].data()) + sizeof theirs,
                         entries[r].size() - sizeof theirs);
      id = std::max(id, theirs.next_id);
      peers.push_back(theirs.region);
      if (segment && theirs.segment[0] == 0) {
        throw RmaError("rma: shared window creation: rank " + std::to_string(r) + " did not make a shared segment");
      }
      names_last = names_last && theirs.lasting;
      bool mine_now = static_cast<int>(r) == own->rank();
      // Another host's names mean nothing here (its own /dev/shm): null for its ranks.
      if (segment) {
        segments.push_back(mine_now ? segment
                           : local[r]
                               ? service.segments().open_peer(theirs.segment, theirs.region.length, theirs.lasting)
                               : nullptr);
      }
      if (controlled) {
        bool here = local[r];
        control_blocks.push_back(mine_now ? control_block
                                 : here
                                     ? service.controls().open_peer(theirs.control, SharedControl::bytes(own->size()))
                                     : nullptr);
      }
      pids.push_back(theirs.pid);
      addresses.push_back(theirs.address);
    }
  } catch (const std::exception&) {
    // A peer's segment or block that cannot be mapped here (a limit met) raises on this rank
    // only: the others may have their window already. Its error names the limit all the same.
    CreationFailure(std::current_exception()).raise(creating, open_windows());
  }
  service.id_taken(id);
  std::string name = "window " + std::to_string(id) + (label.empty() ? "" : " (" + label + ")");
  std::shared_ptr<Window> window(new Window(own, service, id, base, bytes, name));
  window->registration_ = std::move(registration);
  window->peers_ = std::move(peers);
  window->segments_ = segments;
  window->notes_ = std::move(notes);
  window->control_block_ = control_block;
  window->dynamic_ = dynamic;
  Where where = window->namer();
  // Synchronization: shared control blocks when every rank is on this host, else messages
  // (which reach this host's ranks through their inboxes, the others through the fabric).
  SharedControl* control = nullptr;
  if (shared_sync) {
    auto shared = std::make_unique<SharedSync>(own, std::move(control_blocks), name, where);
    control = &shared->control();
    window->sync_ = std::move(shared);
  } else {
    auto messages = std::make_unique<MessageSync>(own, id, where);
    window->message_sync_ = messages.get();
    window->sync_ = std::move(messages);
    if (controlled) {
      window->host_control_ =
          std::make_unique<SharedControl>(std::move(control_blocks), own->rank(), watch_dead_holders(own.get(), name));
      control = window->host_control_.get();
    }
  }
  // Route, per target: mapped segments or another process's memory on this host, the fabric
  // for the other hosts' ranks (and for every rank of a dynamic or RMA_TRANSPORT=libfabric
  // window).
  window->fabric_ = std::make_unique<FabricRoute>(own, id, window->peers_, dynamic, where);
  window->fabric_->grants_to(window->message_sync_);  // (a call's reply may grant a lock it carried)
  if (segment) {
    window->same_host_route_ = std::make_unique<MappedRoute>(std::move(segments), *control);
    window->accumulate_control_ = control;
  } else if (near) {
    window->same_host_route_ =
        std::make_unique<VmRoute>(std::move(pids), std::move(addresses), window->routes_, *window->fabric_, where);
  }
  for (int r = 0; r < own->size(); ++r) {
    window->routes_.push_back(local[r] ? window->same_host_route_.get() : static_cast<Route*>(window->fabric_.get()));
  }
  service.add(id, window);
  // Nobody may send to this window before every member can route messages to it, and every
  // member has mapped every segment: the names can go.
  // (The control blocks keep their names, as do pooled segments: ControlPool, SegmentPool.)
  // A window of shared segments on one host sends no messages (its synchronization is in the
  // control blocks, its data in the segments), and with lasting names it has nothing to wait
  // for: every member made and zeroed its memory and reset its control block before the
  // exchange above, so a peer may use them as soon as it has the exchange's answer.
  if (shared_sync && names_last) return window;
  auto unlink_names = [&] {
    if (segment && !segment->lasting()) segment->unlink();
  };
  try {
    own->barrier(named);
  } catch (...) {
    // A rank died meanwhile (PeerError): the window stays registered, so its segments live
    // on, but their names must not outlive the call, or they stay in /dev/shm after this
    // process.
    unlink_names();
    throw;
  }
  unlink_names();
  return window;
}

Window::Window(std::shared_ptr<Communicator> comm, WindowService& service, uint32_t id, void* base, uint64_t bytes,
               std::string label)
    : comm_(std::move(comm)),
      peer_status_(&comm_->runtime().transport().peers()),
      service_(service),
      id_(id),
      base_(base),
      bytes_(bytes),
      all_ranks_(comm_->size()),
      epochs_(comm_->rank(), comm_->size(), std::move(label)) {
  std::iota(all_ranks_.begin(), all_ranks_.end(), 0);
  ++open_count;
}

Window::~Window() {
  if (!freed()) {
    --open_count;
    // A window dropped without free() (its rank is ending) still stops taking messages.
    if (comm_->runtime().active()) service_.remove(id_);
  }
}

Where Window::namer() const {
  // The parts name calls as the epochs do; they live no longer than the window.
  return [this](const char* call, int target) { return epochs_.where(call, target); };
}

uint64_t Window::target_bytes(int rank) const {
  if (rank < 0 || rank >= size()) {
    throw UsageError("rma: rank " + std::to_string(rank) + " is not in " + label() + " (size " +
                     std::to_string(size()) + ")");
  }
  return peers_[rank].length;
}

void Window::free() {
  epochs_.before_free();
  bool fence_was_open = epochs_.fence_open();
  // Nobody frees while a peer may still address this memory.
  try {
    comm_->barrier([this] { return epochs_.where("free", -1); });
  } catch (...) {
    // (A rank died meanwhile.) The ranks that got through may have given their control blocks
    // to their next window already: this rank must not use this one any more, freed or not.
    service_.remove(id_);
    epochs_.freed_now();
    trace_fence_closed(fence_was_open);
    --open_count;
    throw;
  }
  service_.remove(id_);
  // Every rank is done with this window: its control block may serve the next one, and its
  // memory too, once nothing here holds it any more (SegmentPool).
  if (control_block_) service_.controls().give_back(std::move(control_block_), size());
  if (auto mine = segment(rank())) mine->mark_reusable();
  registration_.reset();
  epochs_.freed_now();
  trace_fence_closed(fence_was_open);
  --open_count;
}

void Window::attach(void* base, uint64_t bytes) {
  if (!dynamic_)
    throw UsageError("rma: win.attach on rank " + std::to_string(rank()) + ": " + label() + " is not dynamic");
  std::lock_guard lock(attachments_mutex_);
  auto address = reinterpret_cast<uint64_t>(base);
  for (const auto& [start, length] : attachments_) {
    if (address < start + length && start < address + bytes) {
      throw UsageError("rma: win.attach on rank " + std::to_string(rank()) +
                       ": the memory overlaps memory already attached to " + label());
    }
  }
  attachments_.emplace_back(address, bytes);
}

void Window::detach(void* base) {
  std::lock_guard lock(attachments_mutex_);
  auto address = reinterpret_cast<uint64_t>(base);
  for (auto it = attachments_.begin(); it != attachments_.end(); ++it) {
    if (it->first == address) {
      attachments_.erase(it);
      return;
    }
  }
  throw UsageError("rma: win.detach on rank " + std::to_string(rank()) + ": that memory is not attached to " + label());
}

}  // namespace rma
