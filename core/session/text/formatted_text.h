// printf's text as a string, as long as it needs: for a sentence built before it is printed,
// drawn or measured. The command line (app/output/printed_text.h) and the window
// (gui/drawing/wrapped_text.h) both write with it.
#pragma once

#include <cstdarg>
#include <string>

namespace mirrorlab::core {

[[gnu::format(printf, 1, 2)]] std::string formatted(const char* format, ...);

// The same with its arguments in a va_list, for a function that takes printf's own (...): `args`
// is read from a copy, so the caller still owns it and ends it.
[[gnu::format(printf, 1, 0)]] std::string vformatted(const char* format, va_list args);

}  // namespace mirrorlab::core
