// The ledger behind RMA_MR_STRICT (fabric/local_registrations.hpp), on a real tcp domain: a
// buffer passes the check only with the descriptor of a live registration that covers it; a
// dropped descriptor, another registration's, one closed, or a buffer past its end, fail it.
// And where no descriptors are needed, nothing is registered and nothing is checked.
#include <rdma/fabric.h>

#include <vector>

#include "base/errors.hpp"
#include "check.hpp"
#include "fabric/fabric_endpoint.hpp"
#include "fabric/local_registrations.hpp"
#include "messages/message_assembler.hpp"

namespace {
using rma::fabric::LocalRegistrations;

struct TcpDomain {
  rma::fabric::Info info = rma::FabricEndpoint::find("tcp;ofi_rxm", "127.0.0.1");
  rma::fabric::Fabric fabric{info.get()};
  rma::fabric::Domain domain{fabric, info.get()};
};
}  // namespace

int main() {
  TcpDomain tcp;
  uint64_t mr_mode = tcp.info.get()->domain_attr->mr_mode;

  test::run("strict: a registration for a call covers its buffer, with its own descriptor only", [&] {
    LocalRegistrations local(tcp.domain, nullptr, mr_mode, /*strict=*/true);
    CHECK(local.descriptors() && local.strict());
    std::vector<std::byte> array(4096), other(4096);
    auto region = local.register_for_call(array.data(), array.size(), FI_WRITE);
    auto second = local.register_for_call(other.data(), other.size(), FI_READ);
    CHECK(region != nullptr && second != nullptr);
    local.check("fi_writemsg", array.data(), array.size(), region->desc());
    local.check("fi_writemsg", array.data() + 100, 200, region->desc());
    CHECK_THROWS(rma::RmaError, "fi_writemsg was given a 4096-byte buffer with no descriptor",
                 local.check("fi_writemsg", array.data(), array.size(), nullptr));
    CHECK_THROWS(rma::RmaError, "outside the registration its descriptor names",
                 local.check("fi_readmsg", other.data(), other.size(), region->desc()));
    CHECK_THROWS(rma::RmaError, "outside the registration its descriptor names",
                 local.check("fi_writemsg", array.data() + 1, array.size(), region->desc()));
    local.forget(*region);
    CHECK_THROWS(rma::RmaError, "the descriptor of no live registration",
                 local.check("fi_writemsg", array.data(), array.size(), region->desc()));
    local.check("fi_readmsg", other.data(), other.size(), second->desc());
  });

  test::run("strict: fragment buffers come from registered slabs, and go back to them", [&] {
    LocalRegistrations local(tcp.domain, nullptr, mr_mode, /*strict=*/true);
    std::vector<LocalRegistrations::Buffer> taken;
    for (int i = 0; i < 40; ++i) taken.push_back(local.take_fragment_buffer(rma::kFragmentBytes));  // 3 slabs
    for (auto& buffer : taken) {
      CHECK(buffer.desc != nullptr);
      local.check("fi_send", buffer.data, rma::kFragmentBytes, buffer.desc);
    }
    CHECK_THROWS(rma::RmaError, "outside the registration",
                 local.check("fi_send", taken[0].data, rma::kFragmentBytes + 1, taken[0].desc));
    CHECK_THROWS(rma::UsageError, "longer than a fragment", local.take_fragment_buffer(rma::kFragmentBytes + 1));
    std::byte* first = taken[0].data;
    void* desc = taken[0].desc;
    for (auto& buffer : taken) local.give_back(buffer.data);
    // Handed back with the descriptor of the slab it came from.
    bool found = false;
    for (int i = 0; i < 40; ++i) {
      auto buffer = local.take_fragment_buffer(100);
      if (buffer.data == first) found = buffer.desc == desc;
    }
    CHECK(found);
  });

  test::run("without FI_MR_LOCAL and not strict: no registration, no descriptor, no check", [&] {
    CHECK((mr_mode & FI_MR_LOCAL) == 0);  // (tcp needs none)
    LocalRegistrations local(tcp.domain, nullptr, mr_mode, /*strict=*/false);
    CHECK(!local.descriptors());
    std::vector<std::byte> array(64);
    CHECK(local.register_for_call(array.data(), array.size(), FI_WRITE) == nullptr);
    auto buffer = local.take_fragment_buffer(64);
    CHECK(buffer.desc == nullptr);
    local.check("fi_send", buffer.data, 64, nullptr);  // (nothing to check)
    local.give_back(buffer.data);
  });

  return test::finish();
}
