#include "host/inbox_link.hpp"

#include <cstring>

#include "base/errors.hpp"

namespace rma {

static_assert(kFragmentBytes <= ShmInbox::kSlotBytes, "an inbox slot holds a whole fragment");

namespace {
std::shared_ptr<BarrierBoard> board_of(const std::shared_ptr<ShmInbox>& inbox) {
  return std::make_shared<BarrierBoard>(inbox, inbox->board(), inbox->ranks(), &inbox->barrier_bell());
}
}  // namespace

InboxLink::InboxLink(Transport& owner, MessageRouter& router, double timeout_seconds)
    : owner_(owner),
      router_(router),
      timeout_seconds_(timeout_seconds),
      inbox_(ShmInbox::create(owner.size())),
      peers_(owner.size()),
      push_mutexes_(new std::mutex[owner.size()]) {
  boards_.resize(owner.size());
  boards_[owner.rank()] = board_of(inbox_);
}

InboxLink::~InboxLink() { inbox_->unlink(); }

void InboxLink::connect(const std::vector<std::string>& names, const Topology& topology) {
  reached_by_everyone_ = true;
  for (int peer = 0; peer < owner_.size(); ++peer) {
    if (peer == owner_.rank()) continue;
    if (!topology.same_host(peer, owner_.rank())) {
      reached_by_everyone_ = false;
      continue;
    }
    try {
      peers_[peer] = ShmInbox::open(names[peer], owner_.size());
      boards_[peer] = board_of(peers_[peer]);
    } catch (const RmaError&) {
      reached_by_everyone_ = false;
    }
  }
}

void InboxLink::push(int target, FragmentHeader& header, MessageParts payload, bool first) {
  ShmInbox& inbox = *peers_[target];
  auto bytes = std::as_bytes(std::span(&header, 1));
  auto attempt = [&] {
    std::lock_guard lock(push_mutexes_[target]);
    auto commit = [&] { return inbox.try_push(owner_.rank(), bytes, payload); };
    return first ? router_.commit_first(target, header, commit) : commit();
  };
  if (attempt()) return;
  // Full: the target is behind. Wake it, take in our own messages meanwhile (it may be
  // waiting to send to us), and retry; the lock is not held meanwhile, as handlers send too.
  owner_.wait_until(
      [&] {
        if (attempt()) return true;
        ring(target);
        return false;
      },
      Deadline::after(timeout_seconds_), std::span<const int>(&target, 1),
      [&] { return "a message to rank " + std::to_string(target) + " (its inbox stayed full)"; }, nullptr,
      /*interruptible=*/false);
}

void InboxLink::push_as_is(int target, std::span<const std::byte> frame) {
  if (frame.size() > ShmInbox::kSlotBytes) throw UsageError("rma: a frame longer than an inbox slot");
  owner_.wait_until(
      [&] {
        std::lock_guard lock(push_mutexes_[target]);
        return peers_[target]->try_push(owner_.rank(), frame, {});
      },
      Deadline::after(timeout_seconds_), std::span<const int>(&target, 1),
      [&] { return "a frame to rank " + std::to_string(target); }, nullptr, /*interruptible=*/false);
}

size_t InboxLink::drain(Fragments& arrived) {
  std::unique_lock lock(drain_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  // The ring a fragment is in says who wrote it (a ring has one producer): the header must agree.
  return inbox_->drain(
      [&](int source, std::span<const std::byte> fragment) { router_.admit(source, fragment, arrived); });
}

}  // namespace rma
