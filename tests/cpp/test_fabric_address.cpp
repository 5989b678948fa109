// A rank's address as the fabric transport publishes and reads it (FabricAddress): endpoint
// names of any length (they differ between ranks) or none, the inbox name, the length byte; and
// the malformed addresses connect() must refuse with UsageError rather than hand to the provider.
#include <string>

#include "base/errors.hpp"
#include "check.hpp"
#include "fabric/fabric_transport.hpp"

namespace {
using rma::FabricAddress;
using Bytes = std::vector<std::byte>;

Bytes bytes(const std::string& text) {
  auto begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}
}  // namespace

int main() {
  test::run("endpoint names of different lengths come back whole", [] {
    // shm names (a string and its NUL, as long as the process id or the node bound to makes
    // them), IPv4 and IPv6 socket addresses (16 and 28 bytes, zeros inside), one byte, 300.
    const std::vector<Bytes> names = {bytes(std::string("fi_shm://123:0:0") + '\0'),
                                      bytes(std::string("fi_shm://1234567:0:12") + '\0'),
                                      Bytes(16, std::byte{0}),
                                      Bytes(28, std::byte{7}),
                                      Bytes(1, std::byte{255}),
                                      Bytes(300, std::byte{1})};
    for (const std::string& inbox : {std::string(), std::string("/123-rma-inbox-0"), std::string(255, 'i')}) {
      std::vector<Bytes> addresses;
      for (const Bytes& name : names) addresses.push_back(FabricAddress{name, inbox}.encode());
      for (size_t r = 0; r < names.size(); ++r) {
        FabricAddress back = FabricAddress::decode(addresses[r], static_cast<int>(r));
        CHECK(back.endpoint == names[r]);
        CHECK(back.inbox == inbox);
      }
    }
  });

  test::run("a rank without an endpoint publishes its inbox alone", [] {
    // (A job on one host that needs no libfabric: FabricOptions::fabric.)
    for (const std::string& inbox : {std::string(), std::string("/123-rma-inbox-0"), std::string(255, 'i')}) {
      Bytes address = FabricAddress{{}, inbox}.encode();
      CHECK(address.size() == inbox.size() + 1);
      FabricAddress back = FabricAddress::decode(address, 0);
      CHECK(back.endpoint.empty());
      CHECK(back.inbox == inbox);
    }
  });

  test::run("what cannot be an address is refused", [] {
    CHECK_THROWS(rma::UsageError, "longer than 255", (FabricAddress{bytes("x"), std::string(256, 'i')}.encode()));
    Bytes short_by_one = FabricAddress{{}, "inbox"}.encode();
    short_by_one.erase(short_by_one.begin());  // the length byte says more than is there
    for (const Bytes& address : {Bytes{}, Bytes{std::byte{3}, std::byte{9}}, short_by_one}) {
      CHECK_THROWS(rma::UsageError, "rank 4's address is malformed", FabricAddress::decode(address, 4));
    }
  });

  return test::finish();
}
