# Tugboat. `make build` puts every binary in bin/ (and tugboat-init, which
# hack/install.sh runs to write a worker's containerd config); `make test` runs the whole
# suite (real etcd, containerd, CNI: run hack/install-deps.sh first, as root).
GO      ?= go
BIN     := bin
CMDS    := $(notdir $(wildcard cmd/*))
LDFLAGS := -s -w
# An execution count, not a duration: with a duration Go's fuzzing coordinator
# can fail a target with a bare "context deadline exceeded" (and no crasher)
# when a starved worker misses the deadline; a count has no deadline to race.
# 50000 executions take 2-10 s per target on 2 cores.
FUZZTIME ?= 50000x
CONTAINERD_VERSION ?= v2.4.2
RUNC_VERSION ?= v1.5.3
TEST_TIMEOUT ?= 25m

export CGO_ENABLED ?= 0

.PHONY: all build test test-containerd2 test-native unit fuzz lint generate deps up down compose-images static local-up local-down clean bench images

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(CMDS)) ./deploy/tugboat-init

# The full suite, as CI runs it: every package (tests that need root,
# containerd or docker run here too), then each fuzz target briefly. The
# static third-party binaries (cached) come first: the compose images and
# the image-push test need them, and packages test in parallel.
test: lint static
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) test-containerd2
	$(MAKE) test-native
	$(MAKE) fuzz

# The CRI runtime's tests again on the compose node image's containerd
# (2.x, static, from hack/build-static.sh) — the full suite runs on
# Debian's 1.6 — and the kubelet binary's CRI wiring on it: crictl's view
# of its pods, the missing sandbox image, --containerd-dir and --cleanup
# (e2e/kubelet, a test cluster whose nodes run that containerd).
CRI_E2E_TESTS := TestCrictlShowsPods|TestMissingSandboxImage|TestCleanupAndContainerdDirCRI
test-containerd2:
	@static=$$(hack/build-static.sh) && \
	  PATH=$$static/containerd-$(CONTAINERD_VERSION):$$static/runc-$(RUNC_VERSION):$$PATH \
	  $(GO) test -count=1 -timeout 10m ./kubelet/runtime/cri && \
	  PATH=$$static/containerd-$(CONTAINERD_VERSION):$$static/runc-$(RUNC_VERSION):$$PATH \
	  TUGBOAT_E2E_RUNTIME=cri $(GO) test -count=1 -timeout 10m -run '^($(CRI_E2E_TESTS))$$' ./e2e/kubelet

# The kubelet's end-to-end tests again on its native containerd backend
# (--runtime containerd; the suite runs them on the default, CRI).
test-native:
	TUGBOAT_E2E_RUNTIME=containerd $(GO) test -count=1 -timeout 15m ./e2e/kubelet

unit:
	$(GO) test -count=1 -short ./...

fuzz:
	@set -e; for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$t/*_test.go | sed 's/func //'); do \
	    echo "fuzz $$t $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$t; \
	  done; \
	done

# gofmt, a tidy go.mod and go.sum (go mod tidy -diff fails on any change
# tidy would make), go vet.
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if ! $(GO) mod tidy -diff; then echo "go.mod/go.sum are not tidy (the diff above): run go mod tidy"; exit 1; fi
	$(GO) vet ./...

generate:
	hack/generate.sh

deps:
	hack/install-deps.sh

bench:
	hack/bench/run.sh

# The test and example images as OCI archives (no registry, no docker), and
# the CRI sandbox (pause) image nodes import (install.sh, tugboat up).
images:
	@mkdir -p $(BIN)/images
	$(GO) run ./hack/mkimage -o $(BIN)/images/busybox.tar busybox
	$(GO) run ./hack/mkimage -o $(BIN)/images/echo.tar echo
	$(GO) run ./hack/mkimage -o $(BIN)/images/pause.tar pause

# The docker-compose cluster (docker-compose.yaml): build every image on this
# host (no registry, no base image), start it, wait for Ready nodes, write
# ~/.tugboat/config. `make down` removes containers, networks and volumes
# (IMAGES=1: the images too). HA=1: the highly available control plane
# (deploy/docker/docker-compose.ha.yaml: 3 etcd members, 2 apiservers, 2
# schedulers, 2 controller-managers). Settings: hack/lib/compose.sh.
up:
	TUGBOAT_HA=$(or $(HA),$(TUGBOAT_HA)) hack/up.sh

down:
	TUGBOAT_HA=$(or $(HA),$(TUGBOAT_HA)) hack/down.sh

# The compose images alone, and the static third-party binaries they need
# (cached in ~/.cache/tugboat).
compose-images:
	hack/build-images.sh

static:
	hack/build-static.sh

# The control plane (and, as root, a node) as processes on this machine.
local-up: build
	hack/local-up.sh up

local-down:
	hack/local-up.sh down

clean:
	rm -rf $(BIN)
