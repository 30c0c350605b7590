// Package archtest holds the repository's layering rules and the test that
// enforces them (archtest_test.go): which packages may not depend on which,
// directly or through another package, listed in one table, rules. A
// violation fails `go test ./internal/archtest/` with the import chain that
// breaks the rule.
//
// Beside them: the size rules (size_test.go: a main is wiring, functions,
// methods per type and lines per package), no issue numbers in the tree
// (history_test.go), and goleak in the tests of every package whose code
// starts a goroutine (leak_test.go, its exemptions each with why).
//
// The layers, bottom up (a package imports only from the layers below it;
// docs/design.md, "Arrows", draws the same picture):
//
//	shared/privacy, shared/dataset                 leaves
//	shared/session, shared/secagg                  leaves: the session's parameters (one type), secure aggregation
//	shared/wire (session, secagg)                  the protocol devices in the field speak
//	shared/mechanism (privacy), shared/model (dataset)
//	shared/optim/algo (session)                    the registry, validity and every privacy calibration
//	shared/optim (session, algo)                   the algorithms' server and device halves; nothing of wire
//	shared/plan                                    the session's figures, task and features; the owner's budget
//	shared/lesson                                  the classroom preset
//	internal/sessionflag (session, algo, model)    the session's flags, declared once for the commands
//	device, sim, coordinator                       runtimes; the coordinator imports nothing of device
//	wasm/, cmd/, web/, the root package            shells and the embedded page; nothing imports cmd/,
//	                                               and cmd/coordinator links nothing of device, sim or wasm
//
// Only the code that ships counts: tests may drive the packages above
// theirs (the coordinator's tests run real devices against it).
//
// The rules read the module's import graph with `go list`, natively and
// for GOOS=js GOARCH=wasm (the page's packages), so the go command must be
// on PATH and the source on disk.
package archtest
