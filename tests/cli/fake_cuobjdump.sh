#!/bin/sh
# A stand-in cuobjdump for the CLI tests (ATTNJIT_CUOBJDUMP): checks it was asked for the SASS of
# one of the module's entry points (or of all of them) in an existing cubin, and prints a fixed
# two-instruction listing under the entry's name.
[ "$1" = "--dump-sass" ] || { echo "fake cuobjdump: unexpected arguments: $*" >&2; exit 2; }
if [ "$2" = "--function" ]; then
  function=$3 cubin=$4
  case $function in
    attnjit_fwd | attnjit_fwd_decode | attnjit_split_combine | attnjit_tensor_summary) ;;
    *) echo "fake cuobjdump: unexpected function $function" >&2; exit 2 ;;
  esac
else
  function="(all)" cubin=$2
fi
[ -f "$cubin" ] || { echo "fake cuobjdump: no cubin at $cubin" >&2; exit 2; }
echo "		Function : $function"
echo "        /*0000*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;  /* 0x0 */"
echo "        /*0010*/                   EXIT ;                                  /* 0x0 */"
