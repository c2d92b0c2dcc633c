#!/bin/sh
# Runs a command that must fail cleanly: prints its output, then EXIT_NONZERO when it exited
# with a non-zero status that is not a signal (a crash gives 128 + the signal number).
# Usage: expect_error.sh COMMAND [ARGS...]
"$@" 2>&1
status=$?
if [ "$status" -ne 0 ] && [ "$status" -lt 128 ]; then echo "EXIT_NONZERO"; fi
exit 0
