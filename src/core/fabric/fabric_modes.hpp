// The modes a libfabric endpoint runs under, by name, for `python -m rma --info` and for a
// rank to say what it got: the registration modes (mr_mode) and the progress and threading
// models the domain offers, and what rma's completion queue asks for.
#pragma once

#include <rdma/fabric.h>

#include "base/transport.hpp"

namespace rma::fabric {

// The modes of `info` (what fi_getinfo offered, and what an endpoint opened with), in this
// order: provider, mr_mode (`mr_mode`, the domain's or what rma keeps to: FI_MR_LOCAL under
// RMA_MR_STRICT; "FI_MR_VIRT_ADDR|FI_MR_PROV_KEY", "none" for 0), data_progress,
// control_progress, threading, cq_format, cq_wait (`wait`: what the completion queue is asked
// for, handles.hpp). A value libfabric 1.17's headers do not name is written as a
// number.
ProviderModes modes_in_force(const fi_info* info, uint64_t mr_mode, CompletionWait wait);

}  // namespace rma::fabric
