# Sourced by the CLI tests of this folder (cli_import_test.sh, deepspeed_zero1_cli_test.sh):
# a temporary directory $T removed on exit; check NAME EXPR prints "ok   NAME" or "FAIL NAME"
# (and sets fail=1) as EXPR, a shell test, holds; rc CMD... runs CMD with its stdout in $T/out and
# stderr in $T/err and prints its exit code. The test ends with `exit $fail`.
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
rc() { "$@" >"$T/out" 2>"$T/err"; echo $?; }
