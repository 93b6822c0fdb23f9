#!/usr/bin/env bash
# Set up and run the whole test suite (the README's test command; CI runs exactly this).
# - a virtual environment in .venv with the pinned requirements;
# - Debian's chromium for the one real-browser test and Debian's postgresql for the ledger
#   tests on PostgreSQL (the tests start their own server in a temporary folder); both
#   installed with apt-get when missing (needs root or sudo; Playwright's own browser
#   download is not used);
# - ruff checks the whole tree (configuration in pyproject.toml);
# - numba compiles into a fresh cache folder, so the suite also proves a cold start works.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -r requirements.txt
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null || missing+=(postgresql)
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
export NUMBA_CACHE_DIR="$PWD/.numba_cache/test-run"
rm -rf "$NUMBA_CACHE_DIR"
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
