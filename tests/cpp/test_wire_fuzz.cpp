// Fuzz of everything a rank reads from the wire, against a live window (CI runs this under
// AddressSanitizer and UndefinedBehaviorSanitizer): random bytes, and structure-aware messages
// that are right in every field but one (wrapping offsets, short and long payloads, unknown
// kinds, ops and types, regions whose walk overflows). Every malformed message must be refused
// with MalformedMessage before a byte of the window changes; nothing may touch memory outside
// the window (guard bytes around it, and the sanitizers).
#include <cstring>
#include <memory>
#include <random>

#include "base/errors.hpp"
#include "base/wire.hpp"
#include "check.hpp"
#include "check/access.hpp"
#include "elements/reduce.hpp"
#include "elements/region.hpp"
#include "messages/message_assembler.hpp"
#include "runtime/runtime.hpp"
#include "window/route_fabric.hpp"
#include "window/window.hpp"

namespace {
using Bytes = std::vector<std::byte>;
using rma::ElementType;
using rma::ReduceOp;
using rma::Region;
using rma::window_wire::Kind;

constexpr size_t kWindowBytes = 256;
constexpr size_t kGuardBytes = 4096;
constexpr std::byte kPattern{0x5a}, kGuard{0xcc};
constexpr int kRounds = 3000;

std::mt19937_64 random_engine(20261128);
uint64_t draw(uint64_t below) { return below == 0 ? random_engine() : random_engine() % below; }

Bytes random_bytes(size_t length) {
  Bytes out(length);
  for (auto& b : out) b = static_cast<std::byte>(draw(256));
  return out;
}

// A window's memory with guard bytes on both sides.
struct Memory {
  Bytes bytes = Bytes(kGuardBytes + kWindowBytes + kGuardBytes, kGuard);
  Memory() { std::memset(window(), static_cast<int>(kPattern), kWindowBytes); }
  std::byte* window() { return bytes.data() + kGuardBytes; }
  bool window_unchanged() {
    for (size_t i = 0; i < kWindowBytes; ++i)
      if (window()[i] != kPattern) return false;
    return true;
  }
  bool guards_intact() {
    for (size_t i = 0; i < kGuardBytes; ++i)
      if (bytes[i] != kGuard || bytes[kGuardBytes + kWindowBytes + i] != kGuard) return false;
    return true;
  }
};

// A valid apply request inside the window: kind, op, type, a region, and its data.
struct Apply {
  Kind kind;
  ReduceOp op;
  ElementType type;
  uint64_t offset;
  uint32_t element;
  std::vector<rma::RegionDim> dims;
  size_t data_bytes;

  static Apply valid() {
    static const ElementType kTypes[] = {ElementType::Int32, ElementType::Int64, ElementType::Float64,
                                         ElementType::UInt8};
    Apply a{};
    a.kind = static_cast<Kind>(draw(4));
    a.type = a.kind == Kind::Copy ? ElementType::Bytes : kTypes[draw(4)];
    a.op = a.kind == Kind::Copy || a.kind == Kind::CompareSwap ? ReduceOp::Replace : ReduceOp::Sum;
    a.element = a.kind == Kind::Copy ? 8 : static_cast<uint32_t>(rma::element_size(a.type));
    uint64_t count = a.kind == Kind::CompareSwap ? 1 : 1 + draw(4);
    a.offset = a.element * draw(kWindowBytes / a.element - 4 * 2);
    a.dims = {{count, static_cast<int64_t>(a.element * (1 + draw(2)))}};
    uint64_t bytes = count * a.element;
    a.data_bytes = a.kind == Kind::CompareSwap ? 2 * bytes : bytes;
    return a;
  }

  Bytes encode(uint32_t window_id) const {
    Bytes out = rma::window_wire::header(window_id, draw(0));
    rma::wire::append<uint8_t>(out, static_cast<uint8_t>(kind));
    rma::wire::append<uint8_t>(out, static_cast<uint8_t>(op));
    rma::wire::append<uint8_t>(out, static_cast<uint8_t>(type));
    rma::wire::append<uint64_t>(out, offset);
    rma::wire::append<uint32_t>(out, element);
    rma::wire::append<uint32_t>(out, static_cast<uint32_t>(dims.size()));
    for (const auto& dim : dims) {
      rma::wire::append<uint64_t>(out, dim.count);
      rma::wire::append<int64_t>(out, dim.stride);
    }
    out.insert(out.end(), data_bytes, kPattern);
    return out;
  }
};

// One field made wrong: each of these is a message no rank of the job sends.
Apply corrupt(Apply a, int which) {
  static const uint64_t kOffsets[] = {~uint64_t{0}, ~uint64_t{0} - 7, uint64_t{1} << 63, uint64_t{1} << 62};
  static const uint64_t kPast[] = {kWindowBytes, kWindowBytes - 1, uint64_t{1} << 40, (uint64_t{1} << 62) - 4096};
  switch (which) {
    case 0: a.kind = static_cast<Kind>(4 + draw(252)); break;
    case 1: a.op = static_cast<ReduceOp>(12 + draw(244)); break;
    case 2: a.type = static_cast<ElementType>(15 + draw(241)); break;
    case 3: a.data_bytes = a.data_bytes + 1 + draw(16); break;
    case 4: a.data_bytes = a.data_bytes == 0 ? 1 : draw(a.data_bytes); break;
    case 5: a.element = 0; break;
    case 6: a.dims.resize(Region::kMaxDims + 1 + draw(8), {2, 8}); break;
    case 7: a.dims = {{uint64_t{1} << (40 + draw(24)), static_cast<int64_t>(a.element) << 20}}; break;
    case 8: a.dims = {{2 + draw(8), INT64_MIN + static_cast<int64_t>(draw(8))}}; break;
    case 9: a.offset = kOffsets[draw(4)]; break;
    default: a.offset = kPast[draw(4)]; break;  // inside what a region may say, past the window
  }
  return a;
}
constexpr int kCorruptions = 10;  // (and an offset past the window: not malformed, see below)

}  // namespace

int main() {
  rma::RuntimeOptions options;
  options.provider = "shm";
  options.transport = rma::TransportSetting::Libfabric;  // a window served by messages, as across hosts
  auto runtime = std::make_shared<rma::Runtime>(options);
  runtime->connect({runtime->address()}, {"here"});
  auto world = runtime->world();
  Memory memory;
  auto window = rma::Window::create(*world, memory.window(), kWindowBytes, "fuzzed window");
  uint32_t id = window->id();

  test::run("every apply request wrong in one field is refused, the window untouched", [&] {
    int refused = 0;
    for (int round = 0; round < kRounds; ++round) {
      int which = static_cast<int>(draw(kCorruptions));
      Bytes message = corrupt(Apply::valid(), which).encode(id);
      bool thrown = false;
      try {
        window->serve_apply(0, message, 4);
      } catch (const rma::MalformedMessage&) {
        thrown = true;
      }
      if (thrown) ++refused;
      CHECK(memory.window_unchanged());
      CHECK(memory.guards_intact());
    }
    CHECK(refused == kRounds);
    // An offset past the window is not malformed: the target refuses the region (a detach can
    // make an origin's region stale) and says so in its reply (here to itself, which waits for
    // none: a line on stderr each).
    for (int round = 0; round < 10; ++round) {
      window->serve_apply(0, corrupt(Apply::valid(), kCorruptions).encode(id), 4);
      CHECK(memory.window_unchanged());
    }
  });

  test::run("random bytes to every handler: no crash, nothing outside the window", [&] {
    using Serve = void (rma::Window::*)(int, std::span<const std::byte>, size_t);
    const Serve serves[] = {&rma::Window::serve_apply,   &rma::Window::serve_read, &rma::Window::note_post,
                            &rma::Window::note_complete, &rma::Window::serve_lock, &rma::Window::serve_unlock,
                            &rma::Window::note_grant};
    for (int round = 0; round < kRounds; ++round) {
      Bytes message = random_bytes(draw(200));
      try {
        (window.get()->*serves[draw(std::size(serves))])(0, message, 0);
      } catch (const rma::RmaError&) {
      }
      CHECK(memory.guards_intact());
    }
  });

  test::run("regions: random bytes parse to a region that cannot overflow, or are refused", [&] {
    int parsed = 0;
    for (int round = 0; round < kRounds * 10; ++round) {
      Bytes data = random_bytes(16 + draw(64));
      // Small counts and strides often enough to parse now and then.
      if (draw(2) == 0) {
        for (size_t i = 16; i + 16 <= data.size(); i += 16) data[i] = std::byte{0}, data[i + 7] = std::byte{0};
        std::memset(data.data() + 8, 0, 8);
        data[8] = std::byte{8};
        data[12] = static_cast<std::byte>(draw(4));
      }
      size_t position = 0;
      try {
        Region region = Region::parse(data, position);
        auto [low, high] = region.extent();
        CHECK(low <= high);
        CHECK(region.bytes() <= (uint64_t{1} << 62));
        ++parsed;
      } catch (const rma::MalformedMessage&) {
      }
    }
    CHECK(parsed > 0);
  });

  test::run("the checker's messages of accesses: random bytes are refused", [] {
    for (int round = 0; round < kRounds; ++round) {
      Bytes data = random_bytes(draw(300));
      try {
        (void)rma::check::decode(data);
      } catch (const rma::RmaError&) {
      }
    }
  });

  test::run("fragments: random headers never write outside a message", [] {
    rma::MessageAssembler assembler(4);
    std::vector<rma::ActiveMessage> ready;
    int refused = 0;
    for (int round = 0; round < kRounds * 10; ++round) {
      rma::FragmentHeader header{static_cast<uint32_t>(draw(6)),    10, 0, draw(6), draw(3) == 0 ? draw(0) : draw(300),
                                 draw(3) == 0 ? draw(0) : draw(400)};
      try {
        assembler.add(header, random_bytes(draw(200)), ready);
      } catch (const rma::MalformedMessage&) {
        ++refused;
      }
    }
    for (const auto& message : ready) CHECK(message.source < 4);
    CHECK(refused > 0);
  });

  window->free();
  runtime->finalize(true);
  return test::finish();
}
