#!/usr/bin/env bash
# Screenshot of captioner on a small desktop (Xvfb + the IceWM window manager, which has a title
# bar, a taskbar and a system tray), to see the app icon where users see it.
#
#   bash packaging/screenshot_desktop.sh [CAPTIONER_COMMAND] [OUT.png]
#
# CAPTIONER_COMMAND: default dist/captioner/captioner (the frozen bundle) or `captioner` on PATH.
# Needs apt: xvfb x11-utils imagemagick icewm (icewm is not part of scripts/apt-packages.txt).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
app="${1:-$repo/dist/captioner/captioner}"
[ -x "$app" ] || app="$(command -v captioner)"
out="$(realpath -m "${2:-$repo/out/desktop.png}")"
mkdir -p "$(dirname "$out")"
work="$(mktemp -d)"
for n in $(seq 90 199); do [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] || { disp=":$n"; break; }; done
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
Xvfb "$disp" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
pids+=($!)
export DISPLAY="$disp"
for _ in $(seq 50); do xwininfo -root >/dev/null 2>&1 && break; sleep 0.1; done
icewm >/dev/null 2>&1 &
pids+=($!)
sleep 2
CAPTIONER_DATA_DIR="$work/data" XDG_CONFIG_HOME="$work/config" QT_QPA_PLATFORM=xcb "$app" >"$work/app.log" 2>&1 &
pids+=($!)
for _ in $(seq 60); do xprop -root _NET_CLIENT_LIST 2>/dev/null | grep -q '#' && break; sleep 0.5; done
sleep 3
import -window root "$out"
echo "screenshot: $out"
