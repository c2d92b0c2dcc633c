#!/usr/bin/env bash
# The main job, end to end: set up (packages, configure, build), prewarm the kernel cache with
# the standard variants of cache/ (a second run shows them already cached), then parse, lower,
# compile or load, and run each variant (GPU if present, else the CPU reference) in a table.
set -euo pipefail
SETUP_TARGETS=(attnjit attnjit_cli)  # the library and the CLI, not the tests: a fast first run
source "$(dirname "$0")/setup.sh"
ATTNJIT="$BUILD_DIR/tools/cli/attnjit"

if "$ATTNJIT" prewarm --help >/dev/null 2>&1 && [[ -e /dev/nvidia0 ]]; then
  "$ATTNJIT" prewarm "$@"                       # the local GPU's arch
else
  "$ATTNJIT" prewarm --arch sm_80,sm_90a "$@"   # no GPU: build a cache to ship
fi
echo
"$ATTNJIT" demo
