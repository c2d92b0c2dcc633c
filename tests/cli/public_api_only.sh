#!/bin/sh
# The CLI is a client of the public API, like any host program: its sources include only
# attnjit/attnjit.h, attnjit/attnjit.hpp, the test kit's public headers (which include nothing
# else of attnjit) and its own files; its compile commands cannot reach src/; and the binary links
# libattnjit.so.
# Usage: public_api_only.sh SOURCE_DIR BUILD_DIR ATTNJIT_BINARY
set -u
src=$1 build=$2 bin=$3
fail() { echo "FAILED: $*" >&2; exit 1; }

# Every quoted include of the CLI: its own file, the public headers, or the kit's public part.
for file in "$src"/tools/cli/*.cpp "$src"/tools/cli/*.hpp; do
  grep -o '^#include "[^"]*"' "$file" | sed 's/^#include "\(.*\)"$/\1/' | while read -r header; do
    case $header in
      attnjit/attnjit.h | attnjit/attnjit.hpp) ;;
      testkit/internal/*) echo "$file includes $header" ;;
      testkit/*) [ -f "$src/$header" ] || echo "$file includes $header, which is not in testkit/" ;;
      */*) echo "$file includes $header" ;;
      *) [ -f "$src/tools/cli/$header" ] || echo "$file includes $header, not a CLI file" ;;
    esac
  done
done >"$build/cli-includes.txt"
[ -s "$build/cli-includes.txt" ] && fail "the CLI includes more than the public API:
$(cat "$build/cli-includes.txt")"

# The kit's public headers, which the CLI includes, include only the public API and each other.
for file in "$src"/testkit/*.hpp; do
  grep -o '^#include "[^"]*"' "$file" | sed 's/^#include "\(.*\)"$/\1/' | while read -r header; do
    case $header in
      attnjit/attnjit.h | attnjit/attnjit.hpp) ;;
      testkit/internal/*) echo "$file includes $header" ;;
      testkit/*) ;;
      *) echo "$file includes $header" ;;
    esac
  done
done >"$build/kit-includes.txt"
[ -s "$build/kit-includes.txt" ] && fail "a public kit header includes more than the public API:
$(cat "$build/kit-includes.txt")"

# No compile command of a CLI source has src/ or kernels_templates/ on its include path.
commands=$build/compile_commands.json
[ -f "$commands" ] || fail "no $commands (CMAKE_EXPORT_COMPILE_COMMANDS)"
grep -F "$src/tools/cli/" "$commands" | grep '"command"' >"$build/cli-commands.txt"
[ -s "$build/cli-commands.txt" ] || fail "no compile command for tools/cli in $commands"
if grep -E -e "-I *$src/(src|kernels_templates)( |\")" "$build/cli-commands.txt" >/dev/null; then
  fail "a CLI source is compiled with src/ on its include path"
fi

readelf -d "$bin" | grep NEEDED | grep -q 'libattnjit\.so' ||
  fail "the CLI does not link libattnjit.so: $(readelf -d "$bin" | grep NEEDED)"
echo PASS
