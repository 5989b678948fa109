// Interrupting blocking calls. A rank blocked in a core wait (a barrier, a lock, a fence) runs
// C++ without the GIL, where Python's SIGINT handler cannot act until the wait ends. Chaining a
// C handler in front of Python's sets a flag that every wait checks: the wait then throws
// Interrupted, and the bindings let Python run its own handler (KeyboardInterrupt, usually).
#pragma once

namespace rma {

// Installs the chained SIGINT handler, unless SIGINT is ignored or left at its default. Call
// after Python installed its handlers. A later signal.signal(SIGINT, ...) (asyncio.run does
// one) puts Python's handler back in front of ours; calling again re-chains, which every long
// wait does as it begins to sleep. Any thread; does nothing when chained already.
void chain_interrupt_handler();
// How many SIGINTs arrived so far. A wait notes it when it begins and ends when it changes, so
// only a signal that arrives during the wait interrupts it (an earlier one was Python's to handle).
unsigned long interrupt_count() noexcept;

}  // namespace rma
