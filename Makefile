SHELL := /bin/bash
# rayflow build, test and demo entry points. `make help` lists them.
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
export RAYFLOW_RAY_ADDRESS ?= $(shell cat $(RAY_STATE)/address 2>/dev/null)

# Files carrying the generated-code header (Go and CUE), tracked or not, with their hashes.
GENSUM = git ls-files -z -co --exclude-standard -- '*.go' '*.cue' | xargs -0 grep -lZ -E '^// Code generated .* DO NOT EDIT\.$$' | xargs -0 -r sha256sum

.PHONY: ray-venv ray-up ray-down bench-ray bench-ray-actors
.PHONY: help build demo test test-checks test-short fmt-check vet staticcheck cue-check generate generate-check gotest pytest conformance bench fuzz clean

# What `make test` checks once its services run (a list of targets).
TEST_CHECKS ?= fmt-check vet staticcheck cue-check generate-check gotest pytest

# True when the head that `make ray-up` recorded in $(RAY_STATE) is alive.
RAY_HEAD_ALIVE = { [ -f $(RAY_STATE)/pgid ] && [ -f $(RAY_STATE)/address ] && kill -0 -- -$$(cat $(RAY_STATE)/pgid) 2>/dev/null; }

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

build: ## build the rayflow CLI into bin/
	$(GO) build -o $(RAYFLOW) ./tools/rayflow

demo: build ray-venv ## the main demo end to end: the fan-out on a local Ray cluster, in process, as a durable PostgreSQL task; then rayflow serve with a live showcase run (make demo-down stops it)
	@echo '--- examples/fanout on Ray: build_items -> map(calculate, window 16, max 10,000) -> summarize'
	RAYFLOW_PYTHON=$(CURDIR)/$(RAY_PY) $(GO) run ./examples/fanout -count $${COUNT:-200} -ray local
	@echo
	@echo '--- the same workflow in this process (no Ray): the same result'
	$(GO) run ./examples/fanout -count $${COUNT:-200}
	@echo
	@echo '--- the plan as the rayflow binary fingerprints it (rayflow plan fingerprint fanout): a plan'"'"'s code identity'
	@echo '    is the digest of the executable that runs its steps, so it differs from the example binary'"'"'s above;'
	@echo '    the durable task below, run by this binary, pins this one'
	$(RAYFLOW) plan fingerprint fanout
	@echo
	@echo '--- the durable path: a PostgreSQL task, run by a rayflow worker on Ray (make demo-durable)'
	@started=; [ -f $(PG_STATE)/data/postmaster.pid ] || started=1; \
	$(MAKE) --no-print-directory demo-durable || { rc=$$?; [ -z "$$started" ] || $(MAKE) --no-print-directory pg-down; exit $$rc; }; \
	mkdir -p $(DEMO_STATE); [ -z "$$started" ] || touch $(DEMO_STATE)/pg-started; \
	echo; echo '--- rayflow serve with a live showcase run (make demo-serve; make demo-down stops it)'; \
	$(MAKE) --no-print-directory demo-serve

test: ray-venv chromium ## everything CI checks, set-up included: creates .venv-ray, starts a Ray head and a private PostgreSQL for the run and stops them (a head of make ray-up or RAYFLOW_RAY_ADDRESS, a running make pg-up or RAYFLOW_TEST_DATABASE_URL from the environment, are used and left running)
	@trap 'exit 130' INT TERM; stop=""; trap 'for s in $$stop; do $(MAKE) --no-print-directory $$s; done' EXIT; \
	if [ "$(origin RAYFLOW_RAY_ADDRESS)" = environment ] && [ -n "$$RAYFLOW_RAY_ADDRESS" ]; then \
		addr=$$RAYFLOW_RAY_ADDRESS; echo "make test: using the Ray cluster at RAYFLOW_RAY_ADDRESS=$$addr"; \
	elif $(RAY_HEAD_ALIVE); then \
		addr=$$(cat $(RAY_STATE)/address); echo "make test: using the Ray head of make ray-up at $$addr (left running)"; \
	else \
		$(MAKE) --no-print-directory ray-up || exit 1; stop="ray-down"; \
		addr=$$(cat $(RAY_STATE)/address); \
	fi; \
	if [ "$(origin RAYFLOW_TEST_DATABASE_URL)" = environment ] && [ -n "$$RAYFLOW_TEST_DATABASE_URL" ]; then \
		db=$$RAYFLOW_TEST_DATABASE_URL; echo "make test: using the PostgreSQL at RAYFLOW_TEST_DATABASE_URL"; \
	elif [ -f $(PG_STATE)/data/postmaster.pid ]; then \
		db=$$(cat $(PG_STATE)/url); echo "make test: using the PostgreSQL of make pg-up at $$db (left running)"; \
	else \
		$(MAKE) --no-print-directory pg-up || exit 1; stop="$$stop pg-down"; \
		db=$$(cat $(PG_STATE)/url); \
	fi; \
	RAYFLOW_RAY_ADDRESS=$$addr RAYFLOW_TEST_DATABASE_URL=$$db $(MAKE) --no-print-directory test-checks || exit 1; \
	echo "make test: all checks passed"

test-checks: $(TEST_CHECKS) ## the checks of make test, against the services already running

test-short: ## go test -short ./...: unit tests only, no Ray and no PostgreSQL needed
	$(GO) test -short -count=1 ./...

fmt-check: ## gofmt must have nothing to change
	@out=$$(git ls-files -z -co --exclude-standard -- '*.go' | xargs -0 gofmt -l); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet ./...

staticcheck: ## staticcheck, pinned by the tool directive in go.mod
	$(GO) tool staticcheck ./...

cue-check: ## cue vet and cue fmt of schema/ with the pinned CUE (go tool cue)
	cd schema && $(GO) tool cue vet . && $(GO) tool cue fmt --check .

generate: ## regenerate every generated file (go generate ./...)
	$(GO) generate ./...

generate-check: ## go generate must not change any generated file
	@before=$$($(GENSUM)); $(GO) generate ./... || exit 1; after=$$($(GENSUM)); \
	if [ "$$before" != "$$after" ]; then \
		echo "generated files drifted from their sources: run 'make generate' and commit"; \
		diff <(echo "$$before") <(echo "$$after"); exit 1; fi

gotest: ## go test -race ./... (includes the conformance suite and the Python reference)
	$(GO) test -race -count=1 ./...

pytest: ## unit tests of the independent Python reference
	$(PYTHON) -m unittest discover -s conformance/reference/python -t conformance/reference/python

conformance: build ## every vector, 1,000,000 number lines, against Go, the CLI and the Python reference
	$(RAYFLOW) conformance run --numbers 1000000
	$(RAYFLOW) conformance run --numbers 1000000 --impl '$(RAYFLOW)'
	$(RAYFLOW) conformance run --numbers 1000000 --impl '$(PYREF)'

bench: ## benchmarks, side by side in one run
	$(GO) test -run '^$$' -bench . -benchmem -count 3 ./sdk/canonical/ ./schema/ ./engine/lifecycle/

fuzz: ## run every fuzz target of the module (found in the *_test.go files) for FUZZTIME each (default 30s)
	@git ls-files -z -- '*_test.go' | xargs -0 grep -H '^func Fuzz' | sed -E 's|^(.*)/[^/]*_test.go:func (Fuzz[A-Za-z0-9_]*).*|./\1 \2|' | sort -u | \
	while read -r pkg target; do \
		echo "fuzz: $$pkg $$target"; \
		$(GO) test "$$pkg" -short -run '^$$' -fuzz "^$$target$$" -fuzztime $${FUZZTIME:-30s} || exit 1; \
	done

ray-venv: ## create .venv-ray with ray[default]==2.60.0 (reused when present)
	@if $(RAY_PY) -c 'import sys, ray; sys.exit(ray.__version__ != "$(RAY_VERSION)")' 2>/dev/null; then \
		echo "ray-venv: $(RAY_VENV) has ray $(RAY_VERSION)"; \
	else \
		echo "ray-venv: installing ray[default]==$(RAY_VERSION) into $(RAY_VENV)"; \
		$(PYTHON) -m venv $(RAY_VENV) && $(RAY_VENV)/bin/pip install -q --disable-pip-version-check 'ray[default]==$(RAY_VERSION)'; \
	fi

ray-up: ray-venv ## start a local Ray head (2 CPUs, 512 MiB object store) recorded in .ray-local/
	@if [ -f $(RAY_STATE)/pgid ] && kill -0 -- -$$(cat $(RAY_STATE)/pgid) 2>/dev/null; then \
		echo "ray-up: already running at $$(cat $(RAY_STATE)/address)"; exit 0; fi; \
	mkdir -p $(RAY_STATE); rm -f $(RAY_STATE)/address; \
	RAY_USAGE_STATS_ENABLED=0 setsid $(RAY_VENV)/bin/ray start --head --block --node-ip-address=127.0.0.1 \
		--port=$(RAY_PORT) --num-cpus=2 --object-store-memory=536870912 --dashboard-host=127.0.0.1 --dashboard-port=$(RAY_DASHBOARD_PORT) \
		--disable-usage-stats >$(RAY_STATE)/log 2>&1 </dev/null & echo $$! >$(RAY_STATE)/pgid; \
	for i in $$(seq 240); do \
		if grep -q 'Ray runtime started' $(RAY_STATE)/log; then \
			echo 127.0.0.1:$(RAY_PORT) >$(RAY_STATE)/address; \
			echo "ray-up: Ray head at 127.0.0.1:$(RAY_PORT) (process group $$(cat $(RAY_STATE)/pgid))"; exit 0; fi; \
		if ! kill -0 $$(cat $(RAY_STATE)/pgid) 2>/dev/null; then break; fi; sleep 0.5; done; \
	echo "ray-up: the head did not start:"; cat $(RAY_STATE)/log; $(MAKE) --no-print-directory ray-down; exit 1

ray-down: ## stop the Ray head that ray-up started (only that one)
	@if [ ! -f $(RAY_STATE)/pgid ]; then echo "ray-down: nothing recorded in $(RAY_STATE)"; exit 0; fi; \
	pg=$$(cat $(RAY_STATE)/pgid); \
	kill -TERM -- -$$pg 2>/dev/null; \
	for i in $$(seq 40); do kill -0 -- -$$pg 2>/dev/null || break; sleep 0.25; done; \
	kill -KILL -- -$$pg 2>/dev/null; rm -rf $(RAY_STATE); echo "ray-down: stopped process group $$pg"

bench-ray: ## one table: rayflow (leaf processes, and a leaf library) vs a native Python Ray driver on one head (2k/20k leaves, windows 64/256, item batching, first leaf, coordinator heap)
	RAYFLOW_BENCH=1 $(GO) test ./engine/ray -run '^TestBenchRay$$' -count=1 -v -timeout 60m

bench-ray-actors: ## coordinator heap of 1k vs 10k buffered map and fold; full vs terminal_only vs disabled wall time
	RAYFLOW_BENCH=1 $(GO) test ./engine/ray -run '^TestBenchRayActors$$' -count=1 -v -timeout 20m

clean: ## remove build output
	rm -rf $(BIN)

# --- Durable tasks on PostgreSQL (engine/durable) ---------------------------
# A private cluster: initdb into $(PG_STATE) (ignored), a free port on
# 127.0.0.1, its unix socket in the same folder; the URL is written to
# $(PG_STATE)/url. Tests read it from RAYFLOW_TEST_DATABASE_URL (without it,
# or under -short, the PostgreSQL tests skip); the CLI from RAYFLOW_DATABASE_URL.
PG_STATE := .pg-local
export RAYFLOW_TEST_DATABASE_URL ?= $(shell cat $(PG_STATE)/url 2>/dev/null)
# The benchmarks use RAYFLOW_TEST_DATABASE_URL when it comes from the
# environment (a shared server), else they start make pg-up's cluster.
PG_ENV_URL := $(if $(filter environment,$(origin RAYFLOW_TEST_DATABASE_URL)),$(RAYFLOW_TEST_DATABASE_URL))
PG_BENCH_URL = url='$(PG_ENV_URL)'; [ -n "$$url" ] || { tools/pg/pg.sh up $(PG_STATE) >&2 && url=$$(cat $(PG_STATE)/url); }
.PHONY: pg-up pg-down bench-durable demo-durable demo-stop

pg-up: ## start the private PostgreSQL in .pg-local (apt-get install postgresql when missing); URL in .pg-local/url
	tools/pg/pg.sh up $(PG_STATE)

pg-down: ## stop the private PostgreSQL (its data stays in .pg-local)
	tools/pg/pg.sh down $(PG_STATE)

bench-durable: ## durable queue: claim latency, idle queries and throughput for 1/4/8 workers, no-op saturation
	@$(PG_BENCH_URL); echo "bench-durable: $$url; $$(uptime)"; \
	RAYFLOW_BENCH_DURABLE=1 RAYFLOW_TEST_DATABASE_URL=$$url $(GO) test -count=1 -run '^TestBenchDurable$$' -v -timeout 30m ./engine/durable/ | grep -E '^(\||BENCH|---|ok|FAIL)'

demo-durable: build pg-up ray-venv ## the durable path: enqueue the fan-out, a `rayflow worker` runs it on Ray, the task SUCCEEDED with the in-process result
	@set -e; export RAYFLOW_DATABASE_URL=$$(cat $(PG_STATE)/url) RAYFLOW_PYTHON=$(CURDIR)/$(RAY_PY); \
	n=$${COUNT:-200}; $(RAYFLOW) migrate up; \
	want=$$($(GO) run ./examples/fanout -count $$n | tail -1); \
	id=$$($(RAYFLOW) tasks enqueue fanout --input $$n); echo "--- enqueued fanout($$n) as task $$id"; \
	$(RAYFLOW) worker --runner ray --ray-address "$${RAYFLOW_RAY_ADDRESS:-local}" --concurrency 2 2>$(PG_STATE)/demo-worker.log & wpid=$$!; \
	trap 'kill -TERM $$wpid 2>/dev/null; wait $$wpid 2>/dev/null || true' EXIT; \
	got=$$($(RAYFLOW) tasks wait $$id --timeout 10m) || { tail -20 $(PG_STATE)/demo-worker.log; exit 1; }; \
	$(RAYFLOW) tasks show $$id; \
	echo "--- durable result:   $$got"; echo "--- in-process result: $$want"; \
	[ "$$got" = "$$want" ] || { echo "demo-durable: the results differ"; exit 1; }; \
	echo "demo-durable: SUCCEEDED on Ray with the same result"

.PHONY: bench-progress
bench-progress: ## progress storage (the reference's table shape, docs/operations.md#benchmarks): chains of 1k–100k nodes, sparse update, preparation heap at 250k/2M
	@$(PG_BENCH_URL); echo "bench-progress: $$url; $$(uptime)"; \
	RAYFLOW_BENCH_PROGRESS=1 RAYFLOW_TEST_DATABASE_URL=$$url $(GO) test -count=1 -run '^TestBenchProgress$$' -v ./engine/progressstore/

# --- rayflow serve: reads and the browser pages (serve, serve/read) ---------
.PHONY: bench-read chromium test-browser

bench-read: ## progress reads (beside the reference's figures, docs/operations.md#benchmarks; SQL statements per read): chains of 1k/10k/25k nodes, page 100; then the same with the record cache off (RAYFLOW_TEST_DATABASE_URL, else make pg-up's)
	@$(PG_BENCH_URL); db=$$url; echo "bench-read: $$(uptime)"; \
	echo '--- warm: the decoded-record cache on (the default)'; \
	RAYFLOW_TEST_DATABASE_URL=$$db $(GO) test -count=1 -run '^$$' -bench '^BenchmarkReads$$' -benchtime 200x -timeout 30m ./serve/read/ | grep -E '^(\||ok|FAIL|---)' ; \
	echo '--- cold: every read decodes and validates every record (RAYFLOW_BENCH_READ_COLD=1)'; \
	RAYFLOW_BENCH_READ_COLD=1 RAYFLOW_TEST_DATABASE_URL=$$db $(GO) test -count=1 -run '^$$' -bench '^BenchmarkReads$$' -benchtime 200x -timeout 30m ./serve/read/ | grep -E '^(\||ok|FAIL|---)'

chromium: ## install Debian's chromium for the browser tests when it is missing
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(chromium --version 2>/dev/null)"; else \
		echo "chromium: installing the Debian package"; \
		{ apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }; }; fi

test-browser: chromium pg-up ## the graph page in headless Chromium (live, finished and 25k-node runs)
	RAYFLOW_TEST_DATABASE_URL=$$(cat $(PG_STATE)/url) $(GO) test -count=1 -run '^TestBrowser' -v ./serve/

# --- make demo's last step: rayflow serve with a live showcase run ----------
# rayflow serve and a `rayflow worker --runner ray` run in the background
# (their process groups recorded in $(DEMO_STATE)) until `make demo-down`.
DEMO_STATE := .demo-serve
DEMO_ADDR  ?= 127.0.0.1:8080
.PHONY: demo-serve demo-down

demo-serve: build ray-venv ## start rayflow serve and a Ray worker in the background (on RAYFLOW_DATABASE_URL, else make pg-up's PostgreSQL), enqueue the order-fulfillment and recovery showcases, print their graph page URLs and the sign-in token
	@set -e; $(MAKE) --no-print-directory demo-stop; mkdir -p $(DEMO_STATE); \
	if [ -z "$$RAYFLOW_DATABASE_URL" ]; then \
		[ -f $(PG_STATE)/data/postmaster.pid ] || { $(MAKE) --no-print-directory pg-up; touch $(DEMO_STATE)/pg-started; }; \
		export RAYFLOW_DATABASE_URL=$$(cat $(PG_STATE)/url); fi; \
	export RAYFLOW_PYTHON=$(CURDIR)/$(RAY_PY); umask 077; url=http://$(DEMO_ADDR); \
	if curl -s -o /dev/null $$url/livez; then echo "demo-serve: $(DEMO_ADDR) is in use; stop that server or pick another address: make demo-serve DEMO_ADDR=127.0.0.1:8081"; exit 1; fi; \
	$(RAYFLOW) migrate up >/dev/null; \
	[ -s $(DEMO_STATE)/token ] || openssl rand -hex 24 >$(DEMO_STATE)/token; tok=$$(cat $(DEMO_STATE)/token); \
	printf 'demo %s *\n' "$$tok" >$(DEMO_STATE)/tokens; \
	[ -s $(DEMO_STATE)/cursor-keys ] || openssl rand -hex 32 >$(DEMO_STATE)/cursor-keys; \
	setsid $(RAYFLOW) serve --addr $(DEMO_ADDR) --tokens-file $(DEMO_STATE)/tokens --cursor-keys-file $(DEMO_STATE)/cursor-keys \
		>$(DEMO_STATE)/serve.log 2>&1 </dev/null & echo $$! >$(DEMO_STATE)/serve.pid; \
	setsid $(RAYFLOW) worker --runner ray --ray-address "$${RAYFLOW_RAY_ADDRESS:-local}" --concurrency 2 --retry-backoff 2s \
		>$(DEMO_STATE)/worker.log 2>&1 </dev/null & echo $$! >$(DEMO_STATE)/worker.pid; \
	for i in $$(seq 150); do curl -sf $$url/readyz >/dev/null && break; \
		if ! kill -0 $$(cat $(DEMO_STATE)/serve.pid) 2>/dev/null || [ $$i = 150 ]; then \
			echo "demo-serve: rayflow serve did not start at $$url:"; cat $(DEMO_STATE)/serve.log; $(MAKE) --no-print-directory demo-stop; exit 1; fi; \
		sleep 0.2; done; \
	enqueue() { curl -sS -f -X POST -H "Authorization: Bearer $$tok" "$$url/api/examples/$$1" | sed -nE 's/.*"task_id":"([0-9a-f-]+)".*/\1/p'; }; \
	order=$$(enqueue 'orderfulfillment?item_count=3&work_seconds=2'); rec=$$(enqueue 'recovery?item_count=1&work_seconds=0.2'); \
	[ -n "$$order" ] && [ -n "$$rec" ] || { echo "demo-serve: enqueueing the showcases failed"; $(MAKE) --no-print-directory demo-stop; exit 1; }; \
	echo "$$order" >$(DEMO_STATE)/order-task; \
	echo "rayflow serve: $$url (log $(DEMO_STATE)/serve.log); a rayflow worker on Ray (log $(DEMO_STATE)/worker.log)"; \
	echo "enqueued through POST /api/examples/orderfulfillment: task $$order (3 items, 21 nodes; live for about half a minute)"; \
	echo "enqueued through POST /api/examples/recovery:         task $$rec (fails twice, succeeds at attempt 3)"; \
	echo; \
	echo "Open the live graph page of the order-fulfillment showcase run:"; \
	echo; \
	echo "    $$url/tasks/$$order/graph"; \
	echo; \
	echo "Sign in with this token (also in $(DEMO_STATE)/token): $$tok"; \
	echo "The recovery showcase's three attempts: $$url/tasks/$$rec/graph"; \
	echo "The JSON API: curl -H \"Authorization: Bearer $$tok\" $$url/api/workflows/$$order"; \
	echo "Stop rayflow serve, the worker and the demo's PostgreSQL: make demo-down"

demo-stop: # stop the rayflow serve and worker of demo-serve (their process groups), if running
	@for p in worker serve; do f=$(DEMO_STATE)/$$p.pid; [ -f $$f ] || continue; pid=$$(cat $$f); rm -f $$f; \
		kill -0 -- -$$pid 2>/dev/null || continue; kill -TERM -- -$$pid 2>/dev/null; \
		for i in $$(seq 60); do kill -0 -- -$$pid 2>/dev/null || break; sleep 0.5; done; \
		kill -KILL -- -$$pid 2>/dev/null || true; echo "demo: stopped rayflow $$p (process group $$pid)"; done

demo-down: demo-stop ## stop what make demo left running: rayflow serve, its worker, and the PostgreSQL that make demo started
	@if [ -f $(DEMO_STATE)/pg-started ]; then rm -f $(DEMO_STATE)/pg-started; $(MAKE) --no-print-directory pg-down; fi
