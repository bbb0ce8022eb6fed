#!/usr/bin/env bash
# integration-user.sh TEST_BINARY TRACECELL_BINARY [TEST FLAGS...]
#
# Runs the compiled integration suite once more as an unprivileged user when
# `make test` runs as root (as CI does): most operators run tracecell as an
# ordinary user, where the kernel, not root's capabilities, answers many of
# the calls the suite makes, and the capability drop has nothing to drop.
# As a non-root user `make integration` already is that run: nothing to do.
#
# The user is nobody (65534) through setpriv(1) (util-linux): no account is
# created. It cannot read a clone made under a private mktemp directory, so
# the test binary, tracecell and testdata/ are copied into a world-readable
# temporary directory first, read-only for nobody as an installed tree would
# be.
set -euo pipefail

if [[ $# -lt 2 ]]; then
	echo "usage: $0 TEST_BINARY TRACECELL_BINARY [TEST FLAGS...]" >&2
	exit 2
fi
test_bin=$1 tc_bin=$2
shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ $(id -u) -ne 0 ]]; then
	echo "integration-user: running as $(id -un) already: the integration run above was unprivileged"
	exit 0
fi
if ! command -v setpriv >/dev/null; then
	echo "integration-user: setpriv (util-linux) is missing: install util-linux" >&2
	exit 1
fi

uid=65534
work=$(mktemp -d /tmp/tracecell-user-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/repo/integration" "$work/tmp"
cp -r "$repo/testdata" "$work/repo/"
cp "$test_bin" "$work/repo/integration/integration.test"
cp "$tc_bin" "$work/tracecell"
chmod -R a+rX "$work/repo" "$work/tracecell"
# The suite's own temporary files: the only directory nobody writes.
chown "$uid:$uid" "$work/tmp"
chmod 700 "$work/tmp"

echo "integration-user: the integration suite as uid $uid (nobody)"
cd "$work/repo/integration"
setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all \
	env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/tmp" TMPDIR="$work/tmp" LANG=C.UTF-8 \
	TRACECELL_BIN="$work/tracecell" ${TRACECELL_PYTHON:+TRACECELL_PYTHON="$TRACECELL_PYTHON"} \
	./integration.test -test.count=1 "$@"
