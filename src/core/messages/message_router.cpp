#include "messages/message_router.hpp"

#include <cstdio>
#include <cstring>

#include "base/errors.hpp"

namespace rma {

namespace {
// Set while this thread dispatches, so that a handler that sends (and so makes progress) does
// not dispatch re-entrantly.
thread_local bool t_delivering = false;
}  // namespace

MessageRouter::MessageRouter(int rank, int size, PeerStatus& peers)
    : rank_(rank),
      size_(size),
      peers_(peers),
      routes_(new Route[size]),
      rejected_(new std::atomic<bool>[size]),
      assembler_(size) {
  for (int i = 0; i < size; ++i) rejected_[i].store(false);
}

bool MessageRouter::trusts(int source) const noexcept {
  return source >= 0 && source < size_ && !rejected_[source].load(std::memory_order_acquire);
}

void MessageRouter::reject(int source, const std::string& why) {
  if (source < 0 || source >= size_ || rejected_[source].exchange(true)) return;
  std::fprintf(stderr,
               "rma: rank %d: rank %d sent %s; rank %d no longer takes its messages, and calls that wait for it "
               "raise PeerError\n",
               rank_, source, why.c_str(), rank_);
  peers_.mark_misbehaving(source, why);
}

void MessageRouter::set_handler(uint16_t id, ActiveMessageHandler handler) {
  std::lock_guard lock(delivery_mutex_);
  if (handlers_.size() <= id) handlers_.resize(id + 1);
  handlers_[id] = std::move(handler);
}

FragmentHeader MessageRouter::header(uint16_t handler, size_t length) const {
  return FragmentHeader{static_cast<uint32_t>(rank_), handler, 0, 0, 0, length};
}

bool MessageRouter::commit_first(int target, FragmentHeader& header, const std::function<bool()>& commit) {
  Route& route = routes_[target];
  std::lock_guard lock(route.mutex);
  if (!route.broken.empty()) {
    throw PeerError("rma: rank " + std::to_string(rank_) + " can no longer send messages to rank " +
                    std::to_string(target) + ": an earlier message to it failed after part of it had left (" +
                    route.broken + "), and rank " + std::to_string(target) +
                    " takes messages only in the order they were sent");
  }
  header.sequence = route.next_sequence;
  if (!commit()) return false;
  ++route.next_sequence;
  return true;
}

void MessageRouter::break_route(int target, const std::string& why) {
  Route& route = routes_[target];
  std::lock_guard lock(route.mutex);
  if (route.broken.empty()) route.broken = why.empty() ? std::string("no reason given") : why;
}

void MessageRouter::admit(int source, std::span<const std::byte> fragment, Fragments& arrived) {
  if (fragment.size() < sizeof(FragmentHeader)) {
    if (source >= 0) reject(source, "a " + std::to_string(fragment.size()) + "-byte message, too short for a fragment");
    return;
  }
  FragmentHeader header;
  std::memcpy(&header, fragment.data(), sizeof header);
  if (source >= 0 && header.source != static_cast<uint32_t>(source)) {
    reject(source, "a message fragment that claims to come from rank " + std::to_string(header.source));
    return;
  }
  arrived.emplace_back(header, std::vector<std::byte>(fragment.begin() + sizeof header, fragment.end()));
}

void MessageRouter::deliver(Fragments&& fragments) {
  if (!fragments.empty()) {
    std::lock_guard lock(pending_mutex_);
    if (pending_.empty()) {
      pending_.swap(fragments);
    } else {
      for (auto& fragment : fragments) pending_.push_back(std::move(fragment));
    }
    has_pending_.store(true, std::memory_order_release);
  }
  if (t_delivering) return;
  for (;;) {
    std::unique_lock delivery(delivery_mutex_, std::try_to_lock);
    if (!delivery.owns_lock()) return;  // the thread that owns it dispatches ours too
    t_delivering = true;
    for (;;) {
      Fragments batch;
      {
        std::lock_guard lock(pending_mutex_);
        batch.swap(pending_);
        has_pending_.store(false, std::memory_order_release);
      }
      if (batch.empty()) break;
      dispatch(batch);
    }
    t_delivering = false;
    delivery.unlock();
    // Fragments queued while we were finishing would otherwise wait for the next progress pass.
    if (!has_pending()) return;
  }
}

void MessageRouter::dispatch(Fragments& batch) {
  std::vector<ActiveMessage> ready;
  for (auto& [header, payload] : batch) {
    if (!trusts(static_cast<int>(header.source))) continue;  // (a source outside the job is never trusted)
    try {
      assembler_.add(header, std::move(payload), ready);
    } catch (const MalformedMessage& e) {
      reject(static_cast<int>(header.source), e.what());
    }
  }
  for (auto& message : ready) {
    if (!trusts(message.source)) continue;  // rejected by an earlier message of this batch
    if (message.handler >= handlers_.size() || !handlers_[message.handler]) {
      reject(message.source, "a message for handler " + std::to_string(message.handler) + ", which does not exist");
      continue;
    }
    try {
      handlers_[message.handler](message.source, std::move(message.payload));
    } catch (const MalformedMessage& e) {
      reject(message.source, "a malformed message for handler " + std::to_string(message.handler) + ": " + e.what());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rma: rank %d: active-message handler %u failed: %s\n", rank_, message.handler, e.what());
    }
  }
}

}  // namespace rma
