# lockfault: is my Redis lock actually safe? Settle it by experiment.
#
#   make scenario name=master-failover   run one scenario (installs what it needs)
#   make test                            unit and integration tests
#   make claims                          the whole catalogue -> claims.md, claims.png
#   make bench                           acquire+release pairs/s per lock, harness throughput ratio; checker, check/report and history writer benchmarks
#   make bench-scenarios                 wall time of master-failover (both backends) and of one suite
#   make bench-claims                    the same plus the wall time of the whole catalogue
#   make clean                           remove what killed runs left behind

SHELL := /bin/bash
GO ?= go
BIN := bin/simulate
backend ?= auto
name ?= master-failover
ARGS ?=
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: all deps build shim image scenario test claims bench bench-scenarios bench-claims clean vet

all: build

# Debian packages and Go modules. Skips apt when everything is present.
deps:
	@need=""; \
	for b in redis-server:redis-server redis-sentinel:redis-sentinel etcd:etcd-server gcc:gcc; do \
	  command -v $${b%%:*} >/dev/null 2>&1 || need="$$need $${b##*:}"; \
	done; \
	if [ -n "$$need" ]; then \
	  echo "installing:$$need"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need >/dev/null; \
	fi
	@# Debian may start the packaged services (as users redis and etcd);
	@# lockfault runs its own nodes and leaves other runs' alone.
	@-pkill -u redis 2>/dev/null; pkill -u etcd 2>/dev/null; true
	$(GO) mod download

build: deps shim
	$(GO) build -o $(BIN) ./cmd/simulate

shim:
	@bash faults/clockshim/build.sh

# The node image, built offline from the host's binaries (no registry here).
image: shim
	@if docker info >/dev/null 2>&1; then bash cluster/image/build.sh; else echo "no Docker engine: the process backend will be used"; fi

scenario: build image
	./$(BIN) run -backend $(backend) $(ARGS) $(name)

test: build image
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

claims: build image
	./$(BIN) claims -backend $(backend) -parallel 2 $(ARGS)

# Per-lock pairs/s, then the harness's grants/s against a raw go-redis loop
# measured in the same run (ratio). Benchmarks only: nothing here is timed
# against a limit.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./lockimpl/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./checker/ ./cmd/simulate/
	$(GO) test -run '^$$' -bench Writer -benchtime 200000x ./history/
	$(GO) test -run '^$$' -bench HarnessThroughput -benchtime 1x ./runner/

bench-scenarios: build image
	@bash bench/scenarios.sh

bench-claims: build image
	@BENCH_CLAIMS=1 bash bench/scenarios.sh

clean:
	-./$(BIN) clean
	rm -rf bin
