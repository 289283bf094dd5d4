#!/usr/bin/env bash
# Provides PostgreSQL's server binaries (initdb, postgres) for the tests of the
# PostgreSQL store and of hearth on it (storage/postgres/pgtest starts a throwaway
# cluster from them). Installs Debian's postgresql package when it may (root, or sudo
# without a password); otherwise prints what to run and fails. HEARTH_TEST_POSTGRES
# (a server to use instead) or HEARTH_SKIP_POSTGRES=1 (the tests skip themselves)
# skips the check.
set -euo pipefail

if [ -n "${HEARTH_TEST_POSTGRES:-}" ]; then
  exit 0
fi
if [ "${HEARTH_SKIP_POSTGRES:-}" = 1 ]; then
  echo "HEARTH_SKIP_POSTGRES=1: the PostgreSQL tests are skipped" >&2
  exit 0
fi
if command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exit 0
fi

sudo=
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=sudo
fi
if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
  echo "installing Debian's postgresql for the PostgreSQL store's tests" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql
  exit 0
fi
cat >&2 <<'MSG'
The PostgreSQL store's tests need PostgreSQL's server binaries. Install them with:
    sudo apt-get install --no-install-recommends postgresql
or point the tests at a server with HEARTH_TEST_POSTGRES=postgres://user@host/db,
or skip them with HEARTH_SKIP_POSTGRES=1.
MSG
exit 1
