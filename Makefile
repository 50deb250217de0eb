SHELL := /bin/bash
# rayflow build, test and demo entry points. `make help` lists them.
GO      ?= go
PYTHON  ?= python3
BIN     := bin
RAYFLOW := $(BIN)/rayflow
PYREF   := $(PYTHON) conformance/reference/python/rayflow_canon.py

# Files carrying the generated-code header (Go and CUE), tracked or not, with their hashes.
GENSUM = git ls-files -z -co --exclude-standard -- '*.go' '*.cue' | xargs -0 grep -lZ -E '^// Code generated .* DO NOT EDIT\.$$' | xargs -0 -r sha256sum

.PHONY: help build demo test fmt-check vet staticcheck cue-check generate generate-check gotest pytest conformance bench fuzz clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 18

build: ## build the rayflow CLI into bin/
	$(GO) build -o $(RAYFLOW) ./tools/rayflow

demo: build ## run the main demo end to end: the fan-out workflow, locally
	@echo '--- examples/fanout: build_items -> map(calculate, window 16, max 10,000) -> summarize'
	$(GO) run ./examples/fanout -count $${COUNT:-200}
	@echo
	@echo '--- the same plan from the CLI (rayflow plan fingerprint fanout):'
	$(RAYFLOW) plan fingerprint fanout
	@echo
	@echo '--- canonical JSON v1 of a plan-shaped record (examples/fingerprint):'
	$(GO) run ./examples/fingerprint

test: fmt-check vet staticcheck cue-check generate-check gotest pytest ## everything CI checks
	@echo "make test: all checks passed"

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

fuzz: ## run every fuzz target for FUZZTIME each (default 30s)
	@for t in FuzzTransform FuzzDecodeAgreesWithEncodingJSON; do $(GO) test ./sdk/canonical -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} || exit 1; done
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzDifferential$$' -fuzztime $${FUZZTIME:-30s}
	$(GO) test ./engine/lifecycle -run '^$$' -fuzz '^FuzzReducer$$' -fuzztime $${FUZZTIME:-30s}

clean: ## remove build output
	rm -rf $(BIN)
