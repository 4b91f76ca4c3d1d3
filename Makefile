# Skein build and test entry points. `make test` is what CI runs (.ci/run): every check and every test,
# the emulator-backed suites included. `go test ./...` alone runs the offline tests on the local world.
GO ?= go
STATICCHECK_VERSION ?= v0.7.0
PKGS ?= ./...
# Packages whose tests need the AWS emulators (DynamoDB Local, ElasticMQ, moto S3).
EMU_PKGS ?= ./dynamoworld/... ./encrypt/... ./integration/... ./internal/lambdaemu/ ./cmd/skein/
# Emulator state (pids, ports, logs) for this checkout.
export SKEIN_EMU_STATE ?= $(CURDIR)/.emulators
# LocalStack state (pid, port, log, its files, sam build output) for this checkout.
export SKEIN_LS_STATE ?= $(CURDIR)/.localstack

.PHONY: test unit emulator-test template-check localstack-test lint vet fmt-check staticcheck tidy-check workflowcheck bench emulators-start emulators-stop

## test: lint, offline unit tests with the race detector, emulator-backed suites, template checks, and the
## end-to-end cases through LocalStack (localstack-test)
test: lint unit emulator-test template-check localstack-test

## unit: offline tests (local world), race detector on (the timeouts catch hangs: workflowcheck's TestNoPanic
## analyses all of std under -race and took 20 minutes on a 2-core machine under heavy load); the dashboard's browser test (webui TestBrowser) drives
## headless Chromium, which scripts/chromium.sh installs (pinned) unless SKEIN_CHROMIUM names one; here it may not skip
unit:
	[ -n "$$SKEIN_CHROMIUM" ] || bash scripts/chromium.sh install
	SKEIN_REQUIRE_BROWSER=1 $(GO) test -race -count=1 -timeout 60m $(PKGS)

## chromium: install the pinned Chromium for the browser test and print its path
.PHONY: chromium
chromium:
	@bash scripts/chromium.sh path

## ui-screenshot: run the browser test and save the dashboard's screenshot to docs/ui.png (the README shows it)
.PHONY: ui-screenshot
ui-screenshot:
	SKEIN_UI_SCREENSHOT=1 SKEIN_REQUIRE_BROWSER=1 $(GO) test -count=1 -run '^TestBrowser$$' ./webui/

## emulator-test: start the emulators, run the suites that need them (a skip there is a failure), stop them;
## the arm64 bootstrap runs under qemu-user (scripts/qemu.sh installs it unless SKEIN_QEMU_AARCH64 is set)
emulator-test:
	[ -n "$$SKEIN_QEMU_AARCH64" ] || bash scripts/qemu.sh install
	bash localstack/emulators.sh start
	set -e; eval "$$(bash localstack/emulators.sh env)"; \
	export SKEIN_QEMU_AARCH64="$${SKEIN_QEMU_AARCH64:-$$(bash scripts/qemu.sh path)}"; \
	rc=0; SKEIN_REQUIRE_EMULATORS=1 $(GO) test -tags integration -count=1 -timeout 60m $(EMU_PKGS) || rc=$$?; \
	bash localstack/emulators.sh stop; exit $$rc

## localstack-test: install and start LocalStack (localstack/localstack.sh: pinned core, offline, the
## project's Lambda executor plugin), deploy template.yaml into it (localstack/deploy.sh: sam build + sam
## deploy, run by the test) and run TestLocalStack through LocalStack's Lambda and its SQS event source
## mapping (a skip there is a failure; its cases include the chaos suite's SIGKILL and duplicate-delivery
## faults and the figures of a serial and a fan-out run), then the executor plugin's own Go tests (invoke, timeout, init failure,
## the SQS mapping's batches, partial failures and DLQ), then stop LocalStack
.PHONY: localstack-test localstack-start localstack-stop
localstack-test:
	[ -n "$$SKEIN_QEMU_AARCH64" ] || bash scripts/qemu.sh install
	bash scripts/template-check.sh install
	bash localstack/localstack.sh unittest
	bash localstack/localstack.sh start
	set -e; eval "$$(bash localstack/localstack.sh env)"; \
	export SKEIN_QEMU_AARCH64="$${SKEIN_QEMU_AARCH64:-$$(bash scripts/qemu.sh path)}"; \
	rc=0; SKEIN_REQUIRE_LOCALSTACK=1 $(GO) test -tags integration -count=1 -timeout 20m -v -run '^TestLocalStack$$' ./integration/ || rc=$$?; \
	[ $$rc -ne 0 ] || SKEIN_REQUIRE_LOCALSTACK=1 $(GO) test -tags integration -count=1 -timeout 20m ./localstack/lambda-executor/ || rc=$$?; \
	bash localstack/localstack.sh stop; exit $$rc

## localstack-dynamoworld: ./dynamoworld/ against LocalStack's DynamoDB, SQS and S3 instead of the emulators
## (not in `make test`: the emulator stack runs it there; localstack/README.md gives its time)
.PHONY: localstack-dynamoworld
localstack-dynamoworld:
	bash localstack/localstack.sh start
	set -e; eval "$$(bash localstack/localstack.sh env)"; \
	rc=0; SKEIN_REQUIRE_EMULATORS=1 $(GO) test -tags integration -count=1 -timeout 40m ./dynamoworld/ || rc=$$?; \
	bash localstack/localstack.sh stop; exit $$rc

localstack-start:
	bash localstack/localstack.sh start
localstack-stop:
	bash localstack/localstack.sh stop

## chaos: the chaos suite long (integration/chaos_test.go, chaos_local_test.go): thousands of runs under
## SIGKILLs, redeliveries and AWS faults, where `make test` runs a few dozen. SKEIN_CHAOS_RUNS is each
## part's number of runs, SKEIN_CHAOS_DURATION the least time over which they start, SKEIN_CHAOS_KILLS the
## local part's least number of kills; SKEIN_CHAOS_SEED repeats the random choices.
.PHONY: chaos
chaos: export SKEIN_CHAOS_RUNS ?= 1000
chaos: export SKEIN_CHAOS_DURATION ?= 10m
chaos: export SKEIN_CHAOS_KILLS ?= 300
chaos:
	bash localstack/emulators.sh start
	set -e; eval "$$(bash localstack/emulators.sh env)"; \
	rc=0; SKEIN_REQUIRE_EMULATORS=1 $(GO) test -tags integration -count=1 -timeout 180m -v -run '^TestChaos' ./integration/ || rc=$$?; \
	bash localstack/emulators.sh stop; exit $$rc

## qemu: install qemu-aarch64-static (pinned, cached) for the arm64 bootstrap tests and print its path
.PHONY: qemu
qemu:
	@bash scripts/qemu.sh path

emulators-start:
	bash localstack/emulators.sh start
emulators-stop:
	bash localstack/emulators.sh stop

## template-check: cfn-lint, iam-check, sam validate --lint (pinned, own virtualenvs) and sam build on template.yaml,
## then the same and `make test` on a project as `skein init` writes it (scripts/template-check.sh)
template-check:
	bash scripts/template-check.sh

## lint: gofmt, go vet, staticcheck, go.mod/go.sum as `go mod tidy` leaves them, and the determinism analyzer
lint: fmt-check vet staticcheck tidy-check workflowcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration ./integration/...

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags integration $(PKGS)

## workflowcheck: the determinism analyzer (cmd/skeinvet, as go vet's tool) on the code that holds workflows:
## examples/, internal/testflows and bench/peers; a finding fails (suppress one with //skein:nondeterministic-ok <reason>)
workflowcheck:
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) build -o "$$tmp/skeinvet" ./cmd/skeinvet; \
	$(GO) vet -vettool="$$tmp/skeinvet" ./examples/... ./internal/testflows/; \
	cd bench/peers && $(GO) vet -vettool="$$tmp/skeinvet" ./...

## tidy-check: fail when `go mod tidy` would change go.mod or go.sum (this module and bench/peers'); prints the diff
tidy-check:
	$(GO) mod tidy -diff
	cd bench/peers && $(GO) mod tidy -diff

## api: rewrite api/api.txt, the golden file of the public packages' exported API, from the code (TestAPI
## checks it); review its diff before committing
.PHONY: api
api:
	$(GO) test -count=1 -run '^TestAPI$$' . -update

## surface: print the size of the public surface (exported identifiers, config fields, environment
## variables, error types) as Markdown; docs/surface.md records it
.PHONY: surface
surface:
	@$(GO) run ./internal/apisurface/surface

## bench: benchmarks (figures go to BENCHMARKS.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./bench/...
