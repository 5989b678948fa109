// The transport over libfabric RDM endpoints (providers shm, net and tcp;ofi_rxm), with messages
// between the ranks of one host through their shared-memory inboxes instead.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/transport.hpp"

namespace rma {

struct FabricOptions {
  // Open the libfabric endpoint. false: every peer is on this host and every message takes the
  // inboxes (inbox_messages must hold), data moves through shared memory and the inboxes
  // (FabricRoute sends as messages what the fabric would write), and libfabric is never
  // loaded: its start-up (~0.2 s per process, libfabric_library.hpp) is the largest part of a
  // rank's when nothing needs it. connect() refuses a topology of several hosts then.
  bool fabric = true;
  std::string provider;  // a libfabric provider name, e.g. "shm" or "tcp;ofi_rxm"
  std::string node;      // address to bind ("" = provider default), e.g. "127.0.0.1" for tcp
  int rank = 0;
  int size = 1;
  double timeout_seconds = 300;  // deadline of a post or a send that finds no room
  // Active messages to the ranks of this host through their shared-memory inboxes (false:
  // through the fabric too, as to other hosts; RMA_TRANSPORT=libfabric).
  bool inbox_messages = true;
  // Open the completion queue with a wait fd (providers that have one: not shm), so that an
  // idle rank with peers on other hosts sleeps until the network brings something
  // (fabric/fabric_watcher.hpp). It costs the provider a signal per completion: about 10 us
  // more per message round trip over tcp, so only jobs that span hosts ask for it.
  bool fabric_sleep = false;
  // Connect across hosts even when the provider cannot tell a message's source (FI_SOURCE):
  // the user trusts every machine that reaches the network. Without it, connect refuses.
  bool trust_network = false;
  // Descriptors for every local buffer handed to libfabric, each data-transfer call checked
  // for them, whatever the provider needs (RMA_MR_STRICT: fabric/local_registrations.hpp).
  bool mr_strict = false;
};

// A rank's address as this transport publishes it (Transport::address) and reads it
// (Transport::connect): the endpoint's name (none from a rank that opened no endpoint), then
// the inbox's name, then one byte holding the inbox name's length. Endpoint names are the
// provider's business, and their length differs between ranks (shm's embed the process id, or
// the node bound to; tcp's are IPv4 or IPv6 socket addresses): an address is read from its
// end, and each name goes into the address vector on its own (fabric::AddressVector::insert).
struct FabricAddress {
  std::vector<std::byte> endpoint;
  std::string inbox;

  // Throws UsageError for an inbox name longer than 255 bytes.
  std::vector<std::byte> encode() const;
  // Throws UsageError naming `rank` when `address` is malformed: shorter than the inbox name
  // it states, or without the length byte.
  static FabricAddress decode(std::span<const std::byte> address, int rank);
};

// Opens this rank's endpoint and inbox; connect() makes the job reachable. Throws FabricError
// when the provider cannot be used, RmaError when the inbox cannot be made. connect() throws
// UsageError for a job that spans hosts through a provider that cannot tell where messages
// come from, unless options.trust_network, or without an endpoint (options.fabric), and for
// ranks that differ in having one.
std::unique_ptr<Transport> open_fabric_transport(const FabricOptions& options);

}  // namespace rma
