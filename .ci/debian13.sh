#!/usr/bin/env bash
# CI, the native engine on a current C library: the uws engine under Node.js 24 and 22 in a
# Debian 13 root (glibc 2.41), with uWebSockets.js swapped to the 20.5x release for this run.
#
# The bundled uWebSockets.js build has native code for Node.js <= 20 only; the 20.5x releases
# have it for Node 20 to 25, but need glibc >= 2.38, which the CI machine may not have. So:
#   - a Debian 13 (trixie) root is built with `debootstrap --variant=minbase` from the Debian
#     mirror, cached in $CACHE/debian13-root and rebuilt only when its key (suite, mirror,
#     architecture, debootstrap's version; recorded in its .debian13-key) changes;
#   - Node 24 and Node 22 and a copy of the project with node_modules built under each are the
#     ones node24.sh and node22.sh use (node-line.sh; better-sqlite3 compiled on this machine
#     runs on the newer glibc too);
#   - @btc-vision/uwebsockets.js@20.57.0 (v20.57.0 republished on the npm registry by a third
#     party; test-only: its provenance cannot be checked, so it is never the project's
#     dependency) is fetched with `npm pack`, checked
#     against pinned checksums and bind-mounted over node_modules/uWebSockets.js, in a mount
#     namespace of this run only: the copy on disk keeps the bundled build;
#   - under Node 24 on this machine, outside the root, the engine suite with AUTH_HTTP_ENGINE=auto
#     (on a glibc below 2.38 it checks that the start-up reason names the one the release needs);
#   - in the root, with AUTH_HTTP_ENGINE=uws: under Node 24 the types against that release's
#     typings, then the route, bad-input, engine and transport suites; under Node 22 the route
#     and engine suites. PostgreSQL and Redis are the machine's (the root shares its network).
#   The root's /tmp is $CACHE/debian13-tmp, emptied at the start of each run but for tsx's cache.
# Needs root (or sudo) for debootstrap, mount and chroot. Exit code: 0 when every run passed.
# `bash .ci/debian13.sh bench` runs the benchmark in the root instead (see below).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/rbac-gateway
say() { printf 'debian13: %s\n' "$*"; }
fail() { printf 'debian13: ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=node-line.sh
source "$ROOT/.ci/node-line.sh"

SUITE=trixie
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOTFS=$CACHE/debian13-root
UWS_SPEC=@btc-vision/uwebsockets.js@20.57.0
# `npm view @btc-vision/uwebsockets.js@20.57.0 dist.integrity`, and the tarball's sha256sum.
UWS_INTEGRITY='sha512-SuPpEjSKZ7P58L/27BXXsrGsMwLmPupfYny8oJsOmFZ4+zX7Ca97nBPtZ3ngKbfeDZzTyi7rXri74INGerhugg=='
UWS_SHA256='2301185bed4c4b1dfd37c0ea994ba807a9c0121e01897208b4a168a3c6115ce3'

as_root=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || fail "needs root, or sudo, for debootstrap, mount and chroot"
  as_root=(sudo)
fi
started=$SECONDS
ci_lock

# ---- 1. the Debian 13 root ------------------------------------------------------------------------

if ! command -v debootstrap >/dev/null; then
  "${as_root[@]}" apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap
fi
key="$SUITE $MIRROR $(dpkg --print-architecture) minbase debootstrap-$(dpkg-query -W -f '${Version}' debootstrap)"
if [[ -f $ROOTFS/.debian13-key && $(cat "$ROOTFS/.debian13-key") == "$key" ]]; then
  say "root reused: $ROOTFS ($key)"
else
  t=$SECONDS
  say "debootstrap $SUITE from $MIRROR into $ROOTFS"
  "${as_root[@]}" rm -rf "$ROOTFS" "$ROOTFS.building"
  if ! "${as_root[@]}" debootstrap --variant=minbase "$SUITE" "$ROOTFS.building" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1; then
    tail -n 40 "$CACHE/debootstrap.log" >&2
    fail "debootstrap failed (whole log: $CACHE/debootstrap.log)"
  fi
  printf '127.0.0.1 localhost\n::1 localhost\n' | "${as_root[@]}" tee "$ROOTFS.building/etc/hosts" >/dev/null
  "${as_root[@]}" mkdir -p "$ROOTFS.building/project" "$ROOTFS.building/opt/node" "$ROOTFS.building/opt/uws"
  printf '%s\n' "$key" | "${as_root[@]}" tee "$ROOTFS.building/.debian13-key" >/dev/null
  "${as_root[@]}" mv "$ROOTFS.building" "$ROOTFS"
  say "root built ($((SECONDS - t)) s)"
fi
say "C library in the root: $("${as_root[@]}" chroot "$ROOTFS" /usr/bin/ldd --version | head -n 1)"

# ---- 2. the 20.5x release -------------------------------------------------------------------------

mkdir -p "$CACHE/uws-20.57.0"
UWS_TGZ=$CACHE/uws-20.57.0/btc-vision-uwebsockets.js-20.57.0.tgz
checked_tarball "$UWS_SPEC" "$UWS_TGZ" "$UWS_INTEGRITY" "$UWS_SHA256"
UWS_DIR=$CACHE/uws-20.57.0/package
unpack_tarball "$UWS_TGZ" "$UWS_DIR"

# ---- 3. the suites in the root --------------------------------------------------------------------

# The root's /tmp: emptied at each run but for tsx's compiled files (tsx-*), kept so that servers
# do not all compile the sources again (warm-up.sh compiles them before each line's suites).
ROOT_TMP=$CACHE/debian13-tmp
mkdir -p "$ROOT_TMP"
"${as_root[@]}" find "$ROOT_TMP" -mindepth 1 -maxdepth 1 ! -name 'tsx-*' -exec rm -rf {} +
chmod 1777 "$ROOT_TMP"
RUN_AS="$(id -u):$(id -g)"

# in_root COMMAND: COMMAND by sh in the root, in /project (TREE, with the 20.5x release over
# node_modules/uWebSockets.js) with /opt/node (NODE_HOME) first on PATH and AUTH_HTTP_ENGINE=uws,
# as the user running this script (files it leaves stay that user's to remove). Every mount is in
# a namespace of its own, gone when the command ends.
in_root() {
  "${as_root[@]}" unshare --mount --propagation private --fork env \
    ROOTFS="$ROOTFS" TREE="$TREE" NODE_HOME="$NODE_HOME" UWS_DIR="$UWS_DIR" ROOT_TMP="$ROOT_TMP" RUN_AS="$RUN_AS" COMMAND="$1" bash -c '
    set -e
    mount --bind "$TREE" "$ROOTFS/project"
    mount --bind "$UWS_DIR" "$ROOTFS/project/node_modules/uWebSockets.js"
    mount --bind "$NODE_HOME" "$ROOTFS/opt/node"
    mount -t proc proc "$ROOTFS/proc"
    mount --rbind /dev "$ROOTFS/dev"
    mount --bind "$ROOT_TMP" "$ROOTFS/tmp"
    exec chroot --userspec="$RUN_AS" "$ROOTFS" /usr/bin/env -i PATH=/opt/node/bin:/usr/bin:/bin HOME=/tmp TMPDIR=/tmp \
      AUTH_HTTP_ENGINE=uws AUTH_TEST_HTTP_ENGINE=uws AUTH_TEST_REQUIRE_SERVICES=1 \
      /bin/sh -c "cd /project && $COMMAND"
  ' 9>&- # the lock stays with this script, not its children
}

# Where the 20.5x release cannot load: this machine's own C library (glibc below 2.38), outside the
# root, with the same swap: the engine suite, whose start-up reason must then name the glibc the
# release needs (on a machine with a newer glibc it simply runs uws).
on_host_engine_suite() {
  "${as_root[@]}" unshare --mount --propagation private --fork env TREE="$TREE" UWS_DIR="$UWS_DIR" NODE_HOME="$NODE_HOME" RUN_AS="$RUN_AS" bash -c '
    mount --bind "$UWS_DIR" "$TREE/node_modules/uWebSockets.js"
    cd "$TREE" && exec setpriv --reuid="${RUN_AS%:*}" --regid="${RUN_AS#*:}" --clear-groups env PATH="$NODE_HOME/bin:$PATH" \
      AUTH_HTTP_ENGINE=auto AUTH_TEST_HTTP_ENGINE=auto AUTH_TEST_REQUIRE_SERVICES=1 node tests/run.mjs tests/ops/engine.test.ts
  ' 9>&-
}

# `debian13.sh bench`: instead of the suites, `npm run bench` (has_permission on uws, node and a
# bare uWS server, autocannon only: the root has no wrk) under Node 24 in the root.
if [[ ${1:-} == bench ]]; then
  node_line node24 "$NODE24_VERSION" "$NODE24_INTEGRITY" "$NODE24_SHA256"
  in_root 'BENCH_WRK=0 BENCH_TOKEN=0 BENCH_METRICS=0 BENCH_ENGINES=uws,node node --import tsx bench/run.ts'
  exit
fi

status=0
for line in node24 node22; do
  if [[ $line == node24 ]]; then
    node_line node24 "$NODE24_VERSION" "$NODE24_INTEGRITY" "$NODE24_SHA256"
    suites="${ROUTE_SUITES[*]} ${BAD_INPUT_SUITES[*]} tests/ops/engine.test.ts tests/security/transport.test.ts"
  else
    node_line node22 "$NODE22_VERSION" "$NODE22_INTEGRITY" "$NODE22_SHA256"
    suites="${ROUTE_SUITES[*]} tests/ops/engine.test.ts"
  fi
  in_root 'node -p "\"uWebSockets.js \" + require(\"./node_modules/uWebSockets.js/package.json\").version + \", native: \" + String(require(\"uWebSockets.js\").App).includes(\"[native code]\")"' 
  if [[ $line == node24 ]]; then
    say "$line: the engine suite on this machine's $(ldd --version | head -n 1 | sed 's/^ldd //'), outside the root"
    on_host_engine_suite || status=1
  fi
  if [[ $line == node24 ]]; then
    say "$line: types against $UWS_SPEC's typings"
    in_root 'node node_modules/typescript/bin/tsc --noEmit -p .' || status=1
  fi
  t=$SECONDS
  say "$line: AUTH_HTTP_ENGINE=uws node tests/run.mjs $suites"
  in_root "{ sh .ci/warm-up.sh || true; } && node tests/run.mjs $suites" || status=1
  say "$line: done ($((SECONDS - t)) s)"
done
say "exit $status (total $((SECONDS - started)) s)"
exit "$status"
