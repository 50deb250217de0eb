SHELL := /bin/bash
# rayflow build, test and demo entry points. `make help` lists them. The shell behind
# the longer targets lives in scripts/, one script per job, each runnable on its own
# (docs/operations.md#scripts).
GO      ?= go
PYTHON  ?= python3
BIN     := bin
RAYFLOW := $(BIN)/rayflow
PYREF   := $(PYTHON) conformance/reference/python/rayflow_canon.py

# Ray: a pinned venv and a local head that `make ray-up` starts and records in
# $(RAY_STATE); the engine/ray tests use it through RAYFLOW_RAY_ADDRESS (without
# it they start a private local cluster).
RAY_VERSION := 2.60.0
RAY_VENV    := .venv-ray
RAY_PY      := $(RAY_VENV)/bin/python
RAY_STATE   := .ray-local
RAY_PORT    ?= 6390
RAY_DASHBOARD_PORT ?= 8265
# The addresses given in the environment (make test uses them and leaves them running).
ENV_RAY_ADDRESS := $(if $(filter environment,$(origin RAYFLOW_RAY_ADDRESS)),$(RAYFLOW_RAY_ADDRESS))
export RAYFLOW_RAY_ADDRESS ?= $(shell cat $(RAY_STATE)/address 2>/dev/null)

# A private multi-node Ray cluster (scripts/ray-cluster.sh): a head and two worker
# nodes, each its own raylet, on free ports, recorded in $(RAY_CLUSTER_STATE); the
# engine/ray multi-node tests use it through RAYFLOW_RAY_CLUSTER.
RAY_CLUSTER_STATE := .ray-cluster

# PostgreSQL: a private cluster in $(PG_STATE) (scripts/pg.sh; its URL in $(PG_STATE)/url).
# Tests read it from RAYFLOW_TEST_DATABASE_URL (without it, or under -short, the
# PostgreSQL tests skip); the CLI from RAYFLOW_DATABASE_URL.
PG_STATE := .pg-local
ENV_DATABASE_URL := $(if $(filter environment,$(origin RAYFLOW_TEST_DATABASE_URL)),$(RAYFLOW_TEST_DATABASE_URL))
export RAYFLOW_TEST_DATABASE_URL ?= $(shell cat $(PG_STATE)/url 2>/dev/null)

# make demo's last step: rayflow serve and a Ray worker in the background, their
# process groups recorded in $(DEMO_STATE), until `make demo-down`.
DEMO_STATE := .demo-serve
DEMO_ADDR  ?= 127.0.0.1:8080

# The Makefile's settings, as the scripts read them.
SCRIPT_ENV = MAKE='$(MAKE)' GO='$(GO)' PYTHON='$(PYTHON)' RAYFLOW='$(RAYFLOW)' RAY_VERSION=$(RAY_VERSION) \
	RAY_VENV=$(RAY_VENV) RAY_PY=$(RAY_PY) RAY_STATE=$(RAY_STATE) RAY_PORT=$(RAY_PORT) \
	RAY_DASHBOARD_PORT=$(RAY_DASHBOARD_PORT) RAY_CLUSTER_STATE=$(RAY_CLUSTER_STATE) PG_STATE=$(PG_STATE) DEMO_STATE=$(DEMO_STATE) DEMO_ADDR=$(DEMO_ADDR)

# What `make test` checks once its services run (a list of targets).
TEST_CHECKS ?= fmt-check vet staticcheck cue-check generate-check gotest pytest test-multinode

.PHONY: help build demo demo-durable demo-serve demo-stop demo-down test test-checks test-short
.PHONY: fmt-check vet staticcheck cue-check generate generate-check gotest pytest conformance bench fuzz clean
.PHONY: ray-venv ray-up ray-down ray-cluster-up ray-cluster-down test-multinode pg-up pg-down chromium test-browser
.PHONY: bench-ray bench-ray-actors bench-durable bench-resume bench-progress bench-read screenshot

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

build: ## build the rayflow CLI into bin/
	$(GO) build -o $(RAYFLOW) ./tools/rayflow

# --- The demo ----------------------------------------------------------------

demo: build ray-venv ## the main demo end to end: the fan-out on a local Ray cluster, in process, as a durable PostgreSQL task; then rayflow serve with a live showcase run (make demo-down stops it)
	@$(SCRIPT_ENV) scripts/demo.sh

demo-durable: build ray-venv ## the durable path: enqueue the fan-out, a `rayflow worker` runs it on Ray, the task SUCCEEDED with the in-process result
	@$(SCRIPT_ENV) scripts/demo-durable.sh

demo-serve: build ray-venv ## start rayflow serve and a Ray worker in the background (on RAYFLOW_DATABASE_URL, else make pg-up's PostgreSQL), enqueue the order-fulfillment and recovery showcases, print their graph page URLs and the sign-in token
	@$(SCRIPT_ENV) scripts/demo-serve.sh start

demo-stop: # stop the rayflow serve and worker of demo-serve (their process groups), if running
	@$(SCRIPT_ENV) scripts/demo-serve.sh stop

demo-down: ## stop what make demo left running: rayflow serve, its worker, and the PostgreSQL that make demo started
	@$(SCRIPT_ENV) scripts/demo-serve.sh down

# --- Tests and checks ----------------------------------------------------------

test: ray-venv chromium ## everything CI checks, set-up included: creates .venv-ray, starts a Ray head and a private PostgreSQL for the run and stops them (a head of make ray-up or RAYFLOW_RAY_ADDRESS, a running make pg-up or RAYFLOW_TEST_DATABASE_URL from the environment, are used and left running)
	@RAYFLOW_RAY_ADDRESS='$(ENV_RAY_ADDRESS)' RAYFLOW_TEST_DATABASE_URL='$(ENV_DATABASE_URL)' $(SCRIPT_ENV) scripts/test.sh

test-checks: $(TEST_CHECKS) ## the checks of make test, against the services already running

test-short: ## go test -short ./...: unit tests only, no Ray and no PostgreSQL needed
	$(GO) test -short -count=1 ./...

fmt-check: ## gofmt must have nothing to change
	@scripts/fmt-check.sh

vet: ## go vet
	$(GO) vet ./...

staticcheck: ## staticcheck, pinned by the tool directive in go.mod
	$(GO) tool staticcheck ./...

cue-check: ## cue vet and cue fmt of schema/ with the pinned CUE (go tool cue)
	cd schema && $(GO) tool cue vet . && $(GO) tool cue fmt --check .

generate: ## regenerate every generated file (go generate ./...)
	$(GO) generate ./...

generate-check: ## go generate must not change any generated file
	@GO='$(GO)' scripts/generate-check.sh

gotest: ## go test -race ./... (includes the conformance suite and the Python reference)
	$(GO) test -race -count=1 ./...

pytest: ## unit tests of the independent Python reference
	$(PYTHON) -m unittest discover -s conformance/reference/python -t conformance/reference/python

conformance: build ## every vector, 1,000,000 number lines, against Go, the CLI and the Python reference
	$(RAYFLOW) conformance run --numbers 1000000
	$(RAYFLOW) conformance run --numbers 1000000 --impl '$(RAYFLOW)'
	$(RAYFLOW) conformance run --numbers 1000000 --impl '$(PYREF)'

fuzz: ## run every fuzz target of the module (found in the *_test.go files) for FUZZTIME each (default 30s)
	@GO='$(GO)' scripts/fuzz.sh

clean: ## remove build output
	rm -rf $(BIN)

# --- Services: Ray, PostgreSQL, Chromium -------------------------------------------

ray-venv: ## create .venv-ray with ray[default]==2.60.0 (reused when present)
	@$(SCRIPT_ENV) scripts/ray.sh venv

ray-up: ray-venv ## start a local Ray head (2 CPUs, 512 MiB object store) recorded in .ray-local/
	@$(SCRIPT_ENV) scripts/ray.sh up

ray-down: ## stop the Ray head that ray-up started (only that one)
	@$(SCRIPT_ENV) scripts/ray.sh down

ray-cluster-up: ray-venv ## start a private multi-node Ray cluster: a head (no CPUs) and worker nodes w1, w2 (1 CPU, resource rf_w1/rf_w2, 100 MB object store each), recorded in .ray-cluster/; prints its address
	@$(SCRIPT_ENV) scripts/ray-cluster.sh up

ray-cluster-down: ## stop the multi-node cluster that ray-cluster-up started (only its process groups)
	@$(SCRIPT_ENV) scripts/ray-cluster.sh down

test-multinode: ray-venv ## the multi-node tests (one of make test's checks) on the cluster of ray-cluster-up, else on one started and stopped here: items spread over nodes, large results across nodes, a node killed mid-map (engine/ray), the durable runner surviving it (durable, on RAYFLOW_TEST_DATABASE_URL)
	@$(SCRIPT_ENV) scripts/test-multinode.sh

pg-up: ## start the private PostgreSQL in .pg-local (apt-get install postgresql when missing); URL in .pg-local/url
	scripts/pg.sh up $(PG_STATE)

pg-down: ## stop the private PostgreSQL (its data stays in .pg-local)
	scripts/pg.sh down $(PG_STATE)

chromium: ## install Debian's chromium for the browser tests when it is missing
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(chromium --version 2>/dev/null)"; else \
		echo "chromium: installing the Debian package"; \
		{ apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; }; fi

test-browser: chromium pg-up ## the pages in headless Chromium (live, finished and 25k-node runs, axe-core accessibility checks, the pages' goals)
	RAYFLOW_TEST_DATABASE_URL=$$(cat $(PG_STATE)/url) $(GO) test -count=1 -run '^TestBrowser' -v ./serve/

screenshot: build chromium ## the README's screenshots of rayflow serve (docs/serve-*.png) from a real run on a database of its own (RAYFLOW_DATABASE_URL's server, else make pg-up's)
	@$(SCRIPT_ENV) scripts/screenshot.sh

# --- Benchmarks (side by side in one run) -------------------------------------------

bench: ## benchmarks, side by side in one run
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./sdk/canonical/ ./schema/ ./conformance/lifecycle/reducer/

bench-ray: ## two tables: rayflow (leaf processes, and a leaf library) vs a native Python Ray driver on one head (2k/20k leaves, windows 64/256, item batching, first leaf, coordinator heap); automatic batching (no-op, 2 ms and 200 ms leaves) against its goals
	RAYFLOW_BENCH=1 $(GO) test ./engine/ray -run '^TestBenchRay(Auto)?$$' -count=1 -v -timeout 60m

bench-ray-actors: ## coordinator heap of 1k vs 10k buffered map and fold; full vs terminal_only vs disabled wall time
	RAYFLOW_BENCH=1 $(GO) test ./engine/ray -run '^TestBenchRayActors$$' -count=1 -v -timeout 20m

bench-durable: ## durable queue: claim latency, idle queries and throughput for 1/4/8 workers, crash recovery after kill -9, no-op saturation, schedules, unique enqueue, fair admission
	@RAYFLOW_TEST_DATABASE_URL='$(ENV_DATABASE_URL)' $(SCRIPT_ENV) scripts/bench-pg.sh durable

bench-resume: ## resumable maps, each goal beside its measurement: kill -9 at 50 % of 10,000 items, a repair after 1 % failures, ledger overhead and statements per chunk; local, and Ray with RAYFLOW_RAY_ADDRESS
	@RAYFLOW_TEST_DATABASE_URL='$(ENV_DATABASE_URL)' $(SCRIPT_ENV) scripts/bench-pg.sh resume

bench-progress: ## progress storage (the reference's table shape, docs/operations.md#benchmarks): chains of 1k–100k nodes, sparse update, preparation heap at 250k/2M
	@RAYFLOW_TEST_DATABASE_URL='$(ENV_DATABASE_URL)' $(SCRIPT_ENV) scripts/bench-pg.sh progress

bench-read: ## progress reads (beside the reference's figures, docs/operations.md#benchmarks; SQL statements per read): chains of 1k/10k/25k nodes, page 100; then the same with the record cache off (RAYFLOW_TEST_DATABASE_URL, else make pg-up's)
	@RAYFLOW_TEST_DATABASE_URL='$(ENV_DATABASE_URL)' $(SCRIPT_ENV) scripts/bench-pg.sh read
