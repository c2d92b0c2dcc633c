#!/usr/bin/env bash
# Sets up (packages, configure, build) and runs every test through ctest.
# Exits non-zero on any failure. GPU tests report "skipped" where there is no GPU.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j"$(nproc)" --timeout 900
