# Skein build and test entry points. `make test` is what CI runs (.ci/run).
GO ?= go
STATICCHECK_VERSION ?= v0.7.0
PKGS ?= ./...
BENCHTIME ?= 1x

.PHONY: test unit lint vet fmt-check staticcheck bench

## test: every check and every test (lint + unit tests with the race detector)
test: lint unit

## unit: go test ./... (offline, local world)
unit:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## lint: gofmt, go vet, staticcheck
lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

## bench: benchmarks (figures go to BENCHMARKS.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...
