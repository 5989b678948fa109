// Where the user's program made the call being made: the file and line of the innermost Python
// frame outside rma and NumPy. The checker names it in its reports and the trace records it.
#pragma once

#include <string>

// "file.py:12" (the file's base name), or "?" when no frame is the user's; needs the GIL. The
// string lives as long as the process, one per place in the code (callers keep its address).
const std::string& call_site();
