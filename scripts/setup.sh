#!/usr/bin/env bash
# Sets up what is missing, safe to rerun: Debian GL libraries for offscreen MuJoCo rendering,
# a venv (.venv, or $COMSIM_VENV) with pinned dependencies, and the ComSim packages.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${COMSIM_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "setup: Python >= 3.10 needed, $PYTHON is $("$PYTHON" -V 2>&1)" >&2; exit 1; }

# EGL + Mesa let MuJoCo render without a display (MUJOCO_GL=egl).
missing=()
for pkg in libegl1 libegl-mesa0 libgl1-mesa-dri libgles2; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
stamp="$VENV/.comsim-setup"
want="$(cat "$ROOT/requirements/lock.txt" "$ROOT"/src/*/setup.py | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$ROOT/requirements/lock.txt"
  for pkg in comsim_core comsim_teleop comsim_bench_lab comsim_twin comsim_neural_sim comsim_policy \
             comsim_bringup; do
    "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e "$ROOT/src/$pkg"
  done
  echo "$want" > "$stamp"
fi
