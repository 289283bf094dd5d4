#!/usr/bin/env bash
# Provides Node.js and npm for the tests that run real JavaScript clients against hearth
# (server: TestOpenAISDKE2E, TestCodexCLIE2E, TestCodexApplyPatchE2E, TestAgentsSDKE2E,
# TestClaudeCodeE2E, TestContinueCLIE2E).
# Those packages need Node.js 20 or newer (the tests pass on 20). Installs the
# Debian packages nodejs and npm when it may (root, or sudo without a password) and
# Debian's Node.js is new enough; otherwise prints what to run and fails.
# HEARTH_SKIP_NODE=1 skips the check (and the tests skip themselves).
set -euo pipefail
min_major=20
# Some pinned packages declare a newer Node.js in their package.json (engines.node) than
# they need: on min_major they run, npm warns (EBADENGINE), and this script says so.
# scripts/node_test.go checks these two lines against testdata/*/package-lock.json.
declared_major=22
declared_by="openai 7.55.0 (testdata/openai-sdk, testdata/codex), @anthropic-ai/claude-code 2.1.332 (testdata/claude-code)"

if [ "${HEARTH_SKIP_NODE:-}" = 1 ]; then
  echo "HEARTH_SKIP_NODE=1: the tests that need Node.js are skipped" >&2
  exit 0
fi

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

have_node=false have_npm=false
command -v node >/dev/null && [ "$(node_major)" -ge "$min_major" ] && have_node=true
command -v npm >/dev/null && have_npm=true
if $have_node && $have_npm; then
  if [ "$(node_major)" -lt "$declared_major" ]; then
    echo "note: Node.js $(node --version 2>/dev/null) runs the tests, but $declared_by declare Node.js $declared_major;" >&2
    echo "  npm ci warns about it (EBADENGINE). openai only feature-tests what 22 added (process.getBuiltinModule);" >&2
    echo "  the Claude Code test runs the package's native binary. Node.js $declared_major from https://nodejs.org silences the warning." >&2
  fi
  exit 0
fi

missing=()
$have_node || missing+=(nodejs)
$have_npm || missing+=(npm)

sudo=
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=sudo
fi
candidate_major=0
if command -v apt-cache >/dev/null; then
  # The version apt would install, e.g. "18.20.4+dfsg-1~deb12u3" -> 18.
  candidate_major=$(apt-cache policy nodejs 2>/dev/null | sed -n 's/^ *Candidate: *\([0-9][0-9]*\).*/\1/p')
  candidate_major=${candidate_major:-0}
fi

if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; } &&
  { $have_node || [ "$candidate_major" -ge "$min_major" ]; }; then
  echo "installing ${missing[*]} with apt-get" >&2
  { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2
  exit 0
fi

echo "the tests that run JavaScript clients need Node.js $min_major or newer, with npm." >&2
if command -v node >/dev/null && ! $have_node; then
  echo "  node on PATH is $(node --version 2>/dev/null), too old: the pinned clients (openai, @openai/agents, Codex CLI," >&2
  echo "  Claude Code, Continue, the AI SDK, the MCP reference server) need $min_major; $declared_by declare $declared_major." >&2
fi
if [ "$candidate_major" -ge "$min_major" ]; then
  echo "install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
else
  echo "install Node.js $min_major or newer from https://nodejs.org or your distribution's backports" >&2
  if [ "$candidate_major" -gt 0 ]; then
    echo "(this system's apt offers Node.js $candidate_major)" >&2
  fi
fi
echo "or skip those tests: make test HEARTH_SKIP_NODE=1" >&2
exit 1
