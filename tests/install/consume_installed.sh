#!/usr/bin/env bash
# attnjit as a package: installs the already-built tree into a fresh prefix, moves the prefix (an
# installed tree must not depend on where it was installed), checks what is there, then builds the
# examples outside the source tree against it, once through find_package(attnjit) and once
# through pkg-config, and runs them. With FAKE_DRIVER, the CMake-built examples run once more on
# the fake device, through their device-memory path.
#
# Usage: consume_installed.sh CMAKE VERSION SOVERSION BUILD_DIR SOURCE_DIR SCRATCH_DIR [FAKE_DRIVER]
set -euo pipefail
cmake=$1 version=$2 soversion=$3 build=$4 src=$5 scratch=$6 fake_driver=${7:-}
fail() { echo "FAILED: $*" >&2; exit 1; }

rm -rf "$scratch"
mkdir -p "$scratch"
"$cmake" --install "$build" --prefix "$scratch/staging" >"$scratch/install.log" ||
  fail "cmake --install: $(cat "$scratch/install.log")"
mv "$scratch/staging" "$scratch/prefix"
prefix=$scratch/prefix
export ATTNJIT_CACHE_DIR=$scratch/cache ATTNJIT_LOG_LEVEL=error

# --- What is installed, and nothing else.
expected="bin/attnjit
include/attnjit/attnjit.h
include/attnjit/attnjit.hpp
lib/cmake/attnjit/attnjitConfig.cmake
lib/cmake/attnjit/attnjitConfigVersion.cmake
lib/cmake/attnjit/attnjitTargets-relwithdebinfo.cmake
lib/cmake/attnjit/attnjitTargets.cmake
lib/libattnjit.so
lib/libattnjit.so.$soversion
lib/libattnjit.so.$version
lib/pkgconfig/attnjit.pc"
actual=$(cd "$prefix" && find . -type f -o -type l | sed 's|^\./||' | sort |
         sed 's|attnjitTargets-[a-z]*\.cmake|attnjitTargets-relwithdebinfo.cmake|')
[[ "$actual" == "$expected" ]] || fail "installed files differ from the expected list:
$(diff <(echo "$expected") <(echo "$actual"))"

# --- The SONAME and its links: libattnjit.so -> .so.SOVERSION -> .so.VERSION (the file).
library=$prefix/lib/libattnjit.so.$version
[[ $(readlink "$prefix/lib/libattnjit.so") == "libattnjit.so.$soversion" ]] || fail "dev link"
[[ $(readlink "$prefix/lib/libattnjit.so.$soversion") == "libattnjit.so.$version" ]] ||
  fail "SONAME link"
readelf -d "$library" | grep SONAME | grep -q -F "[libattnjit.so.$soversion]" ||
  fail "SONAME: $(readelf -d "$library" | grep SONAME)"

# --- Relocatable: no build or source path in any installed file. Debug info names the compile
# directories (strip it with `cmake --install --strip`), so ELF files are checked without it.
for file in $(cd "$prefix" && find . -type f); do
  text=$prefix/$file
  if [[ $(head -c 4 "$text") == $'\x7fELF' ]]; then
    objcopy --strip-debug "$text" "$scratch/stripped"
    text=$scratch/stripped
  fi
  for path in "$(realpath "$build")" "$(realpath "$src")"; do
    if grep -q -F "$path" "$text"; then fail "$file holds the path $path"; fi
  done
done
readelf -d "$prefix/bin/attnjit" | grep -q 'R.*PATH.*\[\$ORIGIN/\.\./lib\]' ||
  fail "bin/attnjit RUNPATH: $(readelf -d "$prefix/bin/attnjit" | grep PATH)"
# The CLI is a client of the library: it needs libattnjit.so, and loads the installed one.
readelf -d "$prefix/bin/attnjit" | grep NEEDED | grep -q -F "[libattnjit.so.$soversion]" ||
  fail "bin/attnjit does not link libattnjit.so: $(readelf -d "$prefix/bin/attnjit" | grep NEEDED)"
loaded=$(ldd "$prefix/bin/attnjit" | awk '/libattnjit\.so/ {print $3}')
[[ -n "$loaded" && $(realpath "$loaded") == $(realpath "$prefix/lib/libattnjit.so.$soversion") ]] ||
  fail "bin/attnjit does not load the installed libattnjit.so: $(ldd "$prefix/bin/attnjit")"
[[ $("$prefix/bin/attnjit" --version) == *"$version"* ]] || fail "bin/attnjit --version"

# --- The public headers need nothing but the standard library: no fmt, spdlog, nlohmann or CUDA.
echo '#include <attnjit/attnjit.h>' >"$scratch/header.c"
echo '#include <attnjit/attnjit.hpp>' >"$scratch/header.cpp"
cc -std=c99 -pedantic -Werror -H -fsyntax-only -I"$prefix/include" "$scratch/header.c" \
  2>"$scratch/header.c.log" || fail "attnjit.h: $(cat "$scratch/header.c.log")"
c++ -std=c++17 -pedantic -Werror -H -fsyntax-only -I"$prefix/include" "$scratch/header.cpp" \
  2>"$scratch/header.cpp.log" || fail "attnjit.hpp: $(cat "$scratch/header.cpp.log")"
if grep -E -i 'fmt|spdlog|nlohmann|cuda' "$scratch"/header.c*.log; then
  fail "a public header includes a dependency's header"
fi

# --- The examples, out of tree. Each prints its backend and whether every row matched.
expect_output() {  # expect_output NAME OUTPUT PATTERN...
  local name=$1 out=$2
  shift 2
  for pattern in "$@"; do
    grep -q -E "$pattern" <<<"$out" || fail "$name: no '$pattern' in:
$out"
  done
  echo "$name: ok"
}
c_patterns=("^attnjit ${version//./\\.}, backend BACKEND$" "^row 16: keys  1\.\.16" "^all 128 rows match$")
cpp_patterns=("^attnjit ${version//./\\.}, backend BACKEND$" "^W=8 +cap=3\.0: every row matches$"
              "^W=40 +cap=3\.0: every row matches$")
run_example() {  # run_example NAME BINARY BACKEND PATTERNS...
  local name=$1 binary=$2 backend=$3 out
  shift 3
  out=$("$binary" 2>&1) || fail "$name exited non-zero:
$out"
  expect_output "$name" "$out" "${@/BACKEND/$backend}"
}

for lang in c cpp; do
  "$cmake" -S "$src/examples/$lang" -B "$scratch/$lang-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$scratch/$lang-cmake.log" 2>&1 || fail "configure examples/$lang: $(cat "$scratch/$lang-cmake.log")"
  "$cmake" --build "$scratch/$lang-cmake" >>"$scratch/$lang-cmake.log" 2>&1 ||
    fail "build examples/$lang: $(cat "$scratch/$lang-cmake.log")"
  cp -r "$src/examples/$lang" "$scratch/$lang-pkgconfig"
  rm -f "$scratch/$lang-pkgconfig/sliding_softcap"
  PKG_CONFIG_PATH=$prefix/lib/pkgconfig make -C "$scratch/$lang-pkgconfig" \
    >"$scratch/$lang-make.log" 2>&1 || fail "make examples/$lang: $(cat "$scratch/$lang-make.log")"
done
run_example "C, find_package" "$scratch/c-cmake/sliding_softcap" cpu "${c_patterns[@]}"
run_example "C, pkg-config" "$scratch/c-pkgconfig/sliding_softcap" cpu "${c_patterns[@]}"
run_example "C++, find_package" "$scratch/cpp-cmake/sliding_softcap" cpu "${cpp_patterns[@]}"
run_example "C++, pkg-config" "$scratch/cpp-pkgconfig/sliding_softcap" cpu "${cpp_patterns[@]}"

if [[ -n "$fake_driver" ]]; then
  export ATTNJIT_CUDA_DRIVER=$fake_driver
  run_example "C on the fake device" "$scratch/c-cmake/sliding_softcap" cuda "${c_patterns[@]}"
  run_example "C++ on the fake device" "$scratch/cpp-cmake/sliding_softcap" cuda "${cpp_patterns[@]}"
fi
echo PASS
