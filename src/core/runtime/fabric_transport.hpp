// The transport over libfabric RDM endpoints (providers shm and tcp;ofi_rxm), with messages
// between the ranks of one host through their shared-memory inboxes instead.
#pragma once

#include <memory>
#include <string>

#include "runtime/transport.hpp"

namespace rma {

struct FabricOptions {
  std::string provider;  // a libfabric provider name, e.g. "shm" or "tcp;ofi_rxm"
  std::string node;      // address to bind ("" = provider default), e.g. "127.0.0.1" for tcp
  int rank = 0;
  int size = 1;
  double timeout_seconds = 300;  // deadline of a post or a send that finds no room
  // Active messages to the ranks of this host through their shared-memory inboxes (false:
  // through the fabric too, as to other hosts; RMA_TRANSPORT=libfabric).
  bool inbox_messages = true;
};

// Opens this rank's endpoint and inbox; connect() makes the job reachable. Throws FabricError
// when the provider cannot be used, RmaError when the inbox cannot be made.
std::unique_ptr<Transport> open_fabric_transport(const FabricOptions& options);

}  // namespace rma
