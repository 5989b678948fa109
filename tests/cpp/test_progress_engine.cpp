// The progress engine's dozing and Transport::wait_until's sleeping, with a transport that has
// no fabric: what matters here is their side of the wake-up protocol, which the fabric watcher
// relies on. A watcher armed by
// before_doze() may find work at once and ring the bell before the engine's futex wait: that
// ring must end the doze, or the engine sleeps its longest doze (100 ms) while a peer's
// one-sided write waits for this rank's progress to land.
#include "runtime/progress_engine.hpp"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "check.hpp"

namespace {
using namespace std::chrono_literals;

// progress() never reports work (as for a peer's write, which shows this rank no completion);
// before_doze() rings the bell at once, as a watcher does that finds the fabric busy.
class RingingTransport final : public rma::Transport {
 public:
  RingingTransport() : Transport(0, 1) {}
  std::vector<std::byte> address() const override { return {std::byte{1}}; }
  void connect(const std::vector<std::vector<std::byte>>&, const rma::Topology&) override {}
  std::string provider() const override { return "none"; }
  bool knows_sources() const override { return true; }
  uint64_t dropped_from_outside() const override { return 0; }
  void send_frame_as_is(int, std::span<const std::byte>) override {}
  std::unique_ptr<rma::LocalRegion> register_region(void*, size_t) override { return nullptr; }
  void write(int, const void*, size_t, const rma::RemoteAddress&) override {}
  void read(int, void*, size_t, const rma::RemoteAddress&) override {}
  void set_handler(uint16_t, rma::ActiveMessageHandler) override {}
  void send(int, uint16_t, rma::MessageParts) override {}
  bool idle(int) override { return true; }
  void flush(int, const rma::Deadline&) override {}
  void flush_sends(const rma::Deadline&) override {}
  bool progress() override {
    ++passes;
    return false;
  }
  rma::Bell* incoming_bell() override { return &bell; }
  void before_doze() override {
    ++dozes;
    if (ring_when_armed) bell.ring();
  }
  bool doze_promptly() const override { return true; }

  rma::Bell bell;
  std::atomic<bool> ring_when_armed{true};
  std::atomic<long> passes{0}, dozes{0};
};
}  // namespace

int main() {
  test::run("a ring from the armed watcher ends the doze", [] {
    RingingTransport transport;
    rma::ProgressEngine engine(transport, /*max_sleep_us=*/1000);
    std::this_thread::sleep_for(500ms);
    engine.stop();
    // Every doze ends at once, so the engine arms again and again; a lost ring would make
    // each doze last 100 ms (at most 5 in half a second).
    CHECK(transport.dozes.load() >= 20);
  });

  test::run("without a ring the engine sleeps and polls seldom", [] {
    RingingTransport transport;
    transport.ring_when_armed = false;
    rma::ProgressEngine engine(transport, /*max_sleep_us=*/1000);
    std::this_thread::sleep_for(500ms);
    engine.stop();
    // An idle engine costs nothing: a few dozes of 100 ms, each with a pass or two.
    CHECK(transport.dozes.load() <= 10);
    CHECK(transport.passes.load() < 200);
  });

  test::run("an engine with traffic dozes soon after it ends (doze_promptly)", [] {
    RingingTransport transport;
    transport.ring_when_armed = false;
    auto started = std::chrono::steady_clock::now();
    rma::ProgressEngine engine(transport, /*max_sleep_us=*/1000);
    while (transport.dozes.load() == 0 && std::chrono::steady_clock::now() - started < 2s) {
      std::this_thread::sleep_for(1ms);
    }
    auto first_doze = std::chrono::steady_clock::now() - started;
    engine.stop();
    // Not after the 20 ms of timed sleeps of an engine whose peers all ring it.
    CHECK(transport.dozes.load() >= 1 && first_doze < 20ms);
  });
  test::run("a wait asks done() no more once it held, sleeping on the wait fd included", [] {
    // done() may do what it checks for (a post retried until the provider takes it): asked
    // again after it held, it would post twice.
    RingingTransport transport;
    transport.ring_when_armed = false;
    auto started = std::chrono::steady_clock::now();
    bool held = false;
    int asked_after = 0;
    auto done = [&] {
      if (held) ++asked_after;
      // It holds first when asked from the sleep on the bell (the caller counts as a sleeper),
      // past the backoff's spinning and yielding (500 us).
      held = held || (transport.bell.sleepers.load() > 0 && std::chrono::steady_clock::now() - started > 1ms);
      return held;
    };
    // Rings the bell now and then, as arriving traffic does, so the sleeps end.
    std::atomic<bool> stop{false};
    std::thread ringer([&] {
      while (!stop) {
        std::this_thread::sleep_for(1ms);
        transport.bell.ring();
      }
    });
    transport.wait_until(done, rma::Deadline::after(10), {}, [] { return std::string("test wait"); });
    stop = true;
    ringer.join();
    CHECK(held);
    CHECK(asked_after == 0);
  });
  return test::finish();
}
