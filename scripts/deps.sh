#!/usr/bin/env bash
# Installs what `make demo`, `make test` and (with the argument bench) `make bench` need on a fresh
# Debian/Ubuntu machine: Debian packages through apt-get (only the missing
# ones), then the Go modules. Go itself must be installed (go.mod names the
# version; with GOTOOLCHAIN=auto the go command fetches it from the module proxy).
set -euo pipefail
cd "$(dirname "$0")/.."

want=(gcc libc6-dev make strace python3 python3-numpy python3-pandas python3-matplotlib btrfs-progs sqlite3 git)
# `deps.sh bench`: also what the session benchmark compares against.
if [ "${1:-}" = "bench" ]; then
  want+=(python3-jupyter-client python3-ipykernel)
fi
# `deps.sh scale`: also the proxies and tools `make scale` runs (their
# services are not used: the test starts its own instances).
if [ "${1:-}" = "scale" ]; then
  want+=(haproxy nginx iproute2)
fi
# `deps.sh venv`: also a Python venv (bin/venv) with the PyPI packages the
# integration tests of the Python package and the MCP server use.
if [ "${1:-}" = "venv" ]; then
  want+=(python3-venv)
fi
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${want[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "deps: installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "deps: need root to install ${missing[*]}: run as root or install them yourself" >&2; exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null 2>&1; then
  echo "deps: the go command is not installed: install Go 1.24 or newer (https://go.dev/doc/install)" >&2
  exit 1
fi
go mod download
# deploy/helmtest, the Helm chart's test, is a Go module of its own (Helm's
# packages and the Gateway API types stay out of tracecell's go.mod): its
# ~450 MB of modules are fetched only by `deps.sh helmtest` (make unit), not
# for make build or make demo.
if [ "${1:-}" = "helmtest" ]; then
  (cd deploy/helmtest && go mod download)
fi

# `deps.sh lint`: the static checkers make unit runs beside go vet, built
# from the Go module proxy into bin/ (not ~/go/bin: a clean clone needs
# nothing installed by hand), at pinned versions: staticcheck 2026.2.2
# (honnef.co/go/tools v0.8.2, which knows Go 1.26) and deadcode from
# golang.org/x/tools. Rebuilt only when missing or of another version.
if [ "${1:-}" = "lint" ]; then
  staticcheck_version=v0.8.2
  xtools_version=v0.52.0
  stamp=bin/.lint-versions
  want_stamp="staticcheck@$staticcheck_version deadcode@$xtools_version $(go env GOVERSION)"
  if [ ! -x bin/staticcheck ] || [ ! -x bin/deadcode ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want_stamp" ]; then
    echo "deps: building staticcheck $staticcheck_version and deadcode $xtools_version into bin/ (Go module proxy)"
    mkdir -p bin
    # GOFLAGS is cleared: the tools are not built with tracecell's build tags.
    GOBIN="$PWD/bin" GOFLAGS= go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
    GOBIN="$PWD/bin" GOFLAGS= go install "golang.org/x/tools/cmd/deadcode@$xtools_version"
    echo "$want_stamp" > "$stamp"
  fi
fi

if [ "${1:-}" = "venv" ]; then
  venv=bin/venv
  req=python/requirements-test.txt
  stamp=$venv/.tracecell-installed
  # Reinstall only when the pinned requirements or the package metadata changed.
  sum=$( { cat "$req"; cat python/pyproject.toml 2>/dev/null || true; } | sha256sum | cut -d' ' -f1)
  if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    echo "deps: creating the Python venv $venv from $req (PyPI)"
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    if [ -f python/pyproject.toml ]; then
      "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e ./python
    fi
    echo "$sum" > "$stamp"
  fi
  # The vLLM wheel python/tests/test_vllm_prompt.py reads vLLM's MCP tool
  # server and prompt code from: downloaded once (no dependencies, not
  # installed) and kept in bin/wheels across venv rebuilds.
  vllm_pin=$(grep -E '^vllm==' python/requirements-vllm.txt)
  if ! ls bin/wheels/vllm-"${vllm_pin#vllm==}"-*.whl >/dev/null 2>&1; then
    echo "deps: downloading the $vllm_pin wheel into bin/wheels (PyPI, about 340 MB, once)"
    mkdir -p bin/wheels
    "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: -d bin/wheels "$vllm_pin"
  fi
fi
