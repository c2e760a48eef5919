#!/usr/bin/env bash
# Every numeric flag of every command rejects values outside its range with exit 2, naming the
# flag and its allowed range.
#
# Usage: cli_ranges_test.sh BINARY [BINARY...]   (build/shardcast, build/shardcast-train)
#
# The flags are read from the binaries' own `--help`: each subcommand's (and nested
# subcommand's, `import torchtitan`) options whose type is INT, UINT, FLOAT or NUMBER. Each must carry its allowed interval in the help type
# ("--micro-batch INT:(0,inf)", shared/cli_ranges.h); a numeric flag without one fails the
# test, so a flag added later is covered without editing this script. Each flag is then given
# 0, -1, nan and inf; every probe outside its interval must exit 2 with the flag's name and the
# interval on stderr.
set -u
fail=0
checked=0
bad() { echo "FAIL: $*"; fail=1; }

# in_range VALUE INTERVAL -> exit 0 when VALUE is inside "(lo,hi]" etc.
in_range() {
  awk -v v="$1" -v r="$2" 'BEGIN {
    lo_open = substr(r, 1, 1) == "("; hi_open = substr(r, length(r), 1) == ")";
    body = substr(r, 2, length(r) - 2); split(body, b, ",");
    if (v == "nan" || v == "inf") exit 1;          # never allowed
    x = v + 0; lo = b[1] + 0;
    if (lo_open ? !(x > lo) : !(x >= lo)) exit 1;
    if (b[2] != "inf") { hi = b[2] + 0; if (hi_open ? !(x < hi) : !(x <= hi)) exit 1; }
    exit 0 }'
}

# check_command BIN ARGS...: the numeric flags of the command ARGS (e.g. "plan", "import
# torchtitan"), then each of its subcommands in turn.
check_command() {
  local bin=$1; shift
  local name flag base type range probe err rc subs sub names
  name="$(basename "$bin") $*"
  # Option lines: "  --flag TYPE ..." or "  -x,--flag TYPE ...".
  while read -r names type; do
    flag=${names##*,}
    base=${type%%:*}
    case "$base" in INT|UINT|FLOAT|NUMBER) ;; *) continue ;; esac
    checked=$((checked + 1))
    range=""
    case "$type" in *:\(*|*:\[*) range=${type#*:}; range=${range%%=*} ;; esac  # drop "=default"
    if [ -z "$range" ]; then
      bad "$name $flag ($type) declares no range: add it to planner/cli/validators.cpp (or trainer/main.cpp)"
      continue
    fi
    for probe in 0 -1 nan inf; do
      in_range "$probe" "$range" && continue
      err=$("$bin" "$@" "$flag=$probe" 2>&1 >/dev/null)
      rc=$?
      if [ "$rc" != 2 ]; then
        bad "$name $flag=$probe: exit $rc, want 2 ($err)"
      elif [[ "$err" != *"$flag"* || "$err" != *"$range"* ]]; then
        bad "$name $flag=$probe: stderr does not name $flag and $range: $err"
      fi
    done
  done < <("$bin" "$@" --help | awk '/^Subcommands:/ {exit} /^  -/ {print $1, $2}')
  subs=$("$bin" "$@" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
  for sub in $subs; do check_command "$bin" "$@" "$sub"; done
}

for bin in "$@"; do
  [ -x "$bin" ] || { bad "$bin is not an executable"; continue; }
  subs=$("$bin" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
  [ -n "$subs" ] || bad "$(basename "$bin"): no subcommands found in --help"
  for sub in $subs; do check_command "$bin" "$sub"; done
done
echo "checked $checked numeric flags"
[ "$checked" -gt 0 ] || bad "no numeric flag found"
exit $fail
