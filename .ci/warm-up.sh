#!/bin/sh
# Starts the service once from the sources and stops it as soon as it listens, so that tsx has
# compiled every module for this Node.js before the suites run: the first server of a suite on a
# cold compile cache (a new Node.js line, a fresh /tmp) otherwise competes with the tests' 20 s
# start-up limit on a busy machine. Run in the project's root with the Node.js to warm on PATH.
# Exit code 0 once it listened (or 1 after 120 s, with its output); it never fails the caller's
# suites by itself.
set -u
dir=$(mktemp -d)
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
AUTH_SERVER_HOST=127.0.0.1 AUTH_SERVER_PORT=$port AUTH_METRICS_PORT=0 AUTH_WORKERS=1 \
  AUTH_SQLITE_PATH=$dir/rbac.sqlite3 node --import tsx src/main.ts >"$dir/out" 2>&1 &
pid=$!
status=1
i=0
while [ $i -lt 120 ] && kill -0 "$pid" 2>/dev/null; do
  if grep -q '"msg":"listening"' "$dir/out"; then status=0; break; fi
  sleep 1
  i=$((i + 1))
done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
[ $status -eq 0 ] && echo "warm-up: the service listened after about $i s" || { echo "warm-up: the service did not listen within 120 s:"; cat "$dir/out"; }
rm -rf "$dir"
exit $status
