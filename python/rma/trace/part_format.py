"""What a rank's part of a trace holds: the agreement between its writer
(rma.trace.recording) and its reader (rma.trace.merge), which loads no extension (rmarun
merges).

A part is a JSON object: {"rma_trace_part": PART_VERSION, "rank", "size", "host", "offset_ns"
(added to this rank's clock to read rank 0's), "clock_error_ns" (at most how far offset_ns is
off), "dropped", "capacity", "records"}; each record
is [kind, name, site, text, begin_ns, end_ns, bytes, object, target, thread] with kind an index
into KINDS (src/core/base/trace.hpp's Kind, in its order).
"""

PART_VERSION = 1

KINDS = ("call", "collective", "wait", "epoch_open", "epoch_close", "error", "message")
