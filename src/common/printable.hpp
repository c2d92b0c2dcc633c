// Text from files (manifests, cache sidecars, directory listings) made safe for a terminal: any
// byte outside printable ASCII becomes \xNN, so a name cannot carry a terminal escape sequence,
// a carriage return that overwrites a line, or a fake extra line. The same rule as the
// expression diagnostics' ("unexpected character '\x1b'").
#pragma once

#include <string>
#include <string_view>

namespace attnjit {

std::string printable(std::string_view text);

// printable, but line breaks stay: for messages of several lines (a diagnostic and its caret, a
// compiler log).
std::string printable_lines(std::string_view text);

}  // namespace attnjit
