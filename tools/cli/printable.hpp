// Text from files (manifests, cache sidecars, directory listings) made safe for a terminal by the
// library's rule (attnjit_printable): any byte outside printable ASCII becomes \xNN.
#pragma once

#include <string>

namespace attnjit::cli {

std::string printable(const std::string& text);
// printable, but line breaks stay: for messages of several lines (a diagnostic and its caret).
std::string printable_lines(const std::string& text);

}  // namespace attnjit::cli
