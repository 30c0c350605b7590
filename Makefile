# Makefile: the two commands of the README, plus helpers.
#   make run   set up, build everything and start the coordinator with a demo session
#   make test  set up and run the whole test suite
GO ?= go
PKGS := ./...

.PHONY: all setup build test vet fmt-check run bench results clean

all: build

setup:
	bash scripts/setup.sh

build:
	$(GO) build $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: setup fmt-check vet
	$(GO) test -count=1 $(PKGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./shared/...

clean:
	rm -rf bin
