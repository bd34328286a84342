#!/usr/bin/env bash
# Screenshot of the real app's caption overlay over other windows, under Xvfb + xcompmgr.
#
#   tests/gui_screenshot.sh [OUT_DIR]      (default: out/; SPEECH_WAV=file.wav plays that file instead)
#
# Needs: Xvfb, xcompmgr (translucency; without it the overlay is opaque black),
# ImageMagick (display, import), espeak-ng, libxcb-icccm4 libxcb-keysyms1
# libxcb-cursor0, fonts-noto-cjk. Plays espeak-ng speech through the file source with
# the default model and writes OUT_DIR/overlay_live.png and OUT_DIR/overlay_after_stop.png.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/out}")"
PY="${PYTHON:-$ROOT/.venv-test/bin/python}"   # the README's test environment
[ -x "$PY" ] || PY="$(command -v python3)"
WORK="$(mktemp -d)"
DISPLAY_NUM="${SCREENSHOT_DISPLAY:-}"
if [ -z "$DISPLAY_NUM" ]; then  # first free X display number from :90 on
  for n in $(seq 90 199); do
    [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] || { DISPLAY_NUM=":$n"; break; }
  done
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
mkdir -p "$OUT"

if [ -n "${SPEECH_WAV:-}" ]; then  # e.g. a thinking pause or a speaker change (tests/test_turns.py cases)
  cp "$SPEECH_WAV" "$WORK/speech.wav"
else
  espeak-ng -s 150 -w "$WORK/speech.wav" "Good morning everyone. Thank you for joining the call today. \
We will start with the quarterly report, and then talk about the new release. \
Please send your questions before Friday."
fi

Xvfb "$DISPLAY_NUM" -screen 0 1280x800x24 -nolisten tcp &
pids+=($!)
export DISPLAY="$DISPLAY_NUM"
for _ in $(seq 50); do xwininfo -root >/dev/null 2>&1 && break; sleep 0.1; done
xcompmgr &
pids+=($!)

# another window to caption over: a "slide" filling the screen, drawn with Qt (ImageMagick's
# text needs Ghostscript fonts that --no-install-recommends does not install)
QT_QPA_PLATFORM=offscreen "$PY" "$ROOT/tests/make_slide.py" "$WORK/slide.png" 1280 800
display -geometry 1280x800+0+0 -backdrop "$WORK/slide.png" &
pids+=($!)
sleep 1  # let the backdrop map before the app (no window manager: mapping order is stacking order)

cd "$ROOT"
CAPTIONER_DATA_DIR="$WORK/data" QT_QPA_PLATFORM=xcb OMP_NUM_THREADS=1 \
  PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" timeout 300 "$PY" tests/gui_screenshot.py "$WORK/speech.wav" "$OUT"
echo "screenshots in $OUT"
