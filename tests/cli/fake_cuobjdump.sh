#!/bin/sh
# A stand-in cuobjdump for the CLI tests (ATTNJIT_CUOBJDUMP): checks it was asked for the forward
# kernel's SASS of an existing cubin and prints a fixed two-instruction listing.
[ "$1" = "--dump-sass" ] && [ "$2" = "--function" ] && [ "$3" = "attnjit_fwd" ] && [ -f "$4" ] ||
  { echo "fake cuobjdump: unexpected arguments: $*" >&2; exit 2; }
echo "        /*0000*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;  /* 0x0 */"
echo "        /*0010*/                   EXIT ;                                  /* 0x0 */"
