#!/usr/bin/env bash
# Create .venv with captioner and its embedded default model, then start the app.
# Extra arguments go to `captioner` (e.g. `bash scripts/start.sh transcribe speech.wav --format srt`).
set -euo pipefail
source "$(dirname "$0")/_common.sh"
install_apt run
make_venv "$repo/.venv" "[remote]"  # remote: the small websockets client for a GPU server
exec "$repo/.venv/bin/captioner" "$@"
