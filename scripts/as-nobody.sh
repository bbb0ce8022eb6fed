#!/usr/bin/env bash
# as-nobody.sh PACKAGE TEST_BINARY [TEST FLAGS...]
#
# Runs a compiled Go test binary of PACKAGE (a directory of the repository:
# integration, server, worker, internal/hideproc) once more as an
# unprivileged user when `make test` runs as root (as CI does): most
# operators run tracecell as an ordinary user, where the kernel, not root's
# capabilities, answers many of the calls the suites make, the capability
# drop has nothing to drop, and a tracer's own /proc is open to its tree
# unless tracecell closes it. As a non-root user `make test` already
# is that run: nothing to do.
#
# The user is nobody (65534) through setpriv(1) (util-linux): no account is
# created. It cannot read a clone made under a private mktemp directory, so
# the test binary, its package's sources, testdata/, api/ and $TRACECELL_BIN
# (when set) are copied into a world-readable temporary directory first,
# read-only for nobody as an installed tree would be.
set -euo pipefail

if [[ $# -lt 2 ]]; then
	echo "usage: $0 PACKAGE TEST_BINARY [TEST FLAGS...]" >&2
	exit 2
fi
pkg=$1 test_bin=$2
shift 2
name=$(basename "$pkg")
repo=$(cd "$(dirname "$0")/.." && pwd)

if [[ $(id -u) -ne 0 ]]; then
	echo "as-nobody: running as $(id -un) already: the $pkg run above was unprivileged"
	exit 0
fi
if ! command -v setpriv >/dev/null; then
	echo "as-nobody: setpriv (util-linux) is missing: install util-linux" >&2
	exit 1
fi
if [[ ! -d $repo/$pkg ]]; then
	echo "as-nobody: no package directory $repo/$pkg" >&2
	exit 2
fi

uid=65534
work=$(mktemp -d /tmp/tracecell-nobody-XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir -p "$work/repo/$pkg" "$work/tmp"
cp -r "$repo/testdata" "$repo/api" "$work/repo/"
cp "$repo/README.md" "$repo/README.ko.md" "$work/repo/" # integration: the READMEs' policies are run verbatim
cp "$repo/$pkg"/*.go "$work/repo/$pkg/" # some tests read their package's sources
cp "$test_bin" "$work/repo/$pkg/$name.test"
tc=()
if [[ -n ${TRACECELL_BIN:-} ]]; then
	cp "$TRACECELL_BIN" "$work/tracecell"
	tc=(TRACECELL_BIN="$work/tracecell")
fi
chmod -R a+rX "$work"
# The suite's own temporary files: the only directory nobody writes.
chown "$uid:$uid" "$work/tmp"
chmod 700 "$work/tmp"

echo "as-nobody: the $pkg tests as uid $uid (nobody)"
cd "$work/repo/$pkg"
setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all \
	env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$work/tmp" TMPDIR="$work/tmp" LANG=C.UTF-8 \
	"${tc[@]}" ${TRACECELL_PYTHON:+TRACECELL_PYTHON="$TRACECELL_PYTHON"} \
	"./$name.test" -test.count=1 "$@"
