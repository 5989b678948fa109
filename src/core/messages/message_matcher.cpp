#include "messages/message_matcher.hpp"

#include <algorithm>
#include <iterator>
#include <utility>

namespace rma {

bool MessageMatcher::matches(const Receive& receive, int source, int32_t tag) {
  bool source_fits = receive.source == kAnySource || receive.source == source;
  bool tag_fits = receive.tag == kAnyUserTag ? tag >= 0 : receive.tag == tag;
  return source_fits && tag_fits;
}

void MessageMatcher::queue_unexpected(Message&& message, uint32_t context) {
  auto& queue = unexpected_[Key{context, message.source, message.tag}];
  // In arrival order: a withdrawn receive's message goes back before later ones. Looked for
  // from the back, where a new message goes: a queue of many unexpected messages (a peer that
  // sends while this rank does not receive) would otherwise cost a scan of it per arrival.
  auto place = queue.end();
  while (place != queue.begin() && std::prev(place)->arrival > message.arrival) --place;
  queue.insert(place, std::move(message));
}

void MessageMatcher::deliver(uint32_t context, int source, int32_t tag, std::vector<std::byte>&& data,
                             std::optional<uint64_t> synchronous) {
  std::lock_guard lock(mutex_);
  Message message{source, tag, std::move(data), arrivals_++, synchronous};
  if (tag >= 0) {  // only user messages can match a posted receive
    for (auto receive = posted_.begin(); receive != posted_.end(); ++receive) {
      if ((*receive)->context == context && matches(**receive, source, tag)) {
        matched(message, context);
        (*receive)->message = std::move(message);
        posted_.erase(receive);
        return;
      }
    }
  }
  queue_unexpected(std::move(message), context);
}

void MessageMatcher::matched(const Message& message, uint32_t context) {
  if (message.synchronous) acks_.push_back(Ack{context, message.source, *message.synchronous});
}

MessageMatcher::Queues::iterator MessageMatcher::oldest(uint32_t context, int source, int32_t tag) {
  Receive wanted{context, source, tag, std::nullopt};
  // The front of each queue of this context is its oldest; the oldest of the fronts that match.
  auto found = unexpected_.end();
  for (auto queue =
           unexpected_.lower_bound(Key{context, std::numeric_limits<int>::min(), std::numeric_limits<int32_t>::min()});
       queue != unexpected_.end() && std::get<0>(queue->first) == context; ++queue) {
    const Message& front = queue->second.front();
    if (matches(wanted, front.source, front.tag) &&
        (found == unexpected_.end() || front.arrival < found->second.front().arrival)) {
      found = queue;
    }
  }
  return found;
}

Message MessageMatcher::pop_matched(Queues::iterator queue, uint32_t context) {
  Message message = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) unexpected_.erase(queue);
  matched(message, context);
  return message;
}

std::optional<std::vector<std::byte>> MessageMatcher::take(uint32_t context, int source, int32_t tag) {
  std::lock_guard lock(mutex_);
  auto queue = unexpected_.find(Key{context, source, tag});
  if (queue == unexpected_.end()) return std::nullopt;
  std::vector<std::byte> data = std::move(queue->second.front().data);
  queue->second.pop_front();
  if (queue->second.empty()) unexpected_.erase(queue);
  return data;
}

std::shared_ptr<MessageMatcher::Receive> MessageMatcher::post(uint32_t context, int source, int32_t tag) {
  auto receive = std::make_shared<Receive>(Receive{context, source, tag, std::nullopt});
  std::lock_guard lock(mutex_);
  auto queue = oldest(context, source, tag);
  if (queue != unexpected_.end()) {
    receive->message = pop_matched(queue, context);
  } else {
    posted_.push_back(receive);
  }
  return receive;
}

bool MessageMatcher::filled(const Receive& receive) {
  std::lock_guard lock(mutex_);
  return receive.message.has_value();
}

std::optional<Message> MessageMatcher::collect(Receive& receive) {
  std::lock_guard lock(mutex_);
  std::optional<Message> message = std::move(receive.message);
  receive.message.reset();
  return message;
}

void MessageMatcher::withdraw(const std::shared_ptr<Receive>& receive) {
  std::lock_guard lock(mutex_);
  posted_.remove(receive);
  if (receive->message) {
    receive->message->synchronous.reset();  // (its acknowledgement is already owed)
    queue_unexpected(std::move(*receive->message), receive->context);
    receive->message.reset();
  }
}

bool MessageMatcher::cancel(const std::shared_ptr<Receive>& receive) {
  std::lock_guard lock(mutex_);
  if (receive->message) return false;
  posted_.remove(receive);
  return true;
}

std::optional<MessageMatcher::Peek> MessageMatcher::peek(uint32_t context, int source, int32_t tag) {
  std::lock_guard lock(mutex_);
  auto queue = oldest(context, source, tag);
  if (queue == unexpected_.end()) return std::nullopt;
  const Message& front = queue->second.front();
  return Peek{front.source, front.tag, front.data.size()};
}

std::optional<Message> MessageMatcher::take_matching(uint32_t context, int source, int32_t tag) {
  std::lock_guard lock(mutex_);
  auto queue = oldest(context, source, tag);
  if (queue == unexpected_.end()) return std::nullopt;
  return pop_matched(queue, context);
}

std::vector<MessageMatcher::Ack> MessageMatcher::take_acks() {
  std::lock_guard lock(mutex_);
  return std::exchange(acks_, {});
}

}  // namespace rma
