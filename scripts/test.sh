#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, then pytest.
# Extra arguments go to pytest (e.g. scripts/test.sh -k policy).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-run
export PATH="$PWD/.venv/bin:$PWD/node_modules/.bin:$PATH"
exec .venv/bin/python -m pytest "$@"
