#include "window/window.hpp"

#include <algorithm>
#include <cstring>

#include "errors.hpp"
#include "runtime/wire.hpp"
#include "runtime/runtime.hpp"

namespace rma {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct Published {
  uint32_t next_id;
  RegionDescriptor region;
  char segment[64];  // a shared window's segment name, else empty
  char control[64];  // a same-host window's control block name, else empty
  int32_t pid;       // this process, for process_vm_* (a same-host create() window)
  uint64_t address;  // this rank's memory in it
};

// Applies visit(local pointer, window pointer, length) to each run of region in peer memory.
template <class Visit>
void each_run(const Region& region, std::byte* memory, Visit&& visit) {
  size_t cursor = 0;
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    visit(cursor, memory + offset, length);
    cursor += length;
  });
}
}  // namespace

// ---- creation and teardown ----

std::shared_ptr<Window> Window::create(const Communicator& comm, void* base, uint64_t bytes,
                                       const std::string& label, bool same_host) {
  return establish(comm, base, bytes, label, false, nullptr, same_host);
}

std::shared_ptr<Window> Window::create_dynamic(const Communicator& comm, const std::string& label) {
  return establish(comm, nullptr, 0, label, true);
}

std::shared_ptr<Window> Window::create_shared(const Communicator& comm,
                                              std::shared_ptr<SharedSegment> local,
                                              const std::string& label) {
  return establish(comm, local->data(), local->bytes(), label, false, local);
}

std::shared_ptr<SharedSegment> Window::segment(int rank) const {
  return rank >= 0 && rank < static_cast<int>(segments_.size()) ? segments_[rank] : nullptr;
}

std::byte* Window::direct(int target) const {
  return segments_.empty() ? nullptr : segments_[target]->data();
}

std::shared_ptr<Window> Window::establish(const Communicator& comm, void* base, uint64_t bytes,
                                          const std::string& label, bool dynamic,
                                          std::shared_ptr<SharedSegment> segment, bool same_host) {
  Runtime& runtime = comm.runtime();
  runtime.require_active("Window creation");
  // A communicator of its own, so the window's fences never meet the user's messages.
  std::shared_ptr<Communicator> own = const_cast<Communicator&>(comm).split(0, comm.rank());
  WindowService& service = runtime.service<WindowService>();
  std::unique_ptr<LocalRegion> registration;
  Published mine{service.next_id(), {}, {}, {}, static_cast<int32_t>(getpid()), reinterpret_cast<uint64_t>(base)};
  bool controlled = segment != nullptr || (same_host && !dynamic);
  std::shared_ptr<SharedSegment> control_block;
  if (segment) std::strncpy(mine.segment, segment->name().c_str(), sizeof mine.segment - 1);
  if (controlled) {
    control_block = SharedControl::create_block(own->size());
    std::strncpy(mine.control, control_block->name().c_str(), sizeof mine.control - 1);
  }
  if (bytes > 0) {
    registration = runtime.transport().register_region(base, bytes);
    mine.region = registration->descriptor();
  }
  auto entries = own->allgather(std::as_bytes(std::span(&mine, 1)));
  uint32_t id = 0;
  std::vector<RegionDescriptor> peers;
  std::vector<std::shared_ptr<SharedSegment>> segments, control_blocks;
  std::vector<int> pids;
  std::vector<uint64_t> addresses;
  for (size_t r = 0; r < entries.size(); ++r) {
    Published theirs;
    std::memcpy(&theirs, entries[r].data(), sizeof theirs);
    id = std::max(id, theirs.next_id);
    peers.push_back(theirs.region);
    if (segment && theirs.segment[0] == 0) {
      throw RmaError("rma: shared window creation: rank " + std::to_string(r) + " did not make a shared segment");
    }
    bool mine_now = static_cast<int>(r) == own->rank();
    if (segment) segments.push_back(mine_now ? segment : SharedSegment::open(theirs.segment, theirs.region.length));
    if (controlled) {
      control_blocks.push_back(mine_now ? control_block
                                        : SharedSegment::open(theirs.control, SharedControl::bytes(own->size())));
    }
    pids.push_back(theirs.pid);
    addresses.push_back(theirs.address);
  }
  service.id_taken(id);
  std::string name = "window " + std::to_string(id) + (label.empty() ? "" : " (" + label + ")");
  std::shared_ptr<Window> window(new Window(own, service, id, base, bytes, name));
  window->registration_ = std::move(registration);
  window->peers_ = std::move(peers);
  window->segments_ = std::move(segments);
  window->dynamic_ = dynamic;
  window->known_attachments_.resize(own->size());
  int members = own->size();
  window->in_access_group_.assign(members, 0);
  window->post_matched_.assign(members, 0);
  if (controlled) {
    Window* self = window.get();
    window->control_ = std::make_unique<SharedControl>(std::move(control_blocks), own->rank(),
                                                       [self](const char* what) { self->stalled(what); });
    window->posts_seen_ = window->control_->posts(own->rank());
    window->completes_seen_ = window->control_->completes(own->rank());
  } else {
    window->notice_counters_.reset(new std::atomic<uint64_t>[2 * members]);
    for (int r = 0; r < 2 * members; ++r) window->notice_counters_[r] = 0;
    window->posts_seen_ = window->notice_counters_.get();
    window->completes_seen_ = window->notice_counters_.get() + members;
    window->lock_queue_memory_.reset(new std::byte[LockQueue::bytes(members)]);
    window->lock_queue_ = LockQueue::make(window->lock_queue_memory_.get(), members);
  }
  window->posts_used_.assign(members, 0);
  window->completes_used_.assign(members, 0);
  window->held_.assign(members, 0);
  window->held_nocheck_.assign(members, 0);
  window->grant_.reset(new std::atomic<int>[members]);
  window->abandoned_.assign(members, 0);
  window->outstanding_to_.reset(new std::atomic<int64_t>[members]);
  for (int r = 0; r < members; ++r) {
    window->grant_[r] = 0;
    window->outstanding_to_[r] = 0;
  }
  service.add(id, window);
  // Nobody may send to this window before every member can route messages to it, and every
  // member has mapped every segment: the names can go.
  own->barrier();
  if (!segment && controlled) {
    window->pids_ = std::move(pids);
    window->remote_bases_ = std::move(addresses);
    window->vm_ok_.assign(members, 1);
  }
  if (segment) segment->unlink();
  if (control_block) control_block->unlink();
  return window;
}

Window::Window(std::shared_ptr<Communicator> comm, WindowService& service, uint32_t id, void* base,
               uint64_t bytes, std::string label)
    : comm_(std::move(comm)), service_(service), id_(id), base_(base), bytes_(bytes),
      label_(std::move(label)) {}

Window::~Window() {
  // A window dropped without free() (its rank is ending) still stops taking messages.
  if (!freed_ && comm_->runtime().active()) service_.remove(id_);
}

uint64_t Window::target_bytes(int rank) const {
  if (rank < 0 || rank >= size()) {
    throw UsageError("rma: rank " + std::to_string(rank) + " is not in " + label_ + " (size " +
                     std::to_string(size()) + ")");
  }
  return peers_[rank].length;
}

void Window::check_rank(const char* call, int64_t rank, bool allow_null) const {
  if ((allow_null && rank == kProcNull) || (rank >= 0 && rank < size())) return;
  throw UsageError("rma: " + where(call, -1) + ": rank " + std::to_string(rank) +
                   " is not a rank of the window (size " + std::to_string(size()) + ")");
}

std::string Window::where(const char* call, int target) const {
  std::string text = std::string("win.") + call;
  if (target >= 0) text += " to rank " + std::to_string(target);
  return text + " on rank " + std::to_string(rank()) + " of " + label_;
}

void Window::free() {
  if (freed_) throw RmaError("rma: win.free on rank " + std::to_string(rank()) + ": " + label_ + " was already freed");
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("free", -1) + ": a passive-target epoch is open (unlock first)");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where("free", -1) + ": inside an " +
                     (access_open_ ? "access epoch (call win.complete() first)" : "exposure epoch (call win.wait() first)"));
  }
  if (fence_epoch_ && calls_since_sync_ > 0) {
    throw EpochError("rma: " + where("free", -1) + ": inside a fence epoch with " +
                     std::to_string(calls_since_sync_) +
                     " communication call(s) not yet completed; call win.fence() first");
  }
  comm_->barrier();  // nobody frees while a peer may still address this memory
  service_.remove(id_);
  registration_.reset();
  freed_ = true;
}

// ---- communication calls ----

bool Window::admit(const char* call, int target, const Region& region) {
  if (freed_) throw RmaError("rma: " + where(call, -1) + ": the window was freed");
  comm_->runtime().require_active(call);
  if (target != kProcNull && (target < 0 || target >= size())) {
    throw UsageError("rma: " + where(call, -1) + ": target rank " + std::to_string(target) +
                     " is not a rank of the window (size " + std::to_string(size()) + ")");
  }
  if (target != kProcNull && passive_access(target)) {
    // a lock on target (or lock_all) permits the call
  } else if (target == kProcNull && in_passive_epoch(kProcNull)) {
    // PROC_NULL inside a passive epoch
  } else if (access_open_) {
    if (target != kProcNull && !in_access_group_[target]) {
      throw EpochError("rma: " + where(call, target) + ": rank " + std::to_string(target) +
                       " is not in the group of the open access epoch (win.start(" +
                       ranks_text(access_group_) + "))");
    }
  } else if (!fence_epoch_) {
    throw EpochError("rma: " + where(call, target) +
                     ": no access epoch is open; open one with win.fence(), win.start(group) or win.lock(rank)");
  }
  ++calls_since_sync_;
  if (target == kProcNull) return false;
  if (access_open_) consume_post(target, call);
  auto [low, high] = region.extent();
  if (region.elements() > 0 && !exposes(target, low, high)) {
    std::string window = dynamic_ ? "memory attached to the target's dynamic window"
                                  : "the target's window of " + std::to_string(peers_[target].length) + " bytes";
    throw RangeError("rma: " + where(call, target) + ": the target region, bytes [" +
                     std::to_string(low) + ", " + std::to_string(high) + "), lies outside " + window);
  }
  return region.elements() > 0;
}

namespace {
bool inside(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, int64_t low, int64_t high) {
  for (const auto& [address, bytes] : ranges) {
    if (low >= static_cast<int64_t>(address) && high <= static_cast<int64_t>(address + bytes)) return true;
  }
  return false;
}
}  // namespace

bool Window::exposes(int target, int64_t low, int64_t high) {
  if (low < 0) return false;
  if (!dynamic_) return static_cast<uint64_t>(high) <= peers_[target].length;
  if (inside(known_attachments_[target], low, high)) return true;
  // Not in what we knew: ask the target for its attachments now (they change without notice).
  Bytes request = request_header(next_request_++);
  Bytes answer;
  uint64_t request_id;
  std::memcpy(&request_id, request.data() + 4, sizeof request_id);
  {
    std::lock_guard lock(pending_mutex_);
    pending_[request_id] = Pending{&answer, 0, target, "attachments query"};
    attachment_requests_.insert(request_id);
  }
  ++outstanding_;
  ++outstanding_to_[target];
  try {
    comm_->runtime().transport().send(comm_->members()[target], kWindowAttachments, request);
    std::vector<int> watch{comm_->members()[target]};
    comm_->runtime().transport().wait_until(
        [&] {
          std::lock_guard lock(pending_mutex_);
          return pending_.count(request_id) == 0;
        },
        comm_->runtime().deadline(), watch, [&] { return where("attachments query", target); });
  } catch (...) {
    // `answer` lives on this stack frame: a late reply must find no entry pointing to it.
    std::lock_guard lock(pending_mutex_);
    if (pending_.erase(request_id)) {
      attachment_requests_.erase(request_id);
      --outstanding_;
      --outstanding_to_[target];
    }
    throw;
  }
  Attachments table(answer.size() / 16);
  std::memcpy(table.data(), answer.data(), table.size() * 16);
  known_attachments_[target] = std::move(table);
  return inside(known_attachments_[target], low, high);
}

bool Window::exposes_locally(int64_t low, int64_t high) const {
  // For a dynamic window the caller holds attachments_mutex_.
  if (low < 0) return false;
  if (!dynamic_) return static_cast<uint64_t>(high) <= bytes_;
  return inside(attachments_, low, high);
}

std::byte* Window::local_address(uint64_t offset) {
  // A dynamic window's offsets are addresses.
  return dynamic_ ? reinterpret_cast<std::byte*>(offset) : static_cast<std::byte*>(base_) + offset;
}

void Window::attach(void* base, uint64_t bytes) {
  if (!dynamic_) throw UsageError("rma: win.attach on rank " + std::to_string(rank()) + ": " + label_ + " is not dynamic");
  std::lock_guard lock(attachments_mutex_);
  auto address = reinterpret_cast<uint64_t>(base);
  for (const auto& [start, length] : attachments_) {
    if (address < start + length && start < address + bytes) {
      throw UsageError("rma: win.attach on rank " + std::to_string(rank()) + ": the memory overlaps memory already attached to " + label_);
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
  throw UsageError("rma: win.detach on rank " + std::to_string(rank()) + ": that memory is not attached to " + label_);
}

void Window::serve_attachments(int source, std::span<const std::byte> message, size_t position) {
  auto request = wire::take<uint64_t>(message, position);
  Bytes reply = request_header(request);
  reply.push_back(kAccepted);
  {
    std::lock_guard lock(attachments_mutex_);
    auto bytes = reinterpret_cast<const std::byte*>(attachments_.data());
    reply.insert(reply.end(), bytes, bytes + attachments_.size() * 16);
  }
  comm_->runtime().transport().send(source, kWindowReply, reply);
}

Bytes Window::request_header(uint64_t request) const {
  Bytes message;
  wire::append<uint32_t>(message, id_);
  wire::append<uint64_t>(message, request);
  return message;
}

void Window::send_request(const char* call, uint16_t handler, int target, Bytes message,
                          void* reply_to, size_t reply_bytes) {
  uint64_t request;
  std::memcpy(&request, message.data() + 4, sizeof request);
  {
    std::lock_guard lock(pending_mutex_);
    pending_[request] = Pending{reply_to, reply_bytes, target, call};
  }
  ++outstanding_;
  ++outstanding_to_[target];
  try {
    comm_->runtime().transport().send(comm_->members()[target], handler, message);
  } catch (...) {
    std::lock_guard lock(pending_mutex_);
    pending_.erase(request);
    --outstanding_;
    --outstanding_to_[target];
    throw;
  }
}

bool Window::native(const Region& region) const {
  // A one-sided fabric write or read makes the target's provider work (shm and tcp progress
  // at the target) without the target seeing a completion, so its progress engine takes itself
  // for idle and sleeps between polls: a lone small put then waits for a wake-up (~0.5 ms
  // measured). A message does show as activity, so small transfers travel as messages and
  // large ones, where bandwidth counts, as native RMA.
  return region.is_contiguous() && !dynamic_ && region.bytes() >= kNativeMinimumBytes;
}

Bytes Window::apply_request(Kind kind, ReduceOp op, ElementType type, const Region& region) {
  // What serve_apply parses: the request header, kind, op, element type and region; the
  // caller appends the data.
  Bytes message = request_header(next_request_++);
  wire::append<uint8_t>(message, static_cast<uint8_t>(kind));
  wire::append<uint8_t>(message, static_cast<uint8_t>(op));
  wire::append<uint8_t>(message, static_cast<uint8_t>(type));
  region.append_to(message);
  return message;
}

void Window::put(int target, const void* data, const Region& region) {
  if (region.is_contiguous() && put_direct(target, data, region.offset(), region.bytes())) return;
  if (!admit("put", target, region)) return;
  if (std::byte* memory = direct(target)) {
    auto source = static_cast<const std::byte*>(data);
    each_run(region, memory, [&](size_t at, std::byte* to, uint64_t length) { std::memcpy(to, source + at, length); });
    return;
  }
  if (vm_reachable(target) && vm_copy(true, target, const_cast<void*>(data), region)) return;
  if (native(region)) {
    comm_->runtime().transport().write(comm_->members()[target], data, region.bytes(),
                                       RemoteAddress{peers_[target], region.offset()});
    return;
  }
  // A small or strided region: one message that the target scatters.
  Bytes message = apply_request(Kind::Copy, ReduceOp::Replace, ElementType::Bytes, region);
  auto bytes = static_cast<const std::byte*>(data);
  message.insert(message.end(), bytes, bytes + region.bytes());
  send_request("put", kWindowApply, target, std::move(message), nullptr, 0);
}

void Window::get(int target, void* out, const Region& region) {
  if (region.is_contiguous() && get_direct(target, out, region.offset(), region.bytes())) return;
  if (!admit("get", target, region)) return;
  if (std::byte* memory = direct(target)) {
    auto into = static_cast<std::byte*>(out);
    each_run(region, memory, [&](size_t at, std::byte* from, uint64_t length) { std::memcpy(into + at, from, length); });
    return;
  }
  if (vm_reachable(target) && vm_copy(false, target, out, region)) return;
  if (native(region)) {
    comm_->runtime().transport().read(comm_->members()[target], out, region.bytes(),
                                      RemoteAddress{peers_[target], region.offset()});
    return;
  }
  Bytes message = request_header(next_request_++);
  region.append_to(message);
  send_request("get", kWindowRead, target, std::move(message), out, region.bytes());
}

void Window::accumulate(int target, ReduceOp op, ElementType type, const void* data,
                        const Region& region) {
  get_accumulate(target, op, type, data, nullptr, region);
}

void Window::get_accumulate(int target, ReduceOp op, ElementType type, const void* data,
                            void* result, const Region& region) {
  if (region.is_contiguous() && region.element_size() == element_size(type) &&
      get_accumulate_direct(target, op, type, data, result, region.offset(), region.bytes())) {
    return;
  }
  const char* call = result ? "get_accumulate" : "accumulate";
  if (!op_fits(op, type)) {
    throw UsageError("rma: " + where(call, target) + ": " + describe(op) + " does not apply to " +
                     describe(type));
  }
  if (!admit(call, target, region)) return;
  std::byte* memory = direct(target);
  if (memory != nullptr) {
    // A shared window: every accumulate to target applies here, under its accumulate lock.
    auto operand = static_cast<const std::byte*>(data);
    auto fetched = static_cast<std::byte*>(result);
    uint32_t element = region.element_size();
    control_->with_accumulate_lock(target, [&] {
      each_run(region, memory, [&](size_t at, std::byte* to, uint64_t length) {
        apply_reduce_plain(op, type, element, to, op == ReduceOp::NoOp ? nullptr : operand + at,
                           fetched ? fetched + at : nullptr, length / element);
      });
    });
    return;
  }
  Bytes message = apply_request(result ? Kind::FetchAccumulate : Kind::Accumulate, op, type, region);
  if (op != ReduceOp::NoOp) {
    auto bytes = static_cast<const std::byte*>(data);
    message.insert(message.end(), bytes, bytes + region.bytes());
  }
  send_request(call, kWindowApply, target, std::move(message), result, result ? region.bytes() : 0);
}

void Window::compare_and_swap(int target, ElementType type, const void* data, const void* compare,
                              void* result, const Region& region) {
  if (region.elements() == 1 && region.element_size() == element_size(type) &&
      compare_and_swap_direct(target, type, data, compare, result, region.offset())) {
    return;
  }
  if (type == ElementType::Bytes || type == ElementType::Float32 || type == ElementType::Float64 ||
      type == ElementType::Complex64 || type == ElementType::Complex128) {
    throw UsageError("rma: " + where("compare_and_swap", target) + ": compare_and_swap takes " +
                     "integers and bool, not " + describe(type));
  }
  if (!admit("compare_and_swap", target, region)) return;
  if (region.elements() != 1) {
    throw UsageError("rma: " + where("compare_and_swap", target) + ": exactly one element");
  }
  std::byte* memory = direct(target);
  if (memory != nullptr) {
    control_->with_accumulate_lock(target, [&] {
      compare_and_swap_plain(type, region.element_size(), memory + region.offset(), compare, data, result);
    });
    return;
  }
  Bytes message = apply_request(Kind::CompareSwap, ReduceOp::Replace, type, region);
  auto operand = static_cast<const std::byte*>(data);
  auto comparand = static_cast<const std::byte*>(compare);
  message.insert(message.end(), operand, operand + region.bytes());
  message.insert(message.end(), comparand, comparand + region.bytes());
  send_request("compare_and_swap", kWindowApply, target, std::move(message), result, region.bytes());
}

// ---- synchronization ----

void Window::complete_all(const char* call) {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // direct stores are visible before what follows
  // A shared window issues no one-sided fabric operations: its direct calls are complete.
  if (!segments_.empty() && outstanding_.load() == 0) return;
  Transport& transport = comm_->runtime().transport();
  Deadline deadline = comm_->runtime().deadline();
  if (segments_.empty()) {
    for (int member : comm_->members()) transport.flush(member, deadline);
  }
  transport.wait_until([&] { return outstanding_.load() == 0; }, deadline, comm_->members(),
                       [&] { return where(call, -1) + " (waiting for its operations to complete)"; });
}

void Window::fence(int mode) {
  if (freed_) throw RmaError("rma: " + where("fence", -1) + ": the window was freed");
  check_mode(mode, "fence");
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("fence", -1) + ": a passive-target epoch (lock) is open on this window; unlock first");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where("fence", -1) + ": a " +
                     (access_open_ ? "start/complete access" : "post/wait exposure") +
                     " epoch is open; fence and post/start epochs never overlap");
  }
  if ((mode & kModeNoPrecede) && calls_since_sync_ > 0) {
    throw EpochError("rma: " + where("fence", -1) + ": Mode.NOPRECEDE promises that no " +
                     "communication call precedes this fence, but " +
                     std::to_string(calls_since_sync_) + " did");
  }
  complete_all("fence");
  if (control_) {
    // Everyone's direct stores are done: meet in shared memory.
    uint32_t round = control_->arrive();
    // The others are usually there within a microsecond or two: look a few times before
    // setting up a wait.
    for (int look = 0; look < 64 && !control_->passed(round); ++look) cpu_relax();
    if (!control_->passed(round)) comm_->runtime().transport().wait_until([&] { return control_->passed(round); }, comm_->runtime().deadline(),
                                            comm_->members(), [&] { return where("fence", -1) + " (waiting for the other ranks to fence)"; },
                                            own_bell());
  } else {
    comm_->barrier();
  }
  calls_since_sync_ = 0;
  fence_epoch_ = !(mode & kModeNoSucceed);
  raise_refusal();
}

void Window::check_mode(int mode, const char* call) const {
  constexpr int kAllModes = kModeNoCheck | kModeNoStore | kModeNoPut | kModeNoPrecede | kModeNoSucceed;
  if (mode & ~kAllModes) {
    throw UsageError("rma: " + where(call, -1) + ": mode " + std::to_string(mode) +
                     " is not a combination of rma.Mode flags");
  }
}

void Window::stalled(const char* what) {
  // Waiting long for a spin lock of the control block: if some rank died, it may have died
  // holding it. (A live holder keeps it a few instructions, so the wait is long only then.)
  Transport& transport = comm_->runtime().transport();
  if (transport.peers().any_dead()) {
    transport.peers().check(comm_->members(), comm_->runtime().rank(),
                            "a call on " + label_ + " (waiting for " + what + ")");
  }
}

void Window::raise_refusal() {
  if (!dynamic_) return;  // only a dynamic window's targets refuse (memory detached meanwhile)
  std::string refusal;
  {
    std::lock_guard lock(pending_mutex_);
    refusal.swap(refusal_);
  }
  if (!refusal.empty()) throw RangeError(refusal);
}

void Window::check_group(const std::vector<int>& group, const char* call) const {
  std::vector<char> seen(size(), 0);
  for (int rank : group) {
    if (rank < 0 || rank >= size()) {
      throw UsageError("rma: " + where(call, -1) + ": rank " + std::to_string(rank) +
                       " in the group is not a rank of the window (size " + std::to_string(size()) + ")");
    }
    if (seen[rank]++) {
      throw UsageError("rma: " + where(call, -1) + ": ranks must be distinct, but rank " + std::to_string(rank) +
                       " is in the group twice");
    }
  }
}

void Window::leave_idle_fence(const char* call) {
  if (freed_) throw RmaError("rma: " + where(call, -1) + ": the window was freed");
  if (in_passive_epoch(kProcNull) && std::string(call) != "lock" && std::string(call) != "lock_all") {
    throw EpochError("rma: " + where(call, -1) + ": a passive-target epoch (lock) is open on this window; unlock first");
  }
  if (fence_epoch_) {
    // A fence followed by no communication call does not keep the window from other epochs.
    if (calls_since_sync_ > 0) {
      throw EpochError("rma: " + where(call, -1) + ": a fence epoch with " +
                       std::to_string(calls_since_sync_) +
                       " communication call(s) is open; end it with win.fence(Mode.NOSUCCEED)");
    }
    fence_epoch_ = false;
  }
}

std::string Window::ranks_text(const std::vector<int>& ranks) const {
  std::string text = "[";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "]";
}

int Window::rank_of_world(int world_rank) const {
  const auto& members = comm_->members();
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == world_rank) return static_cast<int>(i);
  }
  return -1;
}

void Window::notify(uint16_t handler, const std::vector<int>& ranks) {
  if (control_) {
    auto counters = handler == kWindowPost ? &SharedControl::posts : &SharedControl::completes;
    for (int rank : ranks) control_->notify(counters, rank);
    return;
  }
  Bytes message;
  wire::append<uint32_t>(message, id_);
  for (int rank : ranks) comm_->runtime().transport().send(comm_->members()[rank], handler, message);
}

void Window::post(const std::vector<int>& group, int mode) {
  check_mode(mode, "post");
  leave_idle_fence("post");
  check_group(group, "post");
  if (exposure_open_) {
    throw EpochError("rma: " + where("post", -1) + ": an exposure epoch (win.post(" +
                     ranks_text(exposure_group_) + ")) is already open; call win.wait() first");
  }
  exposure_group_ = group;
  exposure_nocheck_ = mode & kModeNoCheck;
  exposure_open_ = true;
  // Our stores before post are done (they are the caller's own); tell the origins.
  if (!exposure_nocheck_) notify(kWindowPost, group);
}

void Window::start(const std::vector<int>& group, int mode) {
  check_mode(mode, "start");
  leave_idle_fence("start");
  check_group(group, "start");
  if (access_open_) {
    throw EpochError("rma: " + where("start", -1) + ": an access epoch (win.start(" +
                     ranks_text(access_group_) + ")) is already open; call win.complete() first");
  }
  access_group_ = group;
  access_nocheck_ = mode & kModeNoCheck;
  std::fill(in_access_group_.begin(), in_access_group_.end(), 0);
  std::fill(post_matched_.begin(), post_matched_.end(), 0);
  for (int rank : group) in_access_group_[rank] = 1;
  access_open_ = true;
  calls_since_sync_ = 0;
}

void Window::consume_post(int target, const char* call) {
  if (access_nocheck_ || post_matched_[target]) return;
  std::vector<int> watch{comm_->members()[target]};
  comm_->runtime().transport().wait_until(
      [&] { return posts_seen_[target].load() > posts_used_[target]; }, comm_->runtime().deadline(),
      watch, [&] {
        return where(call, target) + " in the access epoch of win.start(" + ranks_text(access_group_) +
               ") (waiting for rank " + std::to_string(target) + " to call win.post)";
      },
      own_bell());
  ++posts_used_[target];
  post_matched_[target] = 1;
}

void Window::complete() {
  if (freed_) throw RmaError("rma: " + where("complete", -1) + ": the window was freed");
  if (!access_open_) {
    throw EpochError("rma: " + where("complete", -1) + ": no access epoch is open (win.start was not called)");
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Every target's post is consumed, even one we never addressed, so counts stay matched.
  for (int target : access_group_) consume_post(target, "complete");
  Transport& transport = comm_->runtime().transport();
  Deadline deadline = comm_->runtime().deadline();
  if (segments_.empty()) {
    for (int target : access_group_) transport.flush(comm_->members()[target], deadline);
  }
  transport.wait_until([&] { return outstanding_.load() == 0; }, deadline, comm_->members(),
                       [&] { return where("complete", -1) + " (waiting for its operations to complete)"; });
  if (!access_nocheck_) notify(kWindowComplete, access_group_);
  access_open_ = false;
  calls_since_sync_ = 0;
  raise_refusal();
}

bool Window::exposure_done() const {
  for (int origin : exposure_group_) {
    if (completes_seen_[origin].load() <= completes_used_[origin]) return false;
  }
  return true;
}

void Window::wait() {
  if (freed_) throw RmaError("rma: " + where("wait", -1) + ": the window was freed");
  if (!exposure_open_) {
    throw EpochError("rma: " + where("wait", -1) + ": no exposure epoch is open (win.post was not called)");
  }
  if (!exposure_nocheck_) {
    std::vector<int> watch;
    for (int origin : exposure_group_) watch.push_back(comm_->members()[origin]);
    comm_->runtime().transport().wait_until([&] { return exposure_done(); }, comm_->runtime().deadline(), watch, [&] {
      std::vector<int> missing;
      for (int origin : exposure_group_) {
        if (completes_seen_[origin].load() <= completes_used_[origin]) missing.push_back(origin);
      }
      return where("wait", -1) + " for the exposure epoch of win.post(" + ranks_text(exposure_group_) +
             ") (still waiting for win.complete from ranks " + ranks_text(missing) + ")";
    }, own_bell());
    for (int origin : exposure_group_) ++completes_used_[origin];
  }
  exposure_open_ = false;
}

bool Window::test() {
  if (freed_) throw RmaError("rma: " + where("test", -1) + ": the window was freed");
  if (!exposure_open_) {
    throw EpochError("rma: " + where("test", -1) + ": no exposure epoch is open (win.post was not called)");
  }
  comm_->runtime().transport().progress();
  if (!exposure_nocheck_ && !exposure_done()) return false;
  wait();
  return true;
}

void Window::note_post(int source, std::span<const std::byte>, size_t) {
  int rank = rank_of_world(source);
  if (rank >= 0) ++posts_seen_[rank];
}

void Window::note_complete(int source, std::span<const std::byte>, size_t) {
  int rank = rank_of_world(source);
  if (rank >= 0) ++completes_seen_[rank];
}

void Window::complete_target(int target, const char* call) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!segments_.empty() && outstanding_to_[target].load() == 0) return;  // every call was direct: done
  Transport& transport = comm_->runtime().transport();
  Deadline deadline = comm_->runtime().deadline();
  if (segments_.empty()) transport.flush(comm_->members()[target], deadline);
  std::vector<int> watch{comm_->members()[target]};
  transport.wait_until([&] { return outstanding_to_[target].load() == 0; }, deadline, watch,
                       [&] { return where(call, target) + " (waiting for its calls to complete)"; });
}

bool Window::in_passive_epoch(int target) const {
  if (target == kProcNull) {
    return lock_all_ || std::any_of(held_.begin(), held_.end(), [](uint8_t h) { return h != 0; });
  }
  return target >= 0 && target < size() && passive_access(target);
}

bool Window::target_idle(int target) {
  if (target == kProcNull) return true;
  Transport& transport = comm_->runtime().transport();
  transport.progress();
  return outstanding_to_[target].load() == 0 && transport.idle(comm_->members()[target]);
}

bool Window::request_lock(int target, int type, bool try_only, const char* call) {
  if (freed_) throw RmaError("rma: " + where(call, -1) + ": the window was freed");
  if (target < 0 || target >= size()) {
    throw UsageError("rma: " + where(call, -1) + ": rank " + std::to_string(target) +
                     " is not a rank of the window (size " + std::to_string(size()) + ")");
  }
  if (type != kLockExclusive && type != kLockShared) {
    throw UsageError("rma: " + where(call, target) + ": lock_type must be rma.LOCK_EXCLUSIVE or rma.LOCK_SHARED");
  }
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where(call, target) + ": a post/start epoch is open on this window");
  }
  leave_idle_fence(call);
  if (held_[target] || lock_all_) {
    throw EpochError("rma: " + where(call, target) + ": this rank already holds a lock on rank " +
                     std::to_string(target) + " in this epoch (a second lock on one target)");
  }
  if (control_) {
    if (request_shared_lock(target, type, try_only, call) != 1) return false;
    held_[target] = static_cast<uint8_t>(type);
    held_nocheck_[target] = 0;
    return true;
  }
  grant_[target] = 0;
  Bytes message;
  wire::append<uint32_t>(message, id_);
  wire::append<uint8_t>(message, static_cast<uint8_t>(type));
  wire::append<uint8_t>(message, try_only ? 1 : 0);
  comm_->runtime().transport().send(comm_->members()[target], kWindowLock, message);
  std::vector<int> watch{comm_->members()[target]};
  try {
    comm_->runtime().transport().wait_until([&] { return grant_[target].load() != 0; }, comm_->runtime().deadline(), watch, [&] {
      return where(call, target) + " (waiting for the " + (type == kLockExclusive ? "exclusive" : "shared") +
             " lock on rank " + std::to_string(target) + ", held by another rank)";
    });
  } catch (...) {
    // Given up (deadline, interrupt): the request stays queued at the target. Whenever its
    // grant comes, hand the lock straight back, or nobody else would ever get it.
    std::lock_guard lock(grant_mutex_);
    if (grant_[target].load() == 1) {
      send_unlock(target);
    } else if (grant_[target].load() == 0) {
      abandoned_[target] = 1;
    }
    throw;
  }
  if (grant_[target].load() != 1) return false;
  held_[target] = static_cast<uint8_t>(type);
  held_nocheck_[target] = 0;
  return true;
}

void Window::lock(int target, int type, int mode) {
  if (mode & kModeNoCheck) {
    // The caller promises no conflicting lock exists: no message, no queue.
    if (freed_) throw RmaError("rma: " + where("lock", -1) + ": the window was freed");
    if (target < 0 || target >= size()) {
      throw UsageError("rma: " + where("lock", -1) + ": rank " + std::to_string(target) + " is not a rank of the window");
    }
    if (held_[target] || lock_all_) {
      throw EpochError("rma: " + where("lock", target) + ": this rank already holds a lock on rank " + std::to_string(target));
    }
    if (access_open_ || exposure_open_) {
      throw EpochError("rma: " + where("lock", target) + ": a post/start epoch is open on this window");
    }
    leave_idle_fence("lock");
    held_[target] = static_cast<uint8_t>(type == kLockShared ? kLockShared : kLockExclusive);
    held_nocheck_[target] = 1;
    return;
  }
  request_lock(target, type, false, "lock");
}

bool Window::try_lock(int target, int type) { return request_lock(target, type, true, "lock"); }

int Window::request_shared_lock(int target, int type, bool try_only, const char* call) {
  // The origin queues itself in the target's lock queue; whoever grants it (itself, or the
  // holder that unlocks) sets its grant word and rings its bell.
  std::atomic<uint32_t>& grant = control_->grants(target)[rank()];
  grant.store(0);
  control_->with_queue(target, [&](LockQueue& queue) {
    if (try_only && !queue.free_for(type)) {
      grant.store(2);
      return;
    }
    queue.enqueue(rank(), type);
    grant_from(queue, target);
  });
  if (grant.load() != 0) return static_cast<int>(grant.load());  // granted (or refused) at once
  // Any rank may hold the lock: one that dies holding it would keep it forever, so a death
  // anywhere in the window ends the wait.
  const std::vector<int>& watch = comm_->members();
  try {
    comm_->runtime().transport().wait_until([&] { return grant.load() != 0; }, comm_->runtime().deadline(), watch, [&] {
      return where(call, target) + " (waiting for the " + (type == kLockExclusive ? "exclusive" : "shared") +
             " lock on rank " + std::to_string(target) + ", held by another rank)";
    }, own_bell());
  } catch (...) {
    // Given up (deadline, interrupt): leave the queue, or hand back a grant that came meanwhile.
    control_->with_queue(target, [&](LockQueue& queue) {
      if (!queue.withdraw(rank())) release_from(queue, target);
    });
    throw;
  }
  return static_cast<int>(grant.load());
}

void Window::release_from(LockQueue& queue, int target) {
  queue.release(rank());
  grant_from(queue, target);
}

void Window::grant_from(LockQueue& queue, int target) {
  queue.grant_waiting([&](int origin) {
    control_->grants(target)[origin].store(1);
    if (origin != rank()) control_->bell(origin).ring();  // (this rank is awake)
  });
}

void Window::release(int target) {
  complete_target(target, "unlock");
  if (!held_nocheck_[target]) send_unlock(target);
  held_[target] = 0;
  held_nocheck_[target] = 0;
}

void Window::unlock(int target) {
  if (freed_) throw RmaError("rma: " + where("unlock", -1) + ": the window was freed");
  if (lock_all_) {
    throw EpochError("rma: " + where("unlock", target) + ": the epoch was opened by win.lock_all(); end it with win.unlock_all()");
  }
  if (target < 0 || target >= size() || !held_[target]) {
    throw EpochError("rma: " + where("unlock", target) + ": this rank holds no lock on rank " +
                     std::to_string(target) + " (win.lock was not called)");
  }
  release(target);
  calls_since_sync_ = 0;
  raise_refusal();
}

void Window::lock_all(int mode) {
  if (freed_) throw RmaError("rma: " + where("lock_all", -1) + ": the window was freed");
  if (access_open_ || exposure_open_) {
    throw EpochError("rma: " + where("lock_all", -1) + ": a post/start epoch is open on this window");
  }
  leave_idle_fence("lock_all");
  if (in_passive_epoch(kProcNull)) {
    throw EpochError("rma: " + where("lock_all", -1) + ": a passive-target epoch is already open");
  }
  if (!(mode & kModeNoCheck)) {
    try {
      for (int target = 0; target < size(); ++target) request_lock(target, kLockShared, false, "lock_all");
    } catch (...) {
      // Give back the locks already taken: the epoch did not open.
      for (int target = 0; target < size(); ++target) {
        if (held_[target]) {
          send_unlock(target);
          held_[target] = 0;
        }
      }
      throw;
    }
  } else {
    std::fill(held_.begin(), held_.end(), static_cast<uint8_t>(kLockShared));
    std::fill(held_nocheck_.begin(), held_nocheck_.end(), 1);
  }
  lock_all_ = true;
}

void Window::unlock_all() {
  if (freed_) throw RmaError("rma: " + where("unlock_all", -1) + ": the window was freed");
  if (!lock_all_) throw EpochError("rma: " + where("unlock_all", -1) + ": no lock_all epoch is open");
  for (int target = 0; target < size(); ++target) {
    if (held_[target]) release(target);  // a retry after a failure skips what was released
  }
  lock_all_ = false;
  calls_since_sync_ = 0;
  raise_refusal();
}

void Window::flush(int target) {
  if (flush_direct(target)) return;
  if (freed_) throw RmaError("rma: " + where("flush", -1) + ": the window was freed");
  if (target == kProcNull) return;
  if (target < 0 || target >= size() || !passive_access(target)) {
    throw EpochError("rma: " + where("flush", target) + ": flush needs a passive-target epoch " +
                     "(win.lock(" + std::to_string(target) + ") or win.lock_all())");
  }
  complete_target(target, "flush");
  raise_refusal();
}

void Window::flush_all() {
  if (freed_) throw RmaError("rma: " + where("flush_all", -1) + ": the window was freed");
  bool any = false;
  for (int target = 0; target < size(); ++target) {
    if (passive_access(target)) {
      complete_target(target, "flush_all");
      any = true;
    }
  }
  if (!any) throw EpochError("rma: " + where("flush_all", -1) + ": flush needs a passive-target epoch");
  raise_refusal();
}

void Window::serve_lock(int source, std::span<const std::byte> message, size_t position) {
  int type = wire::take<uint8_t>(message, position);
  bool try_only = wire::take<uint8_t>(message, position) != 0;
  int origin = rank_of_world(source);
  if (origin < 0) return;
  if (try_only) {
    if (!lock_queue_->free_for(type)) {
      Bytes answer;
      wire::append<uint32_t>(answer, id_);
      wire::append<uint8_t>(answer, 2);
      comm_->runtime().transport().send(source, kWindowGrant, answer);
      return;
    }
  }
  lock_queue_->enqueue(origin, type);
  grant_waiting();
}

void Window::serve_unlock(int source, std::span<const std::byte>, size_t) {
  int origin = rank_of_world(source);
  if (origin < 0) return;
  lock_queue_->release(origin);
  grant_waiting();
}

void Window::grant_waiting() {
  lock_queue_->grant_waiting([&](int origin) {
    Bytes answer;
    wire::append<uint32_t>(answer, id_);
    wire::append<uint8_t>(answer, 1);
    comm_->runtime().transport().send(comm_->members()[origin], kWindowGrant, answer);
  });
}

void Window::note_grant(int source, std::span<const std::byte> message, size_t position) {
  int answer = wire::take<uint8_t>(message, position);
  int target = rank_of_world(source);
  if (target < 0) return;
  std::lock_guard lock(grant_mutex_);
  if (abandoned_[target]) {
    abandoned_[target] = 0;
    if (answer == 1) send_unlock(target);
    return;
  }
  grant_[target] = answer;
}

void Window::send_unlock(int target) {
  if (control_) {
    control_->with_queue(target, [&](LockQueue& queue) { release_from(queue, target); });
    return;
  }
  Bytes message;
  wire::append<uint32_t>(message, id_);
  comm_->runtime().transport().send(comm_->members()[target], kWindowUnlock, message);
}

// ---- target side ----

void Window::serve_apply(int source, std::span<const std::byte> message, size_t position) {
  auto request = wire::take<uint64_t>(message, position);
  auto kind = static_cast<Kind>(wire::take<uint8_t>(message, position));
  auto op = static_cast<ReduceOp>(wire::take<uint8_t>(message, position));
  auto type = static_cast<ElementType>(wire::take<uint8_t>(message, position));
  Region region = Region::parse(message, position);
  auto [low, high] = region.extent();
  Bytes reply = request_header(request);
  // A dynamic window's memory may be detached meanwhile: hold its table until we are done.
  std::unique_lock attached(attachments_mutex_, std::defer_lock);
  if (dynamic_) attached.lock();
  if (!exposes_locally(low, high)) return refuse(source, std::move(reply));
  reply.push_back(kAccepted);
  size_t fetched_at = reply.size();
  bool fetching = kind == Kind::FetchAccumulate || kind == Kind::CompareSwap;
  if (fetching) reply.resize(reply.size() + region.bytes());
  const std::byte* data = message.data() + position;
  size_t cursor = 0;
  uint32_t element = region.element_size();
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    std::byte* target = local_address(offset);
    std::byte* fetched = fetching ? reply.data() + fetched_at + cursor : nullptr;
    switch (kind) {
      case Kind::Copy:
        std::memcpy(target, data + cursor, length);
        break;
      case Kind::Accumulate:
      case Kind::FetchAccumulate:
        apply_reduce(op, type, element, target, op == ReduceOp::NoOp ? nullptr : data + cursor,
                     fetched, length / element);
        break;
      case Kind::CompareSwap:
        rma::compare_and_swap(type, target, data + region.bytes() + cursor, data + cursor, fetched);
        break;
    }
    cursor += length;
  });
  comm_->runtime().transport().send(source, kWindowReply, reply);
}

void Window::serve_read(int source, std::span<const std::byte> message, size_t position) {
  auto request = wire::take<uint64_t>(message, position);
  Region region = Region::parse(message, position);
  auto [low, high] = region.extent();
  Bytes reply = request_header(request);
  std::unique_lock attached(attachments_mutex_, std::defer_lock);
  if (dynamic_) attached.lock();
  if (!exposes_locally(low, high)) return refuse(source, std::move(reply));
  reply.push_back(kAccepted);
  reply.reserve(reply.size() + region.bytes());
  region.for_each_run([&](uint64_t offset, uint64_t length) {
    const std::byte* memory = local_address(offset);
    reply.insert(reply.end(), memory, memory + length);
  });
  comm_->runtime().transport().send(source, kWindowReply, reply);
}

void Window::refuse(int source, Bytes reply) {
  // The origin checked the region against what it knew; the target's memory changed since
  // (a detach). The origin hears of it at its next synchronization, and nothing waits forever.
  reply.push_back(kRefused);
  comm_->runtime().transport().send(source, kWindowReply, reply);
}

void Window::take_reply(std::span<const std::byte> message, size_t position) {
  auto request = wire::take<uint64_t>(message, position);
  bool refused = wire::take<uint8_t>(message, position) == static_cast<uint8_t>(kRefused);
  Pending pending;
  {
    std::lock_guard lock(pending_mutex_);
    auto found = pending_.find(request);
    if (found == pending_.end()) throw RmaError("rma: " + label_ + ": a reply nobody waits for");
    pending = found->second;
    if (refused && refusal_.empty()) {
      refusal_ = "rma: " + where(pending.call, pending.target) +
                 ": the target refused the region: it is not in memory exposed there (detached?)";
    }
    if (attachment_requests_.erase(request)) {
      static_cast<Bytes*>(pending.out)->assign(message.begin() + position, message.end());
      pending_.erase(found);
      --outstanding_;
      --outstanding_to_[pending.target];
      return;
    }
    pending_.erase(found);
  }
  size_t length = message.size() - position;
  if (!refused && pending.out != nullptr && length == pending.bytes && length > 0) {
    std::memcpy(pending.out, message.data() + position, length);
  }
  --outstanding_to_[pending.target];
  --outstanding_;
}

// ---- the service ----

WindowService::WindowService(Runtime& runtime) : runtime_(runtime) {
  auto route = [this](void (Window::*serve)(int, std::span<const std::byte>, size_t)) {
    return [this, serve](int source, Bytes&& message) {
      size_t position = 0;
      auto id = wire::take<uint32_t>(message, position);
      std::shared_ptr<Window> window = find(id);
      if (!window) throw RmaError("rma: a message for window " + std::to_string(id) + ", which is not open here");
      ((*window).*serve)(source, message, position);
    };
  };
  Transport& transport = runtime.transport();
  transport.set_handler(kWindowApply, route(&Window::serve_apply));
  transport.set_handler(kWindowRead, route(&Window::serve_read));
  transport.set_handler(kWindowAttachments, route(&Window::serve_attachments));
  transport.set_handler(kWindowPost, route(&Window::note_post));
  transport.set_handler(kWindowComplete, route(&Window::note_complete));
  transport.set_handler(kWindowLock, route(&Window::serve_lock));
  transport.set_handler(kWindowUnlock, route(&Window::serve_unlock));
  transport.set_handler(kWindowGrant, route(&Window::note_grant));
  transport.set_handler(kWindowReply, [this](int, Bytes&& message) {
    size_t position = 0;
    auto id = wire::take<uint32_t>(message, position);
    if (std::shared_ptr<Window> window = find(id)) window->take_reply(message, position);
  });
}

void WindowService::add(uint32_t id, const std::shared_ptr<Window>& window) {
  std::lock_guard lock(mutex_);
  windows_[id] = window;
}

void WindowService::remove(uint32_t id) {
  std::lock_guard lock(mutex_);
  windows_.erase(id);
}

std::shared_ptr<Window> WindowService::find(uint32_t id) {
  std::lock_guard lock(mutex_);
  auto found = windows_.find(id);
  return found == windows_.end() ? nullptr : found->second.lock();
}

void WindowService::id_taken(uint32_t id) noexcept {
  uint32_t next = next_id_.load();
  while (next <= id && !next_id_.compare_exchange_weak(next, id + 1)) {
  }
}

}  // namespace rma
