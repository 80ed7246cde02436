#!/usr/bin/env bash
# Install everything ElasticHub needs on a fresh machine (apt, npm, pip into
# ./.venv), then run the main job. `--no-run` installs only (the test command
# uses that). Safe to run again: each step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

run_main=1
if [[ "${1:-}" == "--no-run" ]]; then run_main=0; fi

SUDO=""
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then SUDO=sudo; fi

apt_install() {
    # Only reached for what is missing, so a prepared machine needs no apt.
    if [[ -z "${APT_UPDATED:-}" ]]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

command -v kubectl >/dev/null || apt_install kubernetes-client
# The browser tests drive Debian's Chromium (a browser download would fail offline).
command -v chromium >/dev/null || apt_install chromium
command -v npm >/dev/null || apt_install nodejs npm
command -v python3 >/dev/null || apt_install python3 python3-venv
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "ElasticHub needs Python 3.11 or later; python3 is $(python3 -V 2>&1)" >&2
    exit 1
fi
# Debian and Ubuntu ship python3 without venv's ensurepip (the python3-venv package):
# the venv is then made without pip, and every later run skipped it.
python3 -c 'import ensurepip, venv' 2>/dev/null || apt_install python3-venv
# The kernel's tests build a locale the kernel's own node lacks (localedef needs the sources).
[[ -f /usr/share/i18n/locales/de_DE ]] || apt_install locales

if [[ ! -x node_modules/.bin/configurable-http-proxy ]]; then
    npm install --no-audit --no-fund --loglevel=error
fi

if [[ ! -x .venv/bin/python ]] || ! .venv/bin/python -m pip --version >/dev/null 2>&1; then
    python3 -m venv --clear .venv  # --clear: a venv an earlier run left without pip is made again
fi
PIP=(.venv/bin/python -m pip --disable-pip-version-check -q)
editable=(-e ".[sim,test,docs]")
if [[ -f kernel/setup.cfg ]]; then editable+=(-e "./kernel[test]"); fi
# Quiet unless it fails: build back-ends are chatty.
if ! "${PIP[@]}" install "${editable[@]}" >.venv/pip-install.log 2>&1; then
    cat .venv/pip-install.log >&2
    exit 1
fi
if [[ -f kernel/setup.cfg ]]; then
    .venv/bin/python -m elastichub_kernel install --sys-prefix >/dev/null
fi

if [[ $run_main -eq 1 ]]; then
    # The main job: the whole system on this machine (local cluster,
    # JupyterHub, ElasticSpawner, the orchestrator) playing a class.
    .venv/bin/elastichub demo
    echo "The simulator is one command away: .venv/bin/elastichub simulate --help"
fi
