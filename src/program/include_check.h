// check_includes: keeps a program's sources from reading files that are not
// the program's.  The compilers (NVRTC, the host compiler for host.cpp and
// the CPU backend) resolve an absolute path or one that climbs out with ".."
// wherever it leads, and a compile error quotes what they read; so every
// directive that names a file (#include, #include_next, #import, #embed,
// #pragma GCC dependency, __has_include) must name it with a literal,
// relative path without "..": it is then one of the program's files (beside
// the including file) or a system, CUDA or lizard header.  A name made by a
// macro is refused, as the check cannot see where it leads.
//
// The sources are read as the preprocessor reads them: line splices first,
// then comments and string literals (raw ones too), then directives, whose
// `#` may be spelt `%:`.  The error names the file, the line and the
// include, and never anything the include would have read.
//
//   Status st = check_includes(image.sources);
//   if (!st.ok()) return st;   // kCompileError: "kernel.cu:3: #include "/etc/passwd": ..."
#pragma once

#include <map>
#include <string>

#include "common/status.h"

namespace lizard {

// Checks every file of `sources` (name -> text).
Status check_includes(const std::map<std::string, std::string>& sources);

// Checks one file; `name` names it in the message.
Status check_includes_of(const std::string& name, const std::string& text);

}  // namespace lizard
