# Build, test and CI entry points. `make help` lists the targets.

GO      ?= go
PKG     := github.com/mediated-coevo/harness
BIN     ?= bin/harness
# A tagged commit builds as its tag, anything else as "dev". The commit gets
# "-dirty" when the working tree has uncommitted changes; outside a git
# checkout it stays empty and the binary falls back to Go's build info.
VERSION ?= $(shell git describe --tags --exact-match 2>/dev/null || echo dev)
COMMIT  ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null || c="$$c-dirty"; } && echo "$$c")
LDFLAGS := -X $(PKG)/harness/rundir.Version=$(VERSION) -X $(PKG)/harness/rundir.gitCommit=$(COMMIT)
# Docker integration tests build images; give the whole suite room.
TEST_TIMEOUT ?= 30m

.PHONY: help build install test lint base-image smoke bench

help:
	@echo "make build       build $(BIN) (version $(VERSION), commit $(COMMIT))"
	@echo "make install     install harness into GOBIN (default: GOPATH/bin), so that it runs as 'harness'"
	@echo "make test        run every test: go test -race ./... (Docker tests skip without an engine, fail instead with HARNESS_REQUIRE_DOCKER=1; TEST_JSON=FILE also records go test -json events)"
	@echo "make lint        gofmt must list nothing; go vet ./..."
	@echo "make base-image  build the local base image harness-base:bookworm (debootstrap + docker import)"
	@echo "make smoke       the offline smoke matrix on the pinned smoke task set"
	@echo "make bench       Go benchmarks of the harness's own overhead"

build:
	@echo "== building $(BIN) (version $(VERSION), commit $(COMMIT))"
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/harness

install:
	@echo "== installing harness (version $(VERSION), commit $(COMMIT)) into $$(d=$$($(GO) env GOBIN); echo $${d:-$$($(GO) env GOPATH)/bin})"
	$(GO) install -trimpath -ldflags "$(LDFLAGS)" ./cmd/harness

# TEST_JSON=FILE also records go test's -json events in FILE (CI lists the
# slowest tests from it); the terminal then shows go test -v's output.
TEST_JSON ?=

test:
ifeq ($(TEST_JSON),)
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...
else
	bash -o pipefail -c '$(GO) test -race -json -timeout $(TEST_TIMEOUT) ./... | tee "$(TEST_JSON)" | jq --unbuffered -j "select(.Action == \"output\") | .Output"'
endif

lint:
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path '*/testdata/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt -l lists files that need formatting:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

base-image:
	@echo "== base image harness-base:bookworm: built from Debian packages when missing or outdated (debootstrap + docker import, a few minutes the first time)"
	bash benchmarks/baseimage/build.sh

# Runs offline (no model endpoint, no key): a test of the machinery, not evidence.
SMOKE_FLAGS ?= --iterations 2

smoke: base-image build
	@echo "== offline smoke matrix on the pinned smoke task set with the offline model provider, flags: $(SMOKE_FLAGS)"
	@echo "== the first run builds each smoke task's image; a progress line follows every few seconds"
	$(BIN) matrix --task-set smoke --offline $(SMOKE_FLAGS)

bench:
	bash .ci/bench
