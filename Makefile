# Rauha build and test entry points. `make build` needs Go and gcc (cgo for
# libcontainer's nsenter and libseccomp); no clang: the eBPF objects are
# committed (`make generate` rebuilds them).
GO        ?= go
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.1.0-dev)
COMMIT    := $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION) -X main.gitCommit=$(COMMIT)
# urfave_cli_no_docs leaves out cli's man/markdown generator, which rauha
# never calls: its markdown package builds a 2000-entry table at start-up
# (0.2 MB, 3-7 ms on this machine) in every rauha call.
# netgo and osusergo keep the static build free of glibc's NSS.
# runc_nocriu leaves out libcontainer's checkpoint/restore (go-criu and its
# protobuf code), which rauha refuses (checkpoint.go): 0.68 MB of a 12.56 MB
# binary. Peak RSS moved by less than 130 KB: that code was never paged in.
BUILDTAGS ?= seccomp urfave_cli_no_docs netgo osusergo runc_nocriu
# Every container start runs this binary at least three times (create, its
# init, start): it is linked statically (libseccomp.a from libseccomp-dev, as
# runc's release builds are) and stripped: no dynamic loader, a quarter of
# the file, and 1-3 ms off each `rauha --version` here (hyperfine).
STATIC    := -s -w -extldflags -static

.PHONY: build agent agent-image crd build-arm64 vet-arm64 build-profile install generate test integration test-k8s test-vm test-all demo bench clean

build:
	CGO_ENABLED=1 $(GO) build -trimpath -tags "$(BUILDTAGS)" -ldflags "$(LDFLAGS) $(STATIC)" -o rauha .

# The Kubernetes node agent (docs/kubernetes.md): a binary of its own, so
# that rauha does not carry the Kubernetes client libraries.
agent:
	CGO_ENABLED=1 $(GO) build -trimpath -tags "$(BUILDTAGS)" -ldflags "$(LDFLAGS) $(STATIC)" -o rauha-agent ./cmd/rauha-agent

# The image deploy/agent.yaml runs: the static agent alone, as an OCI archive
# (import it on each node, or copy it to a registry).
AGENT_IMAGE ?= localhost/rauha-agent:latest
agent-image: agent
	bash scripts/agent-image.sh rauha-agent rauha-agent-image.tar $(AGENT_IMAGE)

# deploy/crd.yaml is generated from the Go types (a test keeps it so).
crd:
	$(GO) run -tags "$(BUILDTAGS)" ./cmd/rauha-agent crd >deploy/crd.yaml

# The same static cgo build for arm64, from amd64: scripts/setup-debian.sh
# installs the cross compiler and arm64's libseccomp.a.
ARM64ENV  := GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig

build-arm64:
	$(ARM64ENV) $(GO) build -trimpath -tags "$(BUILDTAGS)" -ldflags "$(LDFLAGS) $(STATIC)" -o rauha-arm64 .

vet-arm64:
	$(ARM64ENV) $(GO) vet -tags "$(BUILDTAGS)" ./...

# rauha-prof writes a CPU profile of each call to $RAUHA_CPUPROFILE.<pid>
# (profile.go); merge many with `go tool pprof rauha-prof FILES...`.
build-profile:
	CGO_ENABLED=1 $(GO) build -trimpath -tags "$(BUILDTAGS) rauha_profile" -ldflags "$(LDFLAGS)" -o rauha-prof .

install: build
	install -D -m 0755 rauha $(DESTDIR)$(BINDIR)/rauha

generate:
	$(GO) generate ./...

test:
	$(GO) test -tags "$(BUILDTAGS)" ./...

integration: build
	bats --jobs 1 --timing tests/bats

# A real single-node Kubernetes (kube-apiserver, etcd, kubelet, containerd)
# running pods with ./rauha; the first run builds the Kubernetes binaries
# (minutes) into /var/cache/rauha-k8s. Root only.
test-k8s: build
	bash tests/k8s/build.sh
	bats --jobs 1 --timing tests/k8s

# The bpf-lsm backend in QEMU guests (this host refuses LSM programs).
test-vm:
	bpf/vmtest.sh 6.1 6.12 sid nobpf

test-all:
	./scripts/test-all.sh

demo:
	./scripts/demo.sh

# rauha against runc 1.1.5 and 1.5 (issue 6): a table on stdout, JSON in
# bench.json. Several minutes, root only; not part of `make test`.
bench: build
	./scripts/bench.sh

clean:
	rm -f rauha rauha-agent rauha-prof
