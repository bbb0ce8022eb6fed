# tracecell — see README.md.
#   make demo    build, then run the bundled agent-style script under tracecell
#   make test    every test: unit, filter VM, integration (native, on the 4.18 surface), and as root
#                the integration, server and worker suites again as nobody
#   make bench   speed against the bare program and strace; sessions against jupyter_client
#   make scale   three cells in network namespaces behind HAProxy and nginx, with faults (root; not in make test)
#   make install copy bin/tracecell (make build first) to $(PREFIX)/bin, PREFIX=/usr/local by default
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.Version=$(VERSION)
export CGO_ENABLED = 0
# urfave_cli_no_docs: no man-page generator (blackfriday) in the binary: smaller and faster to start.
export GOFLAGS = -tags=urfave_cli_no_docs

BIN      := bin/tracecell
SURFACE  := bin/surface418
ITEST    := bin/integration.test
PY       ?= /usr/bin/python3
PREFIX   ?= /usr/local

.PHONY: all deps venv build build-arm64 install demo test test-arm64 unit integration integration-418 test-nobody itest python-test bench scale clean

all: build

deps:
	@scripts/deps.sh

# bin/venv: a Python venv with the pinned PyPI packages of python/requirements-test.txt
# (the real mcp client, openai-agents) and the tracecell package installed editable.
venv:
	@scripts/deps.sh venv

build: deps
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tracecell

# No dependency on build: `sudo make install` must not run the Go toolchain as root.
install:
	@test -x $(BIN) || { echo "make install: $(BIN) is missing: run make build first, then make install" >&2; exit 1; }
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/tracecell

build-arm64: deps
	GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/tracecell-linux-arm64 ./cmd/tracecell

demo: build
	@scripts/demo.sh $(BIN) $(PY)

# deploy/helmtest (a module of its own: Helm's dependencies stay out of
# go.mod) lints and renders the Helm chart deploy/helm/tracecell and
# decodes every document strictly, as deploy's test does the plain manifests.
# cmd/tracecell's TestREADMECommands runs the sh blocks of README.md and README.ko.md
# against a `make install` into a temporary PREFIX.
# staticcheck (default checks, U1000 unused code among them) fails on any
# finding, for both architectures; deadcode -test lists functions that no
# program or test reaches, and any line it prints fails the target
# (`deps.sh lint` builds both tools into bin/). bench/test_bench.py checks
# the benchmark's statistics.
unit: deps
	@scripts/deps.sh lint
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w on them):"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...
	bin/staticcheck ./...
	GOARCH=arm64 bin/staticcheck ./...
	@dead=$$(bin/deadcode -test ./...) || exit 1; \
	if [ -n "$$dead" ]; then echo "$$dead"; echo "deadcode: the functions above are unreachable: remove them" >&2; exit 1; fi
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /integration)
	$(PY) -m unittest discover -s bench -p 'test_*.py'
	GOARCH=arm64 $(GO) test -count=1 -exec /bin/true ./... >/dev/null
	@scripts/deps.sh helmtest
	cd deploy/helmtest && $(GO) vet ./... && $(GO) test -count=1 ./...

$(SURFACE): testdata/surface418/surface418.c
	@mkdir -p bin
	gcc -O2 -Wall -o $@ $<

integration: build
	TRACECELL_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 ./integration/

# The integration suite compiled once for the runs below.
itest: deps
	$(GO) test -c -o $(ITEST) ./integration/

# The same integration suite with every syscall newer than Linux 4.18
# returning ENOSYS, for tracecell and everything it runs.
integration-418: build itest $(SURFACE)
	cd integration && TRACECELL_BIN=$(CURDIR)/$(BIN) TRACECELL_SURFACE418=1 ../$(SURFACE) ../$(ITEST) -test.count=1

# The integration, server, worker and hideproc tests once more as an unprivileged user
# (nobody) when make test runs as root, as CI does: most operators run
# tracecell as an ordinary user.
test-nobody: build itest
	$(GO) test -c -o bin/server.test ./server/
	$(GO) test -c -o bin/worker.test ./worker/
	$(GO) test -c -o bin/hideproc.test ./internal/hideproc/
	TRACECELL_BIN=$(BIN) scripts/as-nobody.sh integration $(ITEST)
	scripts/as-nobody.sh server bin/server.test
	scripts/as-nobody.sh worker bin/worker.test
	scripts/as-nobody.sh internal/hideproc bin/hideproc.test

# The Python package's tests and the MCP server's tests with the real PyPI clients,
# against the binary just built.
python-test: build venv
	cd python && TRACECELL_BIN=$(CURDIR)/$(BIN) ../bin/venv/bin/python -m unittest discover -s tests -t . -v

test: unit build-arm64 integration integration-418 test-nobody python-test
	@echo "make test: all suites passed"

# Every package's tests (integration included, and again on the 4.18 surface) on
# a real arm64 kernel: Debian's arm64 kernel booted under qemu-system-aarch64 (TCG).
# About 15 minutes; not part of `make test`.
# Extra go test flags: make test-arm64 ARM64_FLAGS='-test.run TestRace'
test-arm64: deps
	TC_ARM64_SURFACE418=1 scripts/arm64-vm.sh $(ARM64_FLAGS)

# Three cells (tracecell serve as nobody), each in its own network namespace
# (ip netns, veth, 10.77.N.0/24), behind HAProxy and nginx (Debian's,
# installed by scripts/deps.sh scale) with deploy/proxy's configurations; a bounded load of
# sessions that set and check a variable; one fault per run (SIGKILL a
# cell, cut its link, SIGTERM it, restart it under the same name). Needs
# root for the namespaces; a few minutes. Not part of `make test`.
# SCALE_SESSIONS sets the sessions per run (default 150); the table of
# p50/p99 and verdicts is written to bin/scale.md.
scale: build
	@scripts/deps.sh scale
	TRACECELL_BIN=$(CURDIR)/$(BIN) TRACECELL_SCALE=1 TRACECELL_SCALE_SESSIONS=$(SCALE_SESSIONS) \
		TRACECELL_SCALE_OUT=$(CURDIR)/bin/scale.md $(GO) test -count=1 -v -timeout 40m -run TestScale ./scale/

bench: build
	@scripts/deps.sh bench
	$(PY) bench/bench.py --tracecell $(BIN)
	$(PY) bench/sessions.py --tracecell $(BIN) --python $(PY)

clean:
	rm -rf bin
