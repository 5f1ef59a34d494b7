#!/usr/bin/env bash
# The test command: sets itself up, then runs the whole suite. Extra arguments go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
source "$ROOT/scripts/env.sh"
# Each run on its own DDS domain so parallel runs on one machine do not talk to each other.
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 100) + 1 ))}"
cd "$ROOT"
exec "${COMSIM_VENV:-$ROOT/.venv}/bin/python" -m pytest tests "$@"
