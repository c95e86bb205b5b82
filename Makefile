# Thin front over the repo's scripts. Bun itself comes from the npm registry (the `bun` package),
# installed into .tools/ by npm; everything else is installed by bun from bun.lock.
BUN_VERSION := 1.4.5
BUN := .tools/node_modules/.bin/bun
export PATH := $(CURDIR)/.tools/node_modules/.bin:$(PATH)

.DEFAULT_GOAL := help
.PHONY: help install build demo test fuzz typecheck layers check bench soak clean debian-tools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 12

$(BUN):
	npm install --prefix .tools --no-save --no-package-lock --no-audit --no-fund bun@$(BUN_VERSION)

node_modules/.installed: $(BUN) package.json bun.lock
	$(BUN) install --frozen-lockfile
	@touch $@

install: node_modules/.installed ## install Bun (from npm) and the dependencies (from bun.lock)

build: install ## compile dist/vigil (self-contained executable)
	$(BUN) scripts/build.ts --host

demo: build ## wrap the example server with the example policy and show the evidence
	$(BUN) scripts/demo.ts

debian-tools: ## install the Debian tools tests use, as root (.ci/run does it); others: DEBIAN_TOOLS="prometheus"
	@bash scripts/ci-debian-tools.sh $(DEBIAN_TOOLS)

test: build ## run every test suite (unit, integration, e2e against dist/vigil)
	$(BUN) test --timeout 30000 $(if $(VIGIL_JUNIT),--reporter=junit --reporter-outfile=$(VIGIL_JUNIT))

fuzz: build ## fuzz hostile MCP events (poll and push) with a random seed, printed; replay: VIGIL_FUZZ_SEED=<n> make fuzz
	@seed=$${VIGIL_FUZZ_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; \
	echo "fuzz seed: $$seed (replay with VIGIL_FUZZ_SEED=$$seed make fuzz)"; \
	VIGIL_FUZZ_SEED=$$seed VIGIL_FUZZ_CASES=$${VIGIL_FUZZ_CASES:-20000} VIGIL_FUZZ_E2E_CASES=$${VIGIL_FUZZ_E2E_CASES:-60} \
	$(BUN) test --timeout 300000 test/unit/events/occurrence-fuzz.test.ts test/e2e/events-fuzz.test.ts || \
	{ echo "fuzz failed with seed $$seed (replay with VIGIL_FUZZ_SEED=$$seed make fuzz)"; exit 1; }

typecheck: install ## type-check src, test, scripts and bench
	$(BUN) x tsc --noEmit -p .

layers: install ## the layer gate: import rules, circles and file sizes of src/ (scripts/layers.json)
	$(BUN) scripts/check-layers.ts

check: layers typecheck test ## the layer gate, type-check, then test

bench: build ## run the benchmark harnesses (results: bench/RESULTS.md)
	$(BUN) bench/wrap/run.ts

soak: build ## soak vigil serve: 100,000 polls and 100,000 pushed events, RSS and fds against targets (6–8 min)
	$(BUN) bench/soak/run.ts

.PHONY: dist release
DIST_DIR ?= dist

dist: install ## cross-compile every release target + SHA256SUMS into dist/ (or DIST_DIR=…)
	$(BUN) scripts/build.ts --all --outdir $(DIST_DIR)

release: ## clean tree + tag = package.json version, then make check and every target (scripts/release.sh [TAG])
	sh scripts/release.sh $(TAG)

clean: ## remove build output
	rm -rf dist .tmp
