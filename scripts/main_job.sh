#!/usr/bin/env bash
# The main job: sets itself up, then runs the pipeline on the bench lab and writes a report.
# Arguments go to scripts/main_job.py (e.g. --scale reduced|paper, --tasks T, --resume RUN).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 100) + 101 ))}"
cd "$ROOT"
exec "${COMSIM_VENV:-$ROOT/.venv}/bin/python" scripts/main_job.py "$@"
