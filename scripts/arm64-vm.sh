#!/usr/bin/env bash
# scripts/arm64-vm.sh: run tracecell's real Go tests on a real arm64 Linux kernel
# (Debian's linux-image-arm64) under qemu-system-aarch64 (TCG emulation, -M virt
# -cpu max), on an x86_64 Debian host. `make test-arm64` runs it.
#
#   scripts/arm64-vm.sh                      every package's tests, integration included
#   scripts/arm64-vm.sh -test.run 'TestRace' extra flags go to every test binary
#   TC_ARM64_PKGS="arch tracer" scripts/arm64-vm.sh     only these packages
#
# Steps: install the host tools it lacks (apt-get), fetch the arm64 .debs it needs
# (kernel, busybox-static, Debian's python3 with numpy/pandas/matplotlib) through a
# private apt configuration (the host's dpkg architecture list is left alone),
# build the arm64 tracecell binary and `go test -c` binaries, cross-compile the C
# test programs statically, pack everything with busybox into an initramfs, boot
# it, run the tests inside and read the results back from the serial console.
# Exits non-zero when a test binary fails (or the VM does not report back).
#
# Environment:
#   TC_ARM64_CACHE    downloads (default ${XDG_CACHE_HOME:-~/.cache}/tracecell-arm64-vm)
#   TC_ARM64_PKGS     packages to test (default: every package that has tests)
#   TC_ARM64_PYTHON   0: no Python in the guest (its tests skip, saying why;
#                     the guest sets TRACECELL_ALLOW_NO_PYTHON=1)
#   TC_ARM64_SMP      guest CPUs (default 2; keep it at 2 at most on shared machines)
#   TC_ARM64_MEM      guest memory (default 3G)
#   TC_ARM64_TIMEOUT  wall-clock limit of the whole VM run (default 90m)
#   TC_ARM64_TEST_TIMEOUT  -test.timeout of each test binary (default 40m)
#   TC_ARM64_LONG     1: no -test.short (server's load test then makes 1000
#                     Python sessions instead of 200: many minutes under TCG)
#   TC_ARM64_SURFACE418    1: run the integration suite a second time under
#                     testdata/surface418 (every syscall newer than 4.18 fails
#                     with ENOSYS), as `make integration-418` does on the host
#
# Failures seen under TCG that are the emulator's speed, not arm64 (no escape in
# any of them; see README "arm64"):
#   integration TestRaceStuckCopiedCall: its 8 GiB MAP_POPULATE, meant to keep a
#     CPU for ~1.5 s, takes ~13 s in the guest (1.8 s on the x86_64 host), so the
#     8 s run has one round and the attack cannot show both outcomes.
#   integration TestRaces/<some case>, now and then: the attacker thread rarely
#     runs at the same time as the checked call on 2 emulated CPUs shared by the
#     parallel cases, so in 5 s the attack shows only one outcome.
#   tracer TestFreezeLifecycle/timeout_during_freezes, now and then: the 0.7 s
#     timeout ends the run before Python has started its threads.
#   server TestRealLoad: the pool of 4 Python workers does not refill within the
#     test's 5 s.
set -euo pipefail
# All in one function: bash reads a script as it runs, and this one runs for
# minutes; a function is parsed whole before it starts.
main() {
cd "$(dirname "$0")/.."
repo=$PWD
export CGO_ENABLED=0 GOFLAGS=-tags=urfave_cli_no_docs

cache=${TC_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tracecell-arm64-vm}
work=$repo/bin/arm64-vm
smp=${TC_ARM64_SMP:-2}
mem=${TC_ARM64_MEM:-3G}
vm_timeout=${TC_ARM64_TIMEOUT:-90m}
test_timeout=${TC_ARM64_TEST_TIMEOUT:-40m}
with_python=${TC_ARM64_PYTHON:-1}
log() { printf 'arm64-vm: %s\n' "$*" >&2; }
start=$(date +%s)

# ---- host tools --------------------------------------------------------------
need=()
command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
command -v cpio >/dev/null || need+=(cpio)
command -v dpkg-deb >/dev/null || need+=(dpkg)
if [ ${#need[@]} -gt 0 ]; then
  log "installing host packages: ${need[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
command -v go >/dev/null || { log "the go command is not installed"; exit 1; }

# ---- arm64 .debs through a private apt configuration ---------------------------
# Same sources as the host, but APT::Architecture=arm64, its own state and cache:
# nothing here touches the host's dpkg database or architecture list.
aptdir=$cache/apt
mkdir -p "$aptdir/state/lists/partial" "$aptdir/cache/archives/partial" "$cache/debs"
[ -e "$aptdir/state/status" ] || : > "$aptdir/state/status"
srclist=/etc/apt/sources.list; [ -e "$srclist" ] || srclist=/dev/null
aptopts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::State="$aptdir/state" -o Dir::State::status="$aptdir/state/status"
  -o Dir::Cache="$aptdir/cache" -o Dir::Etc::SourceList="$srclist"
  -o Dir::Etc::SourceParts=/etc/apt/sources.list.d -o Debug::NoLocking=1
  -o APT::Sandbox::User=root -o Acquire::Languages=none)
# Refresh the package lists once a day (a second run the same day is offline).
if [ -z "$(find "$aptdir/state/lists" -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
  log "apt-get update (arm64, private state in $aptdir)"
  apt-get "${aptopts[@]}" update -qq >/dev/null
fi
kpkg=$(apt-cache "${aptopts[@]}" depends linux-image-arm64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$kpkg" ] || { log "cannot find the kernel package behind linux-image-arm64"; exit 1; }
pkgs=("$kpkg" busybox-static)
if [ "$with_python" = 1 ]; then
  # The closure of python3 with numpy, pandas and matplotlib, less what only
  # building, Tk, SciPy/SymPy/Pythran or dpkg's own bookkeeping need (none is
  # imported by the tests' scripts).
  skip='^(gcc(-12)?|g\+\+(-12)?|cpp(-12)?|binutils.*|lib.*-dev|libboost.*|libc-dev-bin|linux-libc-dev|rpcsvc-proto|libgcc-12-dev|lib(asan|lsan|tsan|ubsan|hwasan)[0-9]+|libitm1|libcc1-0|libisl23|libmpc3|libmpfr6|libgmp10|libbinutils|libctf.*|libgprofng0|libjansson4|python3-(pythran|scipy|sympy|mpmath|tk|pil\.imagetk|beniget|gast|ply|all|all-dev|dev|lxml|decorator|distutils|lib2to3)|python3\.11-dev|libpython3\.11|libpython3-all-dev|libtk8\.6|libtcl8\.6|tk8\.6-blt2\.5|blt|libx11-.*|libx11-6|libxft2|libxrender1|libxext6|libxss1|x11-common|libopenblas.*|libjs-.*|dpkg|tar|sysvinit-utils|debconf|lsb-base|libicu72|libxml2|libxslt1\.1|liblbfgsb0|unicode-data|libxsimd-dev)$'
  mapfile -t pyp < <(apt-get "${aptopts[@]}" install -s --no-install-recommends \
    python3 python3-numpy python3-pandas python3-matplotlib fontconfig 2>/dev/null | awk '/^Inst / {print $2}' | grep -Ev "$skip")
  pkgs+=("${pyp[@]}")
fi
# Download only what the cache lacks.
missing=()
while read -r url file _; do
  [ -e "$cache/debs/$file" ] || missing+=("$(echo "$file" | cut -d_ -f1)")
done < <(apt-get "${aptopts[@]}" download --print-uris "${pkgs[@]}" 2>/dev/null | tr -d "'")
if [ ${#missing[@]} -gt 0 ]; then
  log "downloading ${#missing[@]} arm64 packages into $cache/debs"
  (cd "$cache/debs" && apt-get "${aptopts[@]}" download -qq "${missing[@]}" >/dev/null 2>&1) ||
    (cd "$cache/debs" && apt-get "${aptopts[@]}" download "${missing[@]}")
fi
debfile() { # newest cached .deb of a package
  { ls -1 "$cache"/debs/"$1"_*_{arm64,all}.deb 2>/dev/null || true; } | sort -V | tail -1
}

# ---- build -------------------------------------------------------------------
rm -rf "$work"; mkdir -p "$work/root"
root=$work/root
log "building the arm64 tracecell binary and test binaries"
make -s build-arm64 >/dev/null
if [ -n "${TC_ARM64_PKGS:-}" ]; then
  testpkgs=$TC_ARM64_PKGS
else
  testpkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' ./... | sed "s|^$repo/||")
fi
mkdir -p "$root/tc/tests" "$root/tc/bin" "$root/src"
for p in $testpkgs; do
  GOARCH=arm64 go test -c -o "$root/tc/tests/$(echo "$p" | tr / _).test" "./$p"
done
cp bin/tracecell-linux-arm64 "$root/tc/bin/tracecell"
log "cross-compiling testdata/escapes (static)"
aarch64-linux-gnu-gcc -static -O2 -Wall -o "$root/tc/bin/escape" testdata/escapes/escape.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/race" testdata/escapes/race.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/netmem" testdata/netmem/netmem.c
aarch64-linux-gnu-gcc -static -O2 -Wall -o "$root/tc/bin/ioctl" testdata/escapes/ioctl.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/fsops" testdata/fsops/fsops.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/tidreuse" testdata/escapes/tidreuse.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/execrace" testdata/escapes/execrace.c
aarch64-linux-gnu-gcc -static -O2 -Wall -pthread -o "$root/tc/bin/pipereopen" testdata/escapes/pipereopen.c
aarch64-linux-gnu-gcc -static -O2 -Wall -o "$root/tc/bin/sigthread" testdata/escapes/sigthread.c
if [ "${TC_ARM64_SURFACE418:-0}" = 1 ] && [ -e "$root/tc/tests/integration.test" ]; then
  aarch64-linux-gnu-gcc -static -O2 -Wall -o "$root/tc/bin/surface418" testdata/surface418/surface418.c
fi
# The source tree minus bin/ and .git: the tests read testdata/ and their
# package directory is their working directory.
tar -c --exclude=./bin --exclude=./.git --exclude='*/__pycache__' --exclude=./python/.venv . | tar -x -C "$root/src"

# ---- root file system ----------------------------------------------------------
# Debian's merged /usr layout, then the .debs on top (dpkg-deb -x without
# running any maintainer script), then busybox's applets as hard links (not
# symlinks: the tests resolve programs like /usr/bin/touch and /bin/sh and
# want them to be different files).
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,etc,proc,sys,dev,tmp,run,root}
ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"; ln -s usr/lib "$root/lib"
kver=${kpkg#linux-image-}
unpack() { dpkg-deb --fsys-tarfile "$1" | tar -x --keep-directory-symlink -C "$root" "${@:2}"; }
unpack "$(debfile "$kpkg")" "./boot/vmlinuz-$kver"
mv "$root/boot/vmlinuz-$kver" "$work/vmlinuz"; rmdir "$root/boot"
unpack "$(debfile busybox-static)" ./bin/busybox
if [ "$with_python" = 1 ]; then
  for p in "${pyp[@]}"; do
    f=$(debfile "$p"); [ -n "$f" ] || { log "missing .deb for $p"; exit 1; }
    unpack "$f"
  done
  # What dpkg's maintainer scripts would have made: the python3 link, the
  # BLAS/LAPACK alternatives numpy loads, ld.so's cache is not needed.
  [ -e "$root/usr/bin/python3" ] || ln -s python3.11 "$root/usr/bin/python3"
  la=$root/usr/lib/aarch64-linux-gnu
  for l in blas/libblas.so.3 lapack/liblapack.so.3; do
    [ -e "$la/$(basename $l)" ] || ln -s "$l" "$la/$(basename $l)"
  done
  rm -rf "$root"/usr/share/{doc,man,locale,info,lintian}
fi
# Tests that read mount/host facts want these.
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' > "$root/etc/hosts"
echo arm64-vm > "$root/etc/hostname"

{ [ "${TC_ARM64_LONG:-0}" = 1 ] || echo -test.short; printf '%s\n' "$@"; } > "$root/tc/args"
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install /bin 2>/dev/null
/bin/busybox --install /sbin 2>/dev/null
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
# What udev/systemd would make: the tests resolve /dev/fd/N.
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
ip link set lo up
hostname arm64-vm
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root TMPDIR=/tmp LANG=C.UTF-8
export TRACECELL_BIN=/tc/bin/tracecell TRACECELL_ESCAPE_BIN=/tc/bin/escape TRACECELL_RACE_BIN=/tc/bin/race TRACECELL_NETMEM_BIN=/tc/bin/netmem TRACECELL_IOCTL_BIN=/tc/bin/ioctl TRACECELL_FSOPS_BIN=/tc/bin/fsops TRACECELL_TIDREUSE_BIN=/tc/bin/tidreuse TRACECELL_EXECRACE_BIN=/tc/bin/execrace TRACECELL_PIPEREOPEN_BIN=/tc/bin/pipereopen TRACECELL_SIGTHREAD_BIN=/tc/bin/sigthread
[ -x /usr/bin/python3 ] || export TRACECELL_ALLOW_NO_PYTHON=1 # TC_ARM64_PYTHON=0: the Python tests skip
echo "@@KERNEL \$(uname -srm) cpus=\$(nproc)"
[ -x /usr/bin/python3 ] && echo "@@PYTHON \$(/usr/bin/python3 -c 'import sys, numpy, pandas, matplotlib; print(sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "matplotlib", matplotlib.__version__)' 2>&1 | tail -1)"
set --
while IFS= read -r a; do [ -n "\$a" ] && set -- "\$@" "\$a"; done < /tc/args
for t in /tc/tests/*.test; do
  name=\$(basename "\$t" .test); dir=/src/\$(echo "\$name" | tr _ /)
  echo "@@START \$name"
  s=\$(date +%s)
  (cd "\$dir" && "\$t" -test.v -test.count=1 -test.timeout $test_timeout "\$@" 2>&1)
  rc=\$?
  echo "@@DONE \$name rc=\$rc secs=\$((\$(date +%s)-s))"
done
if [ -x /tc/bin/surface418 ]; then
  echo "@@START integration-418"
  s=\$(date +%s)
  (cd /src/integration && TRACECELL_SURFACE418=1 /tc/bin/surface418 /tc/tests/integration.test -test.v -test.count=1 -test.timeout $test_timeout "\$@" 2>&1)
  rc=\$?
  echo "@@DONE integration-418 rc=\$rc secs=\$((\$(date +%s)-s))"
fi
echo "@@ALLDONE"
sync
poweroff -f
EOF
chmod +x "$root/init"
log "packing the initramfs"
(cd "$root" && find . | cpio -o -H newc --quiet) > "$work/initramfs.cpio"
log "initramfs: $(du -h "$work/initramfs.cpio" | cut -f1), kernel $kpkg"

# ---- boot --------------------------------------------------------------------
cpu=max
qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on -S -display none -monitor none -serial none -nic none \
  -kernel /dev/null </dev/null >/dev/null 2>&1 & qp=$!; sleep 1
if kill -0 $qp 2>/dev/null; then kill $qp; cpu=max,pauth-impdef=on; fi
wait $qp 2>/dev/null || true
# pauth-impdef: the architected pointer-authentication cipher (QARMA) costs a
# lot under TCG; the implementation-defined one behaves the same for the guest.
log "booting: qemu-system-aarch64 -M virt -cpu $cpu -smp $smp -m $mem (TCG; log in $work/console.log)"
set +e
timeout --foreground -k 10 "$vm_timeout" qemu-system-aarch64 -M virt -cpu "$cpu" -smp "$smp" -m "$mem" \
  -accel tcg,thread=multi -nographic -no-reboot -nic none -monitor none -serial stdio \
  -kernel "$work/vmlinuz" -initrd "$work/initramfs.cpio" \
  -append "console=ttyAMA0 rdinit=/init panic=-1 quiet loglevel=4" </dev/null \
  | tee "$work/console.log" | grep --line-buffered -E '^(@@|--- FAIL|FAIL|ok|panic:)|Kernel panic'
qrc=${PIPESTATUS[0]}
set -e
tr -d '\r' < "$work/console.log" > "$work/console.txt"

# ---- summary -----------------------------------------------------------------
echo
echo "== arm64 VM summary =="
grep -m1 '^@@KERNEL' "$work/console.txt" | sed 's/^@@KERNEL /kernel: /' || true
grep -m1 '^@@PYTHON' "$work/console.txt" | sed 's/^@@PYTHON /python: /' || echo "python: none in the guest (tests that run it skip)"
[ $# -gt 0 ] && echo "test flags: $*"
fail=0
printf '%-28s %6s %6s %6s %6s   (top-level tests; subtests in brackets)\n' package pass fail skip secs
for name in $(grep '^@@START' "$work/console.txt" | awk '{print $2}'); do
  sect=$(awk -v n="$name" '$1=="@@START" && $2==n {on=1; next} on && /^@@DONE/ {exit} on' "$work/console.txt")
  done_line=$(grep "^@@DONE $name " "$work/console.txt" || true)
  rc=$(echo "$done_line" | sed -n 's/.*rc=\([0-9]*\).*/\1/p'); secs=$(echo "$done_line" | sed -n 's/.*secs=\([0-9]*\).*/\1/p')
  cnt() { echo "$sect" | grep -cE "^$1--- $2:" || true; }
  tp=$(cnt '' PASS); tf=$(cnt '' FAIL); ts=$(cnt '' SKIP)
  sp=$(cnt ' +' PASS); sf=$(cnt ' +' FAIL); ss=$(cnt ' +' SKIP)
  printf '%-28s %6s %6s %6s %6s   [%s/%s/%s]%s\n' "$name" "$tp" "$tf" "$ts" "${secs:-?}" "$sp" "$sf" "$ss" \
    "$( [ "${rc:-x}" = 0 ] || echo "  rc=${rc:-none}")"
  [ "${rc:-x}" = 0 ] || fail=1
  echo "$sect" | grep -E '^ *--- FAIL' | sed 's/^/    /' || true
done
grep -q '^@@ALLDONE' "$work/console.txt" || { echo "the VM did not finish the run (qemu status $qrc; see $work/console.txt)"; fail=1; }
echo "run time: $(( $(date +%s) - start ))s; console log: $work/console.txt"
[ $fail = 0 ] && echo "arm64 VM: all test binaries passed" || echo "arm64 VM: FAILED"
exit $fail
}
main "$@"
