#!/usr/bin/env bash
# Install everything the tests need (system packages as root, every extra in .venv-test) and run the whole suite.
# The bench extra (matplotlib) comes too: the README runs bench/ scripts with .venv-test, and they end with a PNG.
# Extra arguments go to pytest.
set -euo pipefail
source "$(dirname "$0")/_common.sh"
install_apt test
make_venv "$repo/.venv-test" "[audio8,tflite,tflite-flex,remote,test,bench]"
cd "$repo"
export QT_QPA_PLATFORM=offscreen OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" PYTHONUNBUFFERED=1
exec xvfb-run -a -s "-screen 0 1600x1000x24" "$repo/.venv-test/bin/python" -m pytest -ra "$@"
