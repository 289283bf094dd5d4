#!/usr/bin/env bash
# Provides headless Chromium for the console's browser test (server: TestConsoleE2E).
# Installs Debian's chromium package when it may (root, or sudo without a password);
# otherwise prints what to run and fails. HEARTH_SKIP_BROWSER=1 skips the check (and
# the test skips itself).
set -euo pipefail

if [ "${HEARTH_SKIP_BROWSER:-}" = 1 ]; then
  echo "HEARTH_SKIP_BROWSER=1: the console's browser test is skipped" >&2
  exit 0
fi
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then
    exit 0
  fi
done

sudo=
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=sudo
fi
if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
  echo "installing Debian's chromium for the console's browser test" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium
  exit 0
fi
cat >&2 <<'MSG'
The console's browser test needs Chromium. Install it with:
    sudo apt-get install --no-install-recommends chromium
or skip that test with HEARTH_SKIP_BROWSER=1.
MSG
exit 1
