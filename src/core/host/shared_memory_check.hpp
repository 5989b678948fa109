// Whether this host lets rma's ranks share memory, asked of the system the way the ranks use
// it, for `python -m rma --info`: a segment in /dev/shm (what windows of allocate, the inboxes
// and the bells live in), and reading another process's memory (process_vm_readv: create()
// windows and the large allreduce between the ranks of a host).
#pragma once

#include <string>

namespace rma {

// "" when a small shared segment can be made, mapped and removed (SharedSegment::create_owned);
// else the error that making it raised.
std::string shared_segment_problem();

// "" when the kernel lets a process read the memory of another process of this user that is
// not its descendant, as a rank reads its peers'; else why not. Asked by a child process of
// this one reading this one (process_vm_readv), so the ptrace rules of the kernel
// (kernel.yama.ptrace_scope), a seccomp filter and this process's dumpable flag all count.
std::string peer_read_problem();

}  // namespace rma
