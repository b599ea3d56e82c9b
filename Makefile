# lockfault: is my Redis lock actually safe? Settle it by experiment.
#
#   make scenario name=master-failover   run one scenario (installs what it needs)
#   make test                            unit and integration tests
#   make claims                          the whole catalogue -> claims.md, claims.png
#   make suite lock=single               one lock's report card (the property suite)
#   make suite worker='CMD'              the card of the lock an external worker declares
#   make cards                           every lock's card -> cards.md, cards.png, docs/CARDS.md
#   make rates                           every lock × property × 20, sharded locally -> docs/RATES.md
#   make bench                           acquire+release pairs/s per lock, harness throughput ratio; checker, check/report and history writer benchmarks
#   make bench-scenarios                 wall time of master-failover and of the single and redlock suites (both backends)
#   make bench-claims                    the same plus the wall time of the whole catalogue
#   make bench-first-contact             git clone + make scenario name=master-failover, empty Go caches, timed
#   make campaign-image                  the image the Kubernetes Job's pods run (docs/CAMPAIGNS.md)
#   make clean                           remove what killed runs left behind
#   make fuzz                            the fuzz targets, FUZZTIME each (default 10m)
#   make docs                            regenerate the tables in docs/ from the code

SHELL := /bin/bash
GO ?= go
BIN := bin/simulate
backend ?= auto
name ?= master-failover
lock ?= single
worker ?=
ARGS ?=
export TESTCONTAINERS_RYUK_DISABLED := true

.PHONY: all deps modules debs-servers debs-python debs-php debs-test build simulate campaign-image adapters clock-overlay shim image scenario test test-lockfault test-modules claims suite cards rates false-alarms bench bench-scenarios bench-claims bench-first-contact hunt-libraries clean vet fuzz docs

all: build

# Debian packages, by what needs them. Each target installs only the group it
# needs (.ci/apt-need: apt runs only when one is missing, and says in one
# line what it installs and why); `make deps` installs them all (CI).
DEBS_SERVERS := redis-server redis-sentinel etcd-server
DEBS_PYTHON := python3 python3-redis python3-tooz
DEBS_PHP := php-cli php-redis php-malkusch-lock php-symfony-lock php-illuminate-cache php-illuminate-redis
# The clock shim's compiler; iproute2 and Chromium only the tests use (the
# index page's test renders it).
DEBS_TEST := gcc make iproute2 chromium
DEBS := $(DEBS_SERVERS) $(DEBS_PYTHON) $(DEBS_PHP) $(DEBS_TEST)
APT_NEED := bash .ci/apt-need
# A worker (make suite worker=..., or -worker in a scenario's ARGS) brings
# its language's lock libraries.
WORKER_DEBS = $(if $(findstring python,$(worker) $(ARGS)),debs-python) $(if $(findstring php,$(worker) $(ARGS)),debs-php)

# Every Debian package and Go module lockfault uses (.ci/run).
deps: modules
	@$(APT_NEED) "make deps installs every Debian package lockfault uses" $(DEBS)
	@# Debian may start the packaged redis-server and etcd services. They are
	@# left alone: lockfault runs its own nodes on ports the kernel picks (or in
	@# containers), never 6379 or 2379, and stops only what it started.

modules:
	$(GO) mod download
	cd adapters && $(GO) mod download
	cd tools && $(GO) mod download

debs-servers:
	@$(APT_NEED) "the servers lockfault's nodes run (Redis, Sentinel, etcd)" $(DEBS_SERVERS)
debs-python:
	@$(APT_NEED) "the Python workers' interpreter and lock libraries (examples/python-*)" $(DEBS_PYTHON)
debs-php:
	@$(APT_NEED) "the PHP workers' interpreter and lock libraries (examples/php-*)" $(DEBS_PHP)
debs-test:
	@$(APT_NEED) "make test runs every server and worker, the clock shim and the index page in Chromium" $(DEBS)

# A build from a clean git tree names its commit (campaign shards and
# their merge must agree on it, whatever folder each machine built in);
# with local changes it is named by the binary's hash (runner/version.go).
REVISION = $(shell git status --porcelain 2>/dev/null | grep -q . || git rev-parse HEAD 2>/dev/null)
build: modules simulate adapters

# bin/simulate alone (make scenario builds lockfault-ext only when its lock
# is a published library's: simulate run -needs-ext).
simulate: shim clock-overlay
	$(GO) build $(CLOCK_FLAGS) -ldflags "-X github.com/lockfault/lockfault/runner.revision=$(REVISION)" -o $(BIN) ./cmd/simulate
	@# The proxies' server runs as the real toxiproxy-server program, found
	@# beside bin/simulate (cluster/toxiapi.go); go.mod pins it as a tool.
	@# The same flags as the node image's copy (cluster/image/build.sh): its build is then the cache's.
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server

# The clock overlay (docs/FAULTS.md, clock-client): every Go worker binary
# lockfault builds is built against a copy of the toolchain's time.go whose
# time.Now adds the client clock offset to its wall reading, so a clock
# step moves the lock library's own time.Now. Generated from the local
# GOROOT into build/_clock (not checked in); it fails when the toolchain's
# time.Now is not the one it knows how to patch.
CLOCK_OVERLAY := build/_clock/overlay.json
CLOCK_FLAGS = -overlay $(abspath $(CLOCK_OVERLAY)) -tags lockfault_clock
clock-overlay:
	@$(GO) run ./faults/clockoverlay -goroot "$$($(GO) env GOROOT)" -out build/_clock >/dev/null

# The published Go lock libraries' worker (its own module, adapters/go.mod):
#   ./bin/simulate suite -worker bin/lockfault-ext -lock rueidislock
adapters: clock-overlay
	cd adapters && $(GO) build $(CLOCK_FLAGS) -o ../bin/lockfault-ext ./cmd/lockfault-ext

shim:
	@[ -f faults/clockshim/libclockshim.so ] && [ -f faults/clockshim/libconnectremap.so ] || command -v $${CC:-gcc} >/dev/null || \
	  $(APT_NEED) "the clock shim and the connect remap (faults/clockshim) are compiled from C" gcc
	@bash faults/clockshim/build.sh

# The campaign image (the Kubernetes Job's pods: docs/CAMPAIGNS.md), built
# offline as the node image is: simulate, lockfault-ext, the servers, the
# clock shim and the Python and PHP workers' packages, tagged by lockfault's
# version, running as UID/GID 65532. Prints its tag last.
campaign-image: debs-servers debs-python debs-php build
	@bash cluster/image/campaign.sh

# The node image, built offline from the host's binaries (no registry here).
image: shim
	@if docker info >/dev/null 2>&1; then bash cluster/image/build.sh; else echo "no Docker engine: the process backend will be used"; fi

# Only the servers the scenario's topology runs (and -worker's interpreter,
# given in ARGS) are installed: `simulate run -packages` names them.
scenario: $(WORKER_DEBS) simulate
	@pkgs=$$(./$(BIN) run -packages $(ARGS) $(name)) && \
	  $(APT_NEED) "scenario $(name) runs them" $$pkgs
	@[ "$$(./$(BIN) run -needs-ext $(ARGS) $(name))" = no ] || $(MAKE) --no-print-directory adapters
	@$(MAKE) --no-print-directory image
	./$(BIN) run -backend $(backend) $(ARGS) $(name)

test: debs-test build image vet
	@# lockfault's module beside the three others (their tests wait on runs
	@# and containers, not on the cores: make test used 40 % of both).
	$(MAKE) --no-print-directory -j2 test-lockfault test-modules

# Vet with the flags the tests and bin/ are built with, so that the three
# share their compiled packages (a plain vet compiled the whole module a
# second time: 116 s of a fresh machine's make test, against 32 s), and the
# one file those flags leave out on its own.
vet: clock-overlay
	$(GO) vet $(CLOCK_FLAGS) ./...
	$(GO) vet ./worker/clock_plain.go

# The suite and runner first: the longest packages (7 and 5 min), started
# at once instead of after the others.
test-lockfault:
	@# With the clock overlay: the test binaries are the built-in locks' workers.
	$(GO) test $(CLOCK_FLAGS) -count=1 -timeout 30m ./suite ./runner ./...

test-modules:
	@# examples/golock is its own module: a user's lock tested with lockfaulttest.
	cd examples/golock && $(GO) vet ./... && LOCKFAULT_BACKEND=process $(GO) test -count=1 -short -timeout 30m ./...
	cd adapters && $(GO) vet $(CLOCK_FLAGS) ./... && $(GO) test $(CLOCK_FLAGS) -count=1 -timeout 30m ./...
	@# tools is its own module too: actionlint on the shipped workflow.
	cd tools && $(GO) vet ./... && $(GO) test -count=1 ./...

# Three rows at a time: most of a row is its schedule's waits, so the 2 cores
# carry three (measured: under 5 min on both backends; 174 of 175 rows
# matched over five runs, the one miss not identified).
claims: debs-servers build image
	./$(BIN) claims -backend $(backend) -parallel 3 $(ARGS)

# One lock's report card: reports/suite/<lock>/<run-id>/ (suite.md, .html,
# .png, .json, junit.xml). Exit 0 as the promise table expects (a built-in
# lock) or all held (a worker's lock), 1 otherwise, 2 harness failure.
# With worker='COMMAND' the lock is the one an external worker declares:
#   make suite worker='/usr/bin/python3 examples/python-redis/worker.py'
suite: debs-servers $(WORKER_DEBS) build image
	./$(BIN) suite $(if $(worker),-worker '$(worker)',-lock $(lock)) -backend $(backend) $(ARGS)

# Every lock lockfault ships (its own, and the Go libraries' through
# lockfault-ext), every Python and PHP library through its worker, and the
# lock × property table (cards.md, cards.png, linking every report), and
# docs/CARDS.md (what was measured, with versions, linking nothing) with
# its tallies in README.md. To card some locks only (a lock new to
# lockfault) without running every other lock again:
#   ./bin/simulate cards -backend process -locks A,B -summary docs/CARDS.md -readme README.md -add
# replaces (or adds) their rows and findings and keeps every other lock's.
# One worker command per line (a command holds spaces, so the list is split
# on newlines, not on words).
define WORKERS
/usr/bin/python3 examples/python-redis/worker.py
/usr/bin/python3 examples/python-redis/worker_asyncio.py
/usr/bin/python3 examples/python-tooz/worker.py
/usr/bin/php examples/php-malkusch/worker.php
/usr/bin/php examples/php-symfony/worker.php
/usr/bin/php examples/php-symfony/worker_combined.php
/usr/bin/php examples/php-laravel/worker.php
/usr/bin/python3 examples/python-redis/worker_cluster.py
/usr/bin/php examples/php-symfony/worker_cluster.php
/usr/bin/php examples/php-laravel/worker_cluster.php
endef
export WORKERS
# The libraries' regressions: a finding of docs/FINDINGS.md kept as its
# minimal scenario in examples/<worker>/regressions/ (a Go library's in
# adapters/golibs/regressions/). Every card is given
# them all (-extra); each runs on the card of the lock its scenario names,
# as a row extra/<name> that holds once the library no longer breaks there.
comma := ,
empty :=
space := $(empty) $(empty)
REGRESSIONS = $(subst $(space),$(comma),$(strip $(wildcard examples/*/regressions adapters/golibs/regressions)))
cards: debs-servers debs-python debs-php build image
	@args=(); while IFS= read -r w; do [ -n "$$w" ] && args+=(-worker "$$w"); done <<< "$$WORKERS"; \
	set -x; ./$(BIN) cards -backend $(backend) -parallel 2 -summary docs/CARDS.md -readme README.md $(if $(REGRESSIONS),-extra $(REGRESSIONS)) "$${args[@]}" $(ARGS)

# Hunt every published library (docs/FINDINGS.md, docs/HUNT.md): each Go
# library lockfault-ext serves (its known limits from the promise table)
# and each library worker in examples/ (its known limits from its card in
# docs/CARDS.md, given with -known), HUNT_TIME each, on $(backend), with the
# HUNT_SEARCH search, HUNT_PARALLEL schedules at once, collecting every
# distinct violation (-keep-going), one after the other, into
# reports/hunt-libraries/<lock>/<run id>/; each hunt's last lines go to
# reports/hunt-libraries/summary.txt. The Go libraries' cluster locks
# (HUNT_CLUSTER_LIBS) run on a Redis Cluster, where the hunt also draws the
# cluster's failovers, slot migration and minority split. 16 libraries × 30
# minutes is 8 hours a backend; `make hunt-libraries HUNT_TIME=3m
# HUNT_ARGS='-shrink-runs 12 -rate-runs 5'` is a first look (HUNT_ARGS: more
# hunt flags; HUNT_GO_LIBS=, HUNT_CLUSTER_LIBS= and HUNT_WORKERS= narrow the
# list).
HUNT_TIME ?= 30m
# learn: on the mutation locks it found as many as the random search, and the
# one the random search mostly missed (broken-extend-from-end) with every
# seed (docs/HUNT.md, "Measured: the learning search beside the random one").
HUNT_SEARCH ?= learn
HUNT_PARALLEL ?= 4
HUNT_GO_LIBS ?= etcd go-zero gocron-redis-lock redislock redsync rueidislock
HUNT_CLUSTER_LIBS ?= redislock-cluster redsync-cluster rueidislock-cluster
# One library worker a line: its known limits (from its card), its command.
# A cluster worker (worker_cluster.*) is told its single-master twin's
# limits: the same lock, whose docs promise nothing more on a cluster.
define HUNT_WORKERS
node-clock,failover /usr/bin/python3 examples/python-redis/worker.py
node-clock,failover /usr/bin/python3 examples/python-redis/worker_asyncio.py
node-clock,failover,client-crash /usr/bin/python3 examples/python-tooz/worker.py
client-clock,node-clock /usr/bin/php examples/php-malkusch/worker.php
client-clock,node-clock,client-crash,failover /usr/bin/php examples/php-symfony/worker.php
client-clock,node-clock,client-crash,node-restart,partition /usr/bin/php examples/php-symfony/worker_combined.php
node-clock,failover /usr/bin/php examples/php-laravel/worker.php
node-clock,failover /usr/bin/python3 examples/python-redis/worker_cluster.py
client-clock,node-clock,client-crash,failover /usr/bin/php examples/php-symfony/worker_cluster.php
node-clock,failover /usr/bin/php examples/php-laravel/worker_cluster.php
endef
export HUNT_WORKERS
hunt-libraries: debs-servers debs-python debs-php build $(if $(filter docker,$(backend)),image)
	@mkdir -p reports/hunt-libraries
	@hunt() { ./$(BIN) hunt -time $(HUNT_TIME) -search $(HUNT_SEARCH) -parallel $(HUNT_PARALLEL) -keep-going \
	    -backend $(backend) -reports reports/hunt-libraries $(HUNT_ARGS) "$$@" > reports/hunt-libraries/last.log 2>&1; rc=$$?; \
	  { echo "== $$* (exit $$rc)"; grep -E '^hunt |^hunt of|^  [a-z]' reports/hunt-libraries/last.log; } | tee -a reports/hunt-libraries/summary.txt; }; \
	for lib in $(HUNT_GO_LIBS) $(HUNT_CLUSTER_LIBS); do hunt -lock $$lib; done; \
	while read -r known w; do [ -n "$$w" ] && hunt -known "$$known" -worker "$$w"; done <<< "$$HUNT_WORKERS"

# How often each outcome comes back (campaign/definitions/rates.yaml: every lock ×
# every property × 20 runs), as a sharded campaign on this machine: SHARDS
# processes at once, each its slice PARALLEL runs at a time, on the process backend unless
# backend= names one, then one merge into docs/RATES.md. It takes hours:
# a `make rates` stopped (Ctrl-C, a machine's end) continues where it
# stopped when run again from the same commit's build (each shard resumes
# from its results.jsonl); a build of another commit is refused by the
# folder (`rm -rf reports/rates`). docs/RATES.md is replaced only by a
# complete merge (merge exits 2 on an incomplete one; 1, a complete one
# with cells that differ from the promise table, still replaces it).
# docs/CAMPAIGNS.md spreads it over machines.
SHARDS ?= 4
PARALLEL ?= 3
rates: debs-servers build $(if $(filter docker,$(backend)),image)
	mkdir -p reports/rates/logs
	@for i in $$(seq 1 $(SHARDS)); do \
	  ./$(BIN) campaign -def campaign/definitions/rates.yaml -backend $(if $(filter auto,$(backend)),process,$(backend)) -shard $$i/$(SHARDS) -parallel $(PARALLEL) -results reports/rates/shard-$$i >> reports/rates/logs/shard-$$i.log 2>&1 & \
	done; wait
	@./$(BIN) merge -out reports/rates/merged -summary reports/rates/RATES.md reports/rates/shard-*; rc=$$?; \
	if [ $$rc -le 1 ]; then cp reports/rates/RATES.md docs/RATES.md && echo "docs/RATES.md rewritten"; fi; exit $$rc

# No false alarms (campaign/definitions/false-alarms.yaml): 200 hunt schedules against
# every correct lock lockfault ships and redis-py, each drawing only faults
# the lock promises to survive; every cell must come back held. Sharded as
# rates is, into reports/false-alarms/merged (hours on one machine); it
# resumes as rates does.
false-alarms: debs-servers build image
	mkdir -p reports/false-alarms/logs
	@for i in $$(seq 1 $(SHARDS)); do \
	  ./$(BIN) campaign -def campaign/definitions/false-alarms.yaml -backend $(backend) -shard $$i/$(SHARDS) -results reports/false-alarms/shard-$$i >> reports/false-alarms/logs/shard-$$i.log 2>&1 & \
	done; wait
	./$(BIN) merge -out reports/false-alarms/merged reports/false-alarms/shard-*

# Per-lock pairs/s, then the harness's grants/s against a raw go-redis loop
# measured in the same run (ratio). Benchmarks only: nothing here is timed
# against a limit.
bench: debs-servers build
	$(GO) test -run '^$$' -bench . -benchtime 2s ./lockimpl/
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./checker/ ./cmd/simulate/
	$(GO) test -run '^$$' -bench Writer -benchtime 200000x ./history/
	$(GO) test -run '^$$' -bench HarnessThroughput -benchtime 1x ./runner/
	$(GO) test -run '^$$' -bench HuntSchedules -benchtime 1x -timeout 30m ./hunt/

bench-scenarios: debs-servers build image
	@bash tools/bench/scenarios.sh

bench-claims: debs-servers build image
	@BENCH_CLAIMS=1 bash tools/bench/scenarios.sh

# The README's first command from a clone with empty Go caches (tools/bench/first-contact.sh).
bench-first-contact:
	@bash tools/bench/first-contact.sh

# Every native fuzz target (Fuzz* in these packages) for FUZZTIME each. Their
# seed corpora (testdata/fuzz/) also run as plain tests in `make test`.
FUZZTIME ?= 10m
FUZZPKGS ?= ./scenarios ./checker ./worker ./history ./card ./resp ./runner ./cmd/simulate
fuzz:
	@for pkg in $(FUZZPKGS); do \
	  for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$target ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# The tables in docs/ are generated from the code (a test fails when one is
# stale): rewrite them.
docs: adapters
	$(GO) test -count=1 ./docs -update

clean:
	-./$(BIN) clean
	rm -rf bin
