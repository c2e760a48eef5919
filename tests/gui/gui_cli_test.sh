#!/usr/bin/env bash
# shardcast-gui without a display: --help prints the usage and exits 0; a start with no display
# names what is missing and exits 1 (not Qt's SIGABRT, 134); a DISPLAY that no X server answers
# exits 1 as well; a SHARDCAST_RUNTIME that is no runtime preset exits 2 naming it. Usage: gui_cli_test.sh path/to/shardcast-gui
set -u
bin="$1"
fail=0
check() {  # check NAME EXPECTED_RC ACTUAL_RC OUTPUT PATTERN
  if [ "$3" -ne "$2" ]; then
    echo "FAIL $1: exit $3, expected $2"; echo "$4"; fail=1
  elif ! grep -q -- "$5" <<<"$4"; then
    echo "FAIL $1: output lacks '$5'"; echo "$4"; fail=1
  else
    echo "ok   $1"
  fi
}
nodisplay=(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM)

out=$("${nodisplay[@]}" timeout 20 "$bin" --help 2>&1); rc=$?
check "--help without a display" 0 $rc "$out" "usage: shardcast-gui"
out=$("${nodisplay[@]}" timeout 20 "$bin" -h 2>&1); rc=$?
check "-h without a display" 0 $rc "$out" "SESSION.json"
out=$("${nodisplay[@]}" timeout 20 "$bin" --version 2>&1); rc=$?
check "--version without a display" 0 $rc "$out" "shardcast-gui "
out=$("${nodisplay[@]}" timeout 20 "$bin" 2>&1); rc=$?
check "no display" 1 $rc "$out" "no display"
out=$("${nodisplay[@]}" QT_QPA_PLATFORM=xcb timeout 20 "$bin" 2>&1); rc=$?
check "xcb without DISPLAY" 1 $rc "$out" "QT_QPA_PLATFORM=offscreen"
# A display nobody answers: Qt's own fatal error, turned into exit 1 with the hint.
out=$("${nodisplay[@]}" DISPLAY=:97531 QT_QPA_PLATFORM=xcb timeout 20 "$bin" 2>&1); rc=$?
check "unreachable DISPLAY" 1 $rc "$out" "cannot open a window"
# SHARDCAST_RUNTIME that names no runtime preset: refused by name before any window, exit 2 as
# the CLI (shardcast plan) refuses it.
out=$("${nodisplay[@]}" SHARDCAST_RUNTIME=no-such-stack timeout 20 "$bin" 2>&1); rc=$?
check "bad SHARDCAST_RUNTIME" 2 $rc "$out" "SHARDCAST_RUNTIME='no-such-stack' is not a runtime preset"
exit $fail
