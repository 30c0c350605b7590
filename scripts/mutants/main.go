//go:build ignore

// Command mutants applies a fixed list of privacy- and correctness-
// critical mutations, each on its own, runs the tests that must catch
// each, and fails if any mutation survives (its tests pass). A mutation
// is applied through a build overlay (go help build: -overlay), never by
// rewriting the source, so the tree is not modified and several
// mutations are tested at a time: up to -j (8), of which up to -builds
// (the number of CPUs) are building. Run it from the module root:
//
//	go run scripts/mutants/main.go            # all mutations
//	go run scripts/mutants/main.go -only ledger-half
//	go run scripts/mutants/main.go -only ledger-half,clip-1.1
//	go run scripts/mutants/main.go -j 1       # one at a time
//	go run scripts/mutants/main.go -times t.tsv  # each one's wall, CPU and test time
//
// Each mutation names the one place it changes by an exact snippet that
// must occur exactly once in its file, so a refactoring that moves the
// code makes this command fail loudly instead of testing nothing. The
// list and the last results are in docs/mutants.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type mutation struct {
	name, why string
	file      string
	old, new  string
	more      []edit // further edits in the same file, applied after old -> new
	// elsewhere are edits in other files, for a mutation whose place
	// spans two packages (each snippet, too, must occur exactly once).
	elsewhere []fileEdit
	pkgs      []string // go test arguments (packages, -run)
}

type edit struct{ old, new string }

// fileEdit is an edit of another file than the mutation's.
type fileEdit struct{ file, old, new string }

var mutations = []mutation{
	{
		name: "nc-noise-0.9", why: "the nc noise scale a device draws is 10% too small (its ledger charge unchanged)",
		file: "shared/optim/device.go",
		old:  "z, err := mechanism.DiscreteSigma(dv.nc.Sigma(n), dv.sens, dv.step, dv.dim)",
		new:  "z, err := mechanism.DiscreteSigma(0.9*dv.nc.Sigma(n), dv.sens, dv.step, dv.dim)",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "shared-share-no-split", why: "a shared-noise device's share drops the (1 + h/1000) that pays for splitting an integer shift into h parts",
		file: "shared/optim/algo/shared.go",
		old:  "return (1 + float64(h)/mechanism.GridFactor) / math.Sqrt(float64(h))",
		new:  "return 1 / math.Sqrt(float64(h))",
		pkgs: []string{"./shared/optim/algo/", "-run", "Share"},
	},
	{
		name: "shared-share-cohort", why: "a shared-noise device's share is sized for the whole cohort m instead of the h = t - c honest survivors",
		file: "shared/optim/algo/shared.go",
		old:  "h := p.SharedHonest()",
		new:  "h := p.Cohort",
		pkgs: []string{"./shared/optim/algo/", "-run", "Share"},
	},
	{
		name: "shared-colluders-ignored", why: "the honest survivors h are counted as t, ignoring the c colluders",
		file: "shared/session/params.go",
		old:  "return p.SharedThreshold() - p.Colluders",
		new:  "return p.SharedThreshold()",
		pkgs: []string{"./shared/optim/algo/", "-run", "Share"},
	},
	{
		name: "shared-threshold-default-cohort", why: "the default threshold is the whole cohort (a share sized for m survivors when only 0.7 m are promised)",
		file: "shared/session/params.go",
		old:  "return max(1, int(math.Ceil(DefaultThresholdShare*float64(p.Cohort)-1e-9)))",
		new:  "return max(1, int(math.Ceil(float64(p.Cohort))))",
		pkgs: []string{"./shared/optim/algo/", "-run", "Share"},
	},
	{
		name: "shared-floor-as-promise", why: "a shared-noise device's floor (its own share alone) is reported as its promise",
		file: "shared/optim/algo/shared.go",
		old:  "return 1 / (s * s)",
		new:  "return 1 + 0*s",
		pkgs: []string{"./shared/optim/algo/", "-run", "Share"},
	},
	{
		name: "shared-floor-share-variance", why: "a shared-noise session's floor reads the device's noise share with 10% more variance than it draws (the floor 9% too small in rho)",
		file: "shared/plan/shared.go",
		old:  "r, err := privacy.GaussianZCDP(sens, algo.NCSigma(p, n))",
		new:  "r, err := privacy.GaussianZCDP(sens, math.Sqrt(1.1)*algo.NCSigma(p, n))",
		pkgs: []string{"./shared/plan/", "-run", "TestSharedFigures"},
	},
	{
		name: "shared-promise-colluders-ignored", why: "a shared-noise session's promise counts the t survivors' shares as honest, the c colluders not subtracted",
		file: "shared/plan/shared.go",
		old:  "h := float64(f.Honest)",
		new:  "h := float64(f.Threshold)",
		pkgs: []string{"./shared/plan/", "-run", "TestSharedFigures"},
	},
	{
		name: "shared-floor-limit-unchecked", why: "a device joins a shared-noise session whose floor is over the owner's floor limit",
		file: "shared/plan/figures.go",
		old:  "if pr.FloorMost > owner.FloorLimit() {",
		new:  "if false {",
		pkgs: []string{"./shared/plan/", "-run", "TestCheckShared"},
	},
	{
		name: "shared-device-small-cohort", why: "a shared-noise device takes part in a round whose announced cohort is below the session's threshold (its share is calibrated for at least that many)",
		file: "device/secagg.go",
		old:  "if len(m.Members) < sa.a.Threshold {",
		new:  "if false {",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseDeviceRefusesSmallCohort"},
	},
	{
		name: "no-ask-all-at-start", why: "a round in which no eligible device is sure asks only its cohort (idle ids present at Start stall the class)",
		file: "engine/cohort.go",
		old:  "if len(p.Members) >= askAll {",
		new:  "if true {",
		pkgs: []string{"./engine/", "-run", "TestPlanCohort"},
	},
	{
		name: "nc-noise-0.5-audit", why: "the nc noise a device draws is half the calibrated scale (the empirical privacy audit must see it)",
		file: "shared/optim/device.go",
		old:  "z, err := mechanism.DiscreteSigma(dv.nc.Sigma(n), dv.sens, dv.step, dv.dim)",
		new:  "z, err := mechanism.DiscreteSigma(0.5*dv.nc.Sigma(n), dv.sens, dv.step, dv.dim)",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "fresh-noise-0.5-audit", why: "the fresh noise a device draws (noisysgd, cdpsgd, soteria-*) is half the calibrated scale (the empirical privacy audit must see it)",
		file: "shared/optim/device.go",
		old:  "if dv.freshZ, err = mechanism.DiscreteSigma(dv.fresh, dv.sens, dv.step, d); err != nil {",
		new:  "if dv.freshZ, err = mechanism.DiscreteSigma(0.5*dv.fresh, dv.sens, dv.step, d); err != nil {",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "fresh-noise-0.9", why: "the fresh noise a device draws (noisysgd, cdpsgd, soteria-*) is 10% too small (its ledger charge unchanged)",
		file: "shared/optim/device.go",
		old:  "if dv.freshZ, err = mechanism.DiscreteSigma(dv.fresh, dv.sens, dv.step, d); err != nil {",
		new:  "if dv.freshZ, err = mechanism.DiscreteSigma(0.9*dv.fresh, dv.sens, dv.step, d); err != nil {",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "fresh-noise-half-added", why: "a fresh-noise release (noisysgd, cdpsgd, soteria-*) adds half of each drawn noise coordinate",
		file: "shared/optim/device.go",
		old:  "dv.vz[i] += n\n",
		new:  "dv.vz[i] += n / 2\n",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "device-leaves-while-data-coming", why: "a single-pass device whose samples are used up leaves as done although more are on their way (a class lesson's pages all left at round 33)",
		file: "device/runtime.go",
		old:  "		if rt.cfg.MoreData != nil && rt.cfg.MoreData() {",
		new:  "		if false && rt.cfg.MoreData != nil && rt.cfg.MoreData() {",
		pkgs: []string{"./coordinator/", "-run", "TestDeviceWaitsForMoreData"},
	},
	{
		name: "device-data-wait-skipped", why: "a device out of samples lets the round pass at once instead of waiting for the ones on their way",
		file: "device/runtime.go",
		old:  "		err = rt.awaitDataLocked(ctx, r.T, dataWait(rt.cfg.DataWait, r.DeadlineMillis))\n",
		new:  "		_ = dataWait\n",
		pkgs: []string{"./coordinator/", "-run", "TestDeviceWaitsForMoreData"},
	},
	{
		name: "cohort-probes-not-counted", why: "devices out of sampling do not count toward min-devices: a class of two with one device that missed rounds starts no round again",
		file: "engine/cohort.go",
		old:  "\treturn eligible + min(probeable, ProbesPerRound(m))\n",
		new:  "\treturn eligible\n",
		pkgs: []string{"./engine/", "-run", "TestAskable"},
	},
	{
		name: "recovery-rounds-off", why: "with no device eligible (every device of a class missed its last rounds) no round starts, so none is asked again: the session waits for ever",
		file: "engine/cohort.go",
		old:  "\t\treturn min(probeable, m)\n",
		new:  "\t\treturn 0\n",
		pkgs: []string{"./coordinator/", "-run", "TestClassWaitsForMoreData"},
	},
	{
		name: "round-ready-below-min-devices", why: "a whole cohort eligible starts a round with fewer than min-devices askable: Ask refuses it, and the round loop spins",
		file: "coordinator/rounds.go",
		old:  "\tcase n < minDevices:\n\t\treturn false, false\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "TestRoundReady"},
	},
	{
		name: "recovery-same-probes", why: "every recovery round asks the same probes: devices that never answer are asked every time, the others never",
		file: "engine/cohort.go",
		old:  "optim.SampleCohort(probeable, k, seed^probeSalt, t)...)",
		new:  "optim.SampleCohort(probeable, k, seed^probeSalt, 1)...)",
		pkgs: []string{"./engine/", "-run", "TestRecoveryRound"},
	},
	{
		name: "recovery-asks-rejected", why: "a recovery round asks a device whose updates were rejected (answering each at once, it makes recovery rounds follow one another)",
		file: "engine/standing.go",
		old:  "func (s *Standing) Recoverable() bool { return s.rejected == 0 }",
		new:  "func (s *Standing) Recoverable() bool { return true }",
		pkgs: []string{"./coordinator/roster/", "-run", "TestRecoveryAsks"},
	},
	{
		name: "recovery-no-pause", why: "recovery rounds nobody answers follow one another without a pause: connected pages that do not answer use up a round per deadline",
		file: "coordinator/roster/cohort.go",
		old:  "\tif now.Before(recoveryAfter) {\n\t\treturn nil\n\t}\n",
		new:  "",
		pkgs: []string{"./coordinator/roster/", "-run", "TestRecoveryAsks"},
	},
	{
		name: "recovery-pause-not-grown", why: "the pause after an unanswered recovery round does not grow",
		file: "coordinator/roster/cohort.go",
		old:  "return min(max(2*prev, minRecoveryPause), maxRecoveryPause)",
		new:  "return minRecoveryPause",
		pkgs: []string{"./coordinator/roster/", "-run", "TestNextRecoveryPause"},
	},
	{
		name: "recovery-unsorted", why: "a recovery round's members are not sorted (updates reach the server half in sampling order, not the sorted order of every other round)",
		file: "engine/cohort.go",
		old:  "\tp.Target, p.Probes = k, k\n\tslices.Sort(p.Members)\n",
		new:  "\tp.Target, p.Probes = k, k\n",
		pkgs: []string{"./engine/", "-run", "TestRecoveryRound"},
	},
	{
		name: "device-data-wake-unchecked", why: "a device woken by samples arriving answers without checking that they fill a minibatch (a short chunk: samples reused or the device stops)",
		file: "device/runtime.go",
		old:  "		err := rt.exhaustedLocked(t)\n		if !errors.Is(err, errDataComing) || expired",
		new:  "		err := error(nil)\n		if !errors.Is(err, errDataComing) || expired",
		pkgs: []string{"./coordinator/", "-run", "TestDeviceWaitsForMoreData"},
	},
	{
		name: "device-minibatch-wraps", why: "a single-pass minibatch may wrap around to samples used before, should the exhaustion check above it fail",
		file: "device/runtime.go",
		old:  "rt.st.Session.SinglePass() && cursor+n > len(rt.cfg.Data) {",
		new:  "rt.st.Session.SinglePass() && false {",
		pkgs: []string{"./device/", "-run", "TestRuntimeTrainsOnFeatures"},
	},
	{
		name: "device-local-data-setter-unchecked", why: "a device half that hides SetLocalData (a wrapper) is accepted for an algorithm that keeps a local set",
		file: "device/runtime.go",
		old:  "		if !ok {\n			// A wrapper that hides SetLocalData",
		new:  "		if _ = ok; false {\n			// A wrapper that hides SetLocalData",
		pkgs: []string{"./device/", "-run", "TestSetupNeedsLocalDataSetter"},
	},
	{
		name: "sensitivity-S/b", why: "the replace-one sensitivity 2S/b of the nc noise becomes S/b (noise and charge both too small)",
		file: "shared/optim/algo/calib.go",
		old:  "sens := 2 * p.S() / float64(p.Batch)",
		new:  "sens := p.S() / float64(p.Batch)",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "ledger-sensitivity-S/b", why: "the sensitivity the ledger charges (algo.Sensitivity for mu^2) becomes S/b: a quarter of the true cost",
		file: "shared/optim/algo/calib.go",
		old:  "case EstMu2:\n\t\treturn 2 * S / b",
		new:  "case EstMu2:\n\t\treturn S / b",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "Y-not-committed", why: "Commit does not store the new noise Y_i",
		file: "shared/optim/device.go",
		old:  "dv.y = mechanism.NCState{N: dv.n, Has: true, Seed: p.seed, Sigma: p.sigma, Dim: dv.dim}",
		new:  "_ = mechanism.NCState{N: dv.n, Has: true, Seed: p.seed, Sigma: p.sigma, Dim: dv.dim}",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "Y-half-cancelled", why: "the previous noise Y_i is cancelled at half weight",
		file: "shared/optim/device.go",
		old:  "dv.vz[i] += p.yvec[i] - dv.yvec[i]",
		new:  "dv.vz[i] += p.yvec[i] - dv.yvec[i]/2",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "gdp-no-discretisation-term", why: "the device's exact-GDP conversion drops the discrete-noise coupling's total-variation term (1 + e^eps) kappa rho",
		file: "shared/privacy/discrete.go",
		old:  "return d + (1+math.Exp(epsilon))*eta, nil",
		new:  "return d, nil",
		pkgs: []string{"./shared/privacy/"},
	},
	{
		name: "gdp-mu-sqrt-rho", why: "the device's exact-GDP conversion reads the ledger's rho as mu = sqrt(rho) instead of sqrt(2 rho)",
		file: "shared/privacy/discrete.go",
		old:  "d, err := GDPToDelta(math.Sqrt(2*rho), epsilon)",
		new:  "d, err := GDPToDelta(math.Sqrt(rho), epsilon)",
		pkgs: []string{"./shared/privacy/"},
	},
	{
		name: "rounded-gaussian-tv-small", why: "the proven total-variation bound between the discrete and the rounded Gaussian is 6 times too small (below the true distance)",
		file: "shared/privacy/discrete.go",
		old:  "const roundedGaussianTVConst = 2.5e-3",
		new:  "const roundedGaussianTVConst = 4e-4",
		pkgs: []string{"./shared/privacy/"},
	},
	{
		name: "discrete-sigma-no-twelfth", why: "DiscreteSigma rounds sigma up without the 1/12 the rounded-Gaussian coupling needs (mu can exceed the charge)",
		file: "shared/mechanism/discrete.go",
		old:  "for c*c-1.0/12 < x*x {",
		new:  "for false && c*c-1.0/12 < x*x {",
		pkgs: []string{"./shared/mechanism/", "-run", "DiscreteSigmaGaussianDP"},
	},
	{
		name: "discrete-sigma-no-floor", why: "DiscreteSigma lets sigma_Z fall below 64 grid units, where the total-variation bound is not proven",
		file: "shared/mechanism/discrete.go",
		old:  "c := math.Max(math.Ceil(x), privacy.MinDiscreteSigma)",
		new:  "c := math.Max(math.Ceil(x), 1)",
		pkgs: []string{"./shared/mechanism/", "-run", "DiscreteSigmaGaussianDP"},
	},
	{
		name: "block-acceptance-skipped", why: "the exact sampler skips its acceptance step in the table's blocks (flat blocks: not the discrete Gaussian)",
		file: "shared/mechanism/discrete.go",
		old:  "if (v+1)<<(32-blkV)+blkLoss(y, m, p) > 1<<32 && !s.blkAcceptMid(v, x, y, m, sg) {",
		new:  "if false && (v+1)<<(32-blkV)+blkLoss(y, m, p) > 1<<32 && !s.blkAcceptMid(v, x, y, m, sg) {",
		pkgs: []string{"./shared/mechanism/", "-run", "TestBlockSeam"},
	},
	{
		name: "block-sigma-0.9", why: "the exact sampler draws with 0.9 of the sigma it is given",
		file: "shared/mechanism/discrete.go",
		old:  "sg := uint64(sigma)\n\tp := dgParams{",
		new:  "sg := uint64(sigma * 9 / 10)\n\tp := dgParams{",
		pkgs: []string{"./shared/mechanism/", "-run", "TestDiscreteGaussianMoments"},
	},
	{
		name: "block-fast-bound-no-alpha", why: "the sampler's fast acceptance bound ignores the table's correction alpha_m (accepts where it must not)",
		file: "shared/mechanism/discrete.go",
		old:  "return y*p.iv*(2*m+1)>>32 + 1 + blkDelta[m]",
		new:  "return y*p.iv*(2*m+1)>>32 + 1",
		pkgs: []string{"./shared/mechanism/", "-run", "TestBlockBounds"},
	},
	{
		name: "ledger-half", why: "the ledger charges half of each release's cost",
		file: "shared/optim/device.go",
		old:  "if err := dv.ledger.ChargeRho(cost); err != nil {",
		new:  "if err := dv.ledger.ChargeRho(cost * 0.5); err != nil {",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "clip-1.1", why: "per-sample clipping at 1.1 S instead of S (ghost clipping: logistic regression's factored gradients)",
		file: "shared/optim/device.go",
		old:  "f = mechanism.ClipFactor(n, bound)",
		new:  "f = mechanism.ClipFactor(n, 1.1*bound)",
		pkgs: []string{"./shared/optim/", "-run", "BatchMeanMatchesReference"},
	},
	{
		name: "clip-1.1-formed", why: "per-sample clipping at 1.1 S instead of S (formed gradients: other models, SVRG and SAGA)",
		file: "shared/optim/device.go",
		old:  "if _, err := mechanism.ClipFinite(dst, bound); err != nil {",
		new:  "if _, err := mechanism.ClipFinite(dst, 1.1*bound); err != nil {",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "budget-check-off-by-one", why: "Prepare checks the ledger before adding the next release's cost (one release too many)",
		file: "shared/optim/device.go",
		old:  "if dv.budget > 0 && dv.ledger.Rho()+cost > dv.budget*budgetSlack {",
		new:  "if dv.budget > 0 && dv.ledger.Rho() > dv.budget*budgetSlack {",
		pkgs: []string{"./shared/optim/", "-run", "BudgetNeverExceeded"},
	},
	{
		name: "release-cap-off-by-one", why: "a device may make one release more than its cap (MaxReleases, or T)",
		file: "shared/optim/device.go",
		old:  "if dv.n >= dv.p.ReleaseCap() {",
		new:  "if dv.n > dv.p.ReleaseCap() {",
		pkgs: []string{"./shared/optim/", "-run", "ReleasesCappedAtT"},
	},
	{
		name: "release-cap-ignored", why: "the device refuses only after T releases although the noise is calibrated to MaxReleases < T",
		file: "shared/optim/device.go",
		old:  "if dv.n >= dv.p.ReleaseCap() {",
		new:  "if dv.n >= dv.p.Rounds {",
		pkgs: []string{"./shared/optim/", "-run", "ReleasesCappedAtT"},
	},
	{
		name: "harmonic-one-term-short", why: "the nc calibration factor H_K misses its first term: noise too small for the K releases",
		file: "shared/optim/algo/calib.go",
		old:  "for n := K; n >= 1; n-- {",
		new:  "for n := K; n >= 2; n-- {",
		pkgs: []string{"./shared/optim/algo/"},
	},
	{
		name: "harmonic-bound-low", why: "beyond 1,024 releases H_K is replaced by ln K + gamma, below H_K (noise too small)",
		file: "shared/optim/algo/calib.go",
		old:  "return math.Log(k) + 0.57721566490153286 + 1/(2*k)",
		new:  "return math.Log(k) + 0.57721566490153286",
		pkgs: []string{"./shared/optim/algo/"},
	},
	{
		name: "sim-downlink-f64", why: "simulated devices compute at the server's float64 query points, not the float32 ones the round frame carries",
		file: "sim/sim.go",
		old:  "r.rd, err = downlink(rd)",
		new:  "r.rd, err = rd, nil",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "cohort-unsorted", why: "the cohort plan is not sorted (the simulator then hands updates to the server in sampling order, not the coordinator's sorted order)",
		file: "engine/cohort.go",
		old:  "\t\t\tp.Probes++\n\t\t}\n\t}\n\tslices.Sort(p.Members)\n",
		new:  "\t\t\tp.Probes++\n\t\t}\n\t}\n\t_ = slices.Sort[[]int]\n",
		pkgs: []string{"./engine/", "-run", "PlanCohort"},
	},
	{
		name: "delta-from-session", why: "the owner's budget is read at the session's delta when that is larger",
		file: "shared/plan/figures.go",
		old:  "most, _, err := b.Over(worst)",
		new:  "most, _, err := Budget{Epsilon: b.Epsilon, Delta: max(b.Delta, f.SessionDelta)}.Over(worst)",
		pkgs: []string{"./shared/plan/"},
	},
	{
		name: "owner-budget-doubled", why: "the owner's budget comparison (plan.Budget.Over, made before joining and before each release) lets a ledger reach twice the owner's epsilon",
		file: "shared/plan/figures.go",
		old:  "return eps, eps > b.Epsilon, nil",
		new:  "return eps, eps > 2*b.Epsilon, nil",
		pkgs: []string{"./shared/plan/"},
	},
	{
		name: "optim-imports-wire", why: "the algorithms import the protocol (a forbidden arrow: the layering rules of internal/archtest must see it; the mutated file must be visible to go list, on disk or through GOFLAGS=-overlay)",
		file: "shared/optim/optim.go",
		old:  "\t\"browserfl/shared/session\"\n)",
		new:  "\t\"browserfl/shared/session\"\n\t_ \"browserfl/shared/wire\"\n)",
		pkgs: []string{"./internal/archtest/"},
	},
	{
		name: "core-part-imports-api", why: "a package under coordinator/ below the HTTP API imports it (a forbidden arrow: routes reaching into the session core's parts)",
		file: "coordinator/internal/nctest/nctest.go",
		old:  "\t\"browserfl/shared/optim\"\n)",
		new:  "\t\"browserfl/shared/optim\"\n\t_ \"browserfl/coordinator/api\"\n)",
		pkgs: []string{"./internal/archtest/"},
	},
	{
		name: "part-imports-sessionnode", why: "a package under coordinator/ imports the cluster's session node (a forbidden arrow: only cmd/coordinator wires it over the session core)",
		file: "coordinator/internal/nctest/nctest.go",
		old:  "\t\"browserfl/shared/optim\"\n)",
		new:  "\t\"browserfl/shared/optim\"\n\t_ \"browserfl/coordinator/sessionnode\"\n)",
		pkgs: []string{"./internal/archtest/"},
	},
	{
		name: "view-imports-store", why: "the status types import the store (a forbidden arrow: what a session shows would reach into its state)",
		file: "coordinator/view/view.go",
		old:  "\t\"browserfl/coordinator/site\"\n",
		new:  "\t\"browserfl/coordinator/site\"\n\t_ \"browserfl/coordinator/store\"\n",
		pkgs: []string{"./internal/archtest/"},
	},
	{
		name: "decision-before-commit", why: "the round is committed concurrently with sending its decisions, not before",
		file: "coordinator/shell.go",
		old:  "if err := c.store.CommitRound(rec, state); err != nil {",
		new:  "go c.store.CommitRound(rec, state)\n\tif err := error(nil); err != nil {",
		pkgs: []string{"./coordinator/", "-run", "Crash|EndToEnd|Admission|Hostile"},
	},
	{
		name: "write-no-deadline", why: "a frame is written without the write timeout (a client that stops reading holds its writer for good)",
		file: "coordinator/wsconn/conn.go",
		old:  "cn.fc.SetWriteDeadline(time.Now().Add(cn.F.Lim.WriteTimeout))",
		new:  "_ = time.Now",
		pkgs: []string{"./coordinator/wsconn/", "-run", "WriteTimeout"},
	},
	{
		name: "asset-plain-immutable", why: "a page asset's plain name (/web/app.wasm) is cached for a year like a content-hashed one: a new build would never reach a phone that has the old",
		file: "coordinator/site/static.go",
		old:  "a.serve(w, r, name == a.hashed && name != a.name)",
		new:  "a.serve(w, r, true)",
		pkgs: []string{"./coordinator/site/", "-run", "StaticSite"},
	},
	{
		name: "asset-forms-only-gzip-as-identity", why: "a client that accepts neither gzip nor brotli gets app.wasm's gzip form (the coordinator embeds only its compressed forms) as if it were the program",
		file: "coordinator/site/static.go",
		old:  "raw.gunzip, raw.size = true, size",
		new:  "raw.size = size",
		pkgs: []string{"./coordinator/site/", "-run", "FormsOnly"},
	},
	{
		name: "eval-last-batch-dropped", why: "the evaluation of a picture task skips its last, partial batch of test pictures (2,000 = 7 x 256 + 208: the accuracy shown counts 208 pictures it never looked at)",
		file: "cmd/coordinator/session.go",
		old:  "for i := 0; e.pics != nil && i < e.n; i += evalBatch {",
		new:  "for i := 0; e.pics != nil && i+evalBatch <= e.n; i += evalBatch {",
		pkgs: []string{"./cmd/coordinator/", "-run", "EvaluationCompact"},
	},
	{
		name: "encoding-q0-accepted", why: "an encoding the browser refuses (q=0) is sent anyway",
		file: "coordinator/site/static.go",
		old:  "return err != nil || q <= 0",
		new:  "return err != nil && q <= 0",
		pkgs: []string{"./coordinator/site/", "-run", "StaticSite|EncodedBodies"},
	},
	{
		name: "frame-held-dropped", why: "a long frame's first write, held back to go out with the rest in one writev, is dropped when the frame ends on the buffer's boundary",
		file: "coordinator/wsconn/frameconn.go",
		old:  "_, err := fc.Conn.Write(b)",
		new:  "_, err := len(b), error(nil)",
		pkgs: []string{"./coordinator/wsconn/", "-run", "FrameConn|LongFrame"},
	},
	{
		name: "admission-reads-before-lock", why: "admission reads the pending round's record before taking the lock (the round may commit in between)",
		file:      "coordinator/admit.go",
		old:       "\tif c.cfg.BeforeAdmit != nil {\n\t\tc.cfg.BeforeAdmit(w.DeviceID, h.Pending)",
		new:       "\tmrec, mok, _ := c.store.Round(h.Pending)\n\tc.mutRound = func(int) (store.RoundRecord, bool, error) { return mrec, mok, nil }\n\tif c.cfg.BeforeAdmit != nil {\n\t\tc.cfg.BeforeAdmit(w.DeviceID, h.Pending)",
		more:      []edit{{"\t\t\trec, ok, err := c.store.Round(pending)\n", "\t\t\trec, ok, err := c.mutRound(pending)\n"}},
		elsewhere: []fileEdit{{"coordinator/coordinator.go", "\tnode Relay\n}", "\tnode Relay\n\tmutRound func(int) (store.RoundRecord, bool, error)\n}"}},
		pkgs:      []string{"./coordinator/", "-run", "Admission"},
	},
	{
		name: "validation-skipped", why: "the coordinator skips every test of an update (norm bound included)",
		file: "coordinator/intake.go",
		old:  "if err := check.Message(in.chk, *vec, norm, hist); err != nil {",
		new:  "if err := check.Message(in.chk, *vec, norm, hist); false && err != nil {",
		pkgs: []string{"./coordinator/", "-run", "Hostile|Unservable"},
	},
	{
		name: "misses-reset-on-hello", why: "a new hello resets a device's missed rounds (an idle id that says hello again is sampled again)",
		file: "coordinator/admit.go",
		old:  "\td.Left, d.LeftWhy = false, \"\"\n",
		new:  "\td.Left, d.LeftWhy = false, \"\"\n\td.Standing = roster.Device{}.Standing\n",
		pkgs: []string{"./coordinator/", "-run", "UnansweringDevice"},
	},
	{
		name: "no-overselection", why: "a cohort member that is not sure brings no sure device more (rounds wait for idle new ids)",
		file: "engine/cohort.go",
		old:  "\t\tif sure(id) {\n\t\t\tp.Members = append(p.Members, id)",
		new:  "\t\tif false && sure(id) {\n\t\t\tp.Members = append(p.Members, id)",
		pkgs: []string{"./engine/", "-run", "PlanCohort"},
	},
	{
		name: "no-close-at-target", why: "a round waits for every member instead of closing when its target of updates has arrived",
		file: "coordinator/rounds.go",
		old:  "if or.closed || (len(or.updates) < len(or.cohort) && len(or.updates) < or.target) {",
		new:  "if or.closed || len(or.updates) < len(or.cohort) {",
		pkgs: []string{"./coordinator/", "-run", "IdleSybils"},
	},
	{
		name: "new-ids-sure", why: "a new id is a sure cohort member before any update of it was included",
		file: "engine/standing.go",
		old:  "return s.misses == 0 && (s.proven || trustNew)",
		new:  "return s.misses == 0",
		pkgs: []string{"./coordinator/", "-run", "IdleSybils"},
	},
	{
		name: "unsure-silence-not-missed", why: "a member that was not sure and did not answer a round that closed at its target is not counted as missing it (it is never demoted)",
		file: "engine/cohort.go",
		old:  "return !delivered && (!atTarget || unsure)",
		new:  "return !delivered && !atTarget",
		pkgs: []string{"./engine/", "-run", "Missed"},
	},
	{
		name: "sim-dropout-delivered", why: "the simulator delivers the messages its devices lose (a simulated dropout is not the product's)",
		file: "sim/sim.go",
		old:  "if r.errs[k] == nil && r.cfg.Dropout != nil && r.cfg.Dropout(t, id) {",
		new:  "if false {",
		pkgs: []string{"./sim/", "-run", "OneRoundEngine"},
	},
	{
		name: "sim-dropout-not-aborted", why: "a simulated device whose message was lost does not abort (its noise state is not the product's device's)",
		file: "sim/sim.go",
		old:  "\t\t\tdv.standing.Missed()\n\t\t\tif err := dv.dev.Abort(t); err != nil {",
		new:  "\t\t\tdv.standing.Missed()\n\t\t\tif err := error(nil); err != nil {",
		pkgs: []string{"./sim/", "-run", "OneRoundEngine"},
	},
	{
		name: "join-code-case-sensitive", why: "join codes are compared as typed (a class typing the code in lower case is refused and held off)",
		file: "shared/wire/joincode.go",
		old:  "return unicode.ToUpper(r)",
		new:  "return r",
		pkgs: []string{"./shared/wire/", "-run", "NormalizeJoinCode"},
	},
	{
		name: "join-code-modulo-bias", why: "a join code's characters are drawn with a plain modulo (the first 8 of the alphabet more often)",
		file: "coordinator/sessions/host.go",
		old:  "if b < 248 && len(out) < n {",
		new:  "if len(out) < n {",
		pkgs: []string{"./coordinator/sessions/", "-run", "RandomJoinCode"},
	},
	{
		name: "edge-history-unused", why: "an edge tests each message only, not its device's running sum (a drift just under every message test passes)",
		file: "coordinator/edge/edge.go",
		old:  "hist := r.historyOf(ec)",
		new:  "hist := (*check.History)(nil)",
		pkgs: []string{"./coordinator/", "-run", "EdgeKeepsHistories"},
	},
	{
		name: "edge-history-count-ignored", why: "an edge keeps a device's history when the session counts an inclusion it did not see (an honest device's sum no longer telescopes)",
		file: "coordinator/edge/edgehist.go",
		old:  "eh.fresh || eh.lost || eh.gen != m.Gen || eh.incl != m.Incl:",
		new:  "eh.fresh || eh.lost || eh.gen != m.Gen:",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHistoryMarks"},
	},
	{
		name: "edge-history-gen-ignored", why: "an edge keeps a device's history across a new session record (a restart or an evicted record resets the session's count, which can meet the edge's stale one)",
		file: "coordinator/edge/edgehist.go",
		old:  "eh.fresh || eh.lost || eh.gen != m.Gen || eh.incl != m.Incl:",
		new:  "eh.fresh || eh.lost || eh.incl != m.Incl:",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHistoryMarks"},
	},
	{
		name: "edge-history-lost-ignored", why: "an edge keeps a device's history after giving up an update whose decision it never learned (it may miss an inclusion)",
		file: "coordinator/edge/edgehist.go",
		old:  "eh.fresh || eh.lost || eh.gen != m.Gen || eh.incl != m.Incl:",
		new:  "eh.fresh || eh.gen != m.Gen || eh.incl != m.Incl:",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHistoryMarks"},
	},
	{
		name: "edge-history-asks-ignored", why: "an edge keeps a history from the start when the device was asked elsewhere too (its noise limits then follow too few asks)",
		file: "coordinator/edge/edgehist.go",
		old:  "if eh.h.FromStart() && eh.h.Asks() != m.Asks {",
		new:  "if false {",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHistoryMarks"},
	},
	{
		name: "edge-history-adds-excluded", why: "an edge adds an excluded update to its device's history",
		file: "coordinator/edge/edgehist.go",
		old:  "if included && ec.hist != nil && hs.byID[ec.cn.ID] == ec.hist {",
		new:  "if ec.hist != nil && hs.byID[ec.cn.ID] == ec.hist {",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHistoryMarks"},
	},
	{
		name: "tell-before-commit", why: "the engine tells the members their decisions before the round is committed",
		file: "engine/loop.go",
		old:  "\tif err := sh.Commit(t, o); err != nil {\n\t\treturn false, err\n\t}\n\te.last = o.State\n\tsh.Tell(t, o)\n",
		new:  "\tsh.Tell(t, o)\n\tif err := sh.Commit(t, o); err != nil {\n\t\treturn false, err\n\t}\n\te.last = o.State\n",
		pkgs: []string{"./engine/", "-run", "RoundStages"},
	},
	{
		name: "discard-without-restore", why: "a discarded round leaves the server half in the state its apply left (the next round starts from a result that could not be served)",
		file: "engine/loop.go",
		old:  "if err := e.srv.UnmarshalBinary(before); err != nil {",
		new:  "if err := error(nil); err != nil {",
		pkgs: []string{"./engine/", "-run", "RoundDiscards"},
	},
	{
		name: "servable-unchecked", why: "the engine commits a round whose result cannot be served (a model that is not finite reaches every device)",
		file: "engine/loop.go",
		old:  "if applyErr == nil && t < e.rounds {",
		new:  "if false {",
		pkgs: []string{"./engine/", "-run", "RoundDiscards"},
	},
	{
		name: "included-past-cohort", why: "a round's included set takes the update of a device no longer in its cohort (dropped or removed meanwhile)",
		file: "engine/apply.go",
		old:  "\t\tif cohort[id] {\n",
		new:  "\t\tif true || cohort[id] {\n",
		pkgs: []string{"./engine/", "-run", "Included"},
	},
	{
		name: "carried-members-not-counted", why: "members of an edge's aggregate carried by another member's vector are not counted in the round's n (a round past the cohort m is not refused)",
		file: "engine/apply.go",
		old:  "return sa.ApplySum(t, sum, len(included))",
		new:  "return sa.ApplySum(t, sum, len(vs))",
		pkgs: []string{"./engine/", "-run", "Apply"},
	},
	{
		name: "aggregate-past-cohort", why: "the session process counts an edge's sum that takes the round past the cohort m (the server half refuses the round)",
		file: "coordinator/cluster.go",
		old:  "\t\tcase len(or.updates)+len(ids) > c.sess.Cohort:",
		new:  "\t\tcase false:",
		pkgs: []string{"./coordinator/", "-run", "AggregatePastCohort"},
	},
	{
		name: "aggregate-norm-skipped", why: "the session process accepts an edge's sum without its norm bound (n times the update bound)",
		file: "coordinator/cluster.go",
		old:  "case !(norm <= float64(len(ids))*c.in.bound):",
		new:  "case false && !(norm <= float64(len(ids))*c.in.bound):",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "HostileAggregate"},
	},
	{
		name: "aggregate-members-unchecked", why: "the session process counts an edge's sum without checking that each member is the device bound to the connection the edge names",
		file:      "coordinator/cluster.go",
		old:       "case links[i] == nil || d == nil || d.Conn != links[i]:",
		new:       "case d == nil || links[i] == nil:",
		elsewhere: []fileEdit{{"coordinator/sessionnode/node.go", "if l := n.link(edge, s); l != nil && l.id == h.IDs[i] {", "if l := n.link(edge, s); l != nil {"}},
		pkgs:      []string{"./coordinator/sessionnode/", "-run", "HostileAggregate"},
	},
	{
		name: "edge-validation-skipped", why: "an edge adds an update its tests refuse (norm bound included) to its round's sum",
		file: "coordinator/edge/edge.go",
		old:  "if refused != nil {",
		new:  "if false && refused != nil {",
		pkgs: []string{"./coordinator/", "-run", "EdgeRejectsHostile"},
	},
	{
		name: "edge-norm-only", why: "an edge applies only the norm bound (not the session's tests of each update)",
		file: "coordinator/edge/edge.go",
		old:  "r.chk = e.tests.of(h.Session)",
		new:  "r.chk = nil",
		pkgs: []string{"./coordinator/", "-run", "EdgeRejectsSpike"},
	},
	{
		name: "round-without-session", why: "the session sends rounds to edges without its parameters (edges fall back to the norm bound)",
		file: "coordinator/sessionnode/node.go",
		old:  "DeadlineMillis: sess.DeadlineMillis, Session: &sess}, o.frame)",
		new:  "DeadlineMillis: sess.DeadlineMillis}, o.frame)",
		pkgs: []string{"./coordinator/", "-run", "EdgeRejectsSpike"},
	},
	{
		name: "edge-disconnect-before-sum", why: "an edge reports a device gone before handing over the update it holds from it (the session drops the device and refuses the edge's whole sum)",
		file: "coordinator/edge/edge.go",
		old:  "if r := e.round; r != nil && !r.flushed && r.members[cn.Seq] && slices.Contains(r.seqs, cn.Seq) {",
		new:  "if r := e.round; false && r != nil && !r.flushed && r.members[cn.Seq] && slices.Contains(r.seqs, cn.Seq) {",
		pkgs: []string{"./coordinator/", "-run", "EdgeDeviceGone"},
	},
	{
		name: "roster-drops-hello-in-flight", why: "a whole roster drops the link of a connection whose hello the session is still deciding (the admitted device becomes unreachable)",
		file: "coordinator/sessionnode/node.go",
		old:  "if k.edge == edge && !es.rosterSeqs[k.seq] && es.hellos[k.seq] == nil {",
		new:  "if k.edge == edge && !es.rosterSeqs[k.seq] {",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "RosterKeepsHello"},
	},
	{
		name: "edge-round-member-twice", why: "an edge asks a device listed twice in a round message twice and waits for two answers (the round's sum waits for the deadline)",
		file: "coordinator/edge/edge.go",
		old:  "if ec == nil || ec.welcome != nil || dup || ec.cn.SendRound(",
		new:  "if ec == nil || ec.welcome != nil || (dup && false) || ec.cn.SendRound(",
		pkgs: []string{"./coordinator/edge/", "-run", "FuzzEdgeEnvelope"},
	},
	{
		name: "edge-end-before-decision", why: "an edge ends a device whose update is still undecided (a lost decision leaves its noise state pending for good)",
		file: "coordinator/edge/edge.go",
		old:  "\tif ec.assigned != 0 {\n\t\tif !ec.endHeld {",
		new:  "\tif false && ec.assigned != 0 {\n\t\tif !ec.endHeld {",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeHoldsEnd"},
	},
	{
		name: "bus-no-auth", why: "the embedded NATS server has no users: any client connects without credentials and reads or writes every subject",
		file: "coordinator/bus/natsserver.go",
		old:  "Nkeys: cfg.Keys.NATSUsers(cfg.Prefix)",
		new:  "Nkeys: nil",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "BusRefusesOutsiders"},
	},
	{
		name: "bus-permissions-off", why: "every key may publish and subscribe on every subject: an edge speaks as another edge or the session, and reads everyone's traffic",
		file: "coordinator/bus/natsserver.go",
		old:  "\tperm := func(pub, sub string) *server.Permissions {\n",
		new:  "\tperm := func(pub, sub string) *server.Permissions {\n\t\tpub, sub = \">\", \">\"\n",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "BusConfinesEachComponent|ForgedAggregates"},
	},
	{
		name: "nats-listen-anywhere-without-tls", why: "the embedded NATS server listens off loopback in plaintext",
		file: "coordinator/bus/natsserver.go",
		old:  "if !cfg.TLS.enabled() && !loopbackHost(host) {",
		new:  "if false && !cfg.TLS.enabled() && !loopbackHost(host) {",
		pkgs: []string{"./coordinator/bus/", "-run", "StartNATSRefuses"},
	},
	{
		name: "session-aggregate-any-edge", why: "the session takes an aggregate's members from any edge's connections, not only those of the edge whose subject carried it",
		file: "coordinator/sessionnode/node.go",
		old:  "if l := n.link(edge, s); l != nil && l.id == h.IDs[i] {",
		new:  "if l := func() *remoteLink { n.mu.Lock(); defer n.mu.Unlock(); for k, l := range n.links { if k.seq == s { return l } }; return nil }(); l != nil && l.id == h.IDs[i] {",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "ForgedAggregates"},
	},
	{
		name: "session-edge-allowlist-off", why: "the session listens to any edge id on the bus, not only those named in -edges",
		file: "coordinator/sessionnode/node.go",
		old:  "if len(n.cfg.Edges) > 0 && !slices.Contains(n.cfg.Edges, edge) {",
		new:  "if false && len(n.cfg.Edges) > 0 && !slices.Contains(n.cfg.Edges, edge) {",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "ForgedAggregates"},
	},
	{
		name: "session-accepts-raw-credentials", why: "the session takes a forwarded hello that carries the join code or the device's secret itself",
		file: "coordinator/sessionnode/node.go",
		old:  "if hello.JoinCode != \"\" || hello.Secret != \"\" {",
		new:  "if false {",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "SessionRefusesMalformedHellos"},
	},
	{
		name: "edge-forwards-raw-secret", why: "an edge forwards a device's secret in its hello over the bus",
		file: "coordinator/edge/edge.go",
		old:  "h.JoinCode, h.Secret = \"\", \"\"",
		new:  "h.JoinCode = \"\"",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "BusCarriesNoCredentials"},
	},
	{
		name: "beat-plain-join-code", why: "the session's beat carries the join code itself, readable on the bus",
		file: "coordinator/cluster.go",
		old:  "JoinCodeHash: bus.CodeDigest(c.cfg.JoinCode)",
		new:  "JoinCodeHash: c.cfg.JoinCode",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "BusCarriesNoCredentials"},
	},
	{
		name: "key-file-readable", why: "the session process writes the components' NATS key files readable by every user of the machine",
		file: "coordinator/bus/buskeys.go",
		old:  "os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600",
		new:  "os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644",
		pkgs: []string{"./coordinator/bus/", "-run", "BusKeyFiles"},
	},
	{
		name: "key-file-mode-unchecked", why: "a component loads a NATS key file that others can read",
		file: "coordinator/bus/buskeys.go",
		old:  "if fi.Mode().Perm()&0o077 != 0 {",
		new:  "if false && fi.Mode().Perm()&0o077 != 0 {",
		pkgs: []string{"./coordinator/bus/", "-run", "BusKeyFiles"},
	},
	{
		name: "roster-claims-without-secret", why: "an edge's roster adopts any known device id without the digest of its secret (an edge takes another edge's device over)",
		file: "coordinator/sessionnode/node.go",
		old:  "secretHash, err := bus.ParseDigest(e.SecretHash)\n\t\tif err == nil {\n\t\t\terr = c.Store().AuthenticateHash(e.ID, secretHash)\n\t\t}",
		new:  "var err error\n\t\tif ok, kerr := c.Store().Known(e.ID); kerr != nil || !ok {\n\t\t\terr = errors.New(\"unknown device\")\n\t\t}",
		pkgs: []string{"./coordinator/sessionnode/", "-run", "RosterNeedsTheSecret"},
	},
	{
		name: "edge-auth-error-silent", why: "an edge whose key NATS refuses does not say so (its log and /healthz show a bare disconnection)",
		file: "coordinator/bus/natsconn.go",
		old:  "return fmt.Errorf(\"%w: %v\", ErrAuth, err)",
		new:  "return err",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeSaysWhenRefused"},
	},
	{
		name: "edge-permission-denial-silent", why: "an edge whose key is another edge's (its subjects refused) reports only that the session is silent",
		file: "coordinator/edge/edge.go",
		old:  "if err := e.cfg.Status.Denied(); err != nil {",
		new:  "if err := e.cfg.Status.Denied(); false && err != nil {",
		pkgs: []string{"./coordinator/edge/", "-run", "EdgeSaysWhenRefused"},
	},
	{
		name: "device-xprev-not-last", why: "a device given a round frame without x_{t-1} uses the wrong point in its place (the round's own X)",
		file: "device/link.go",
		old:  "\t\tr.XPrev = c.lastX\n",
		new:  "\t\tr.XPrev = r.X\n",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "short-frame-after-gap", why: "the coordinator sends a frame without x_{t-1} to a device that was last sent round t-2's frame, not t-1's",
		file: "coordinator/wsconn/conn.go",
		old:  "cn.lastRound.Load() == t-1 {",
		new:  "cn.lastRound.Load() >= t-2 {",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "local-noise-0.9", why: "the noise of each hidden local step of \"local\" is 10% too small (its ledger charge unchanged)",
		file: "shared/optim/local.go",
		old:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.relSens, dv.step, d); err != nil {",
		new:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(0.9*dv.sigma, dv.relSens, dv.step, d); err != nil {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-noise-0.5-audit", why: "the noise of each hidden local step of \"local\" is half the calibrated scale (the empirical privacy audit must see it)",
		file: "shared/optim/local.go",
		old:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.relSens, dv.step, d); err != nil {",
		new:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(0.5*dv.sigma, dv.relSens, dv.step, d); err != nil {",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "local-sensitivity-2S/b", why: "\"local\"'s per-step sensitivity ignores K (2S/b instead of 2S/(b/K)): noise and charge both K times too small",
		file: "shared/optim/algo/calib.go",
		old:  "return 2 * S / float64(p.StepBatch())",
		new:  "return 2 * S / b",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-ledger-half", why: "\"local\" charges half of a step's cost",
		file: "shared/optim/local.go",
		old:  "if err := dv.ledger.ChargeRho(cost); err != nil {",
		new:  "if err := dv.ledger.ChargeRho(cost * 0.5); err != nil {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-noise-first-step-only", why: "\"local\" adds noise to its first hidden step only",
		file: "shared/optim/local.go",
		old:  "\t\tdv.noise.FillDiscreteGaussian(dv.nz, dv.sigmaZ)\n\t\tif i, err := dv.release(",
		new:  "\t\tif step == 0 {\n\t\t\tdv.noise.FillDiscreteGaussian(dv.nz, dv.sigmaZ)\n\t\t} else {\n\t\t\tclear(dv.nz)\n\t\t}\n\t\tif i, err := dv.release(",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-eta-unchecked", why: "output perturbation of \"local\" is used with steps longer than 2/beta, where a step can expand distances",
		file: "shared/optim/algo/local.go",
		old:  "p.Eta > 0 && p.Eta*beta <= 2 &&",
		new:  "p.Eta > 0 && beta >= 0 &&",
		pkgs: []string{"./shared/optim/", "-run", "LocalCharge"},
	},
	{
		name: "local-op-clipping-unchecked", why: "output perturbation of \"local\" is used with a clipping bound below the model's gradient bound (clipped steps need not be nonexpansive)",
		file: "shared/optim/algo/local.go",
		old:  "ok && p.S() >= G &&",
		new:  "ok && G > 0 &&",
		pkgs: []string{"./shared/optim/", "-run", "LocalCharge"},
	},
	{
		name: "local-epochs-uncalibrated", why: "the noise of \"local\" ignores the charge of its E passes (calibrated for one step, charged for the round)",
		file: "shared/optim/algo/calib.go",
		old:  "return LocalReleaseSensitivity(p) * math.Sqrt(LocalCharge(p)/(2*budget)), nil",
		new:  "return LocalReleaseSensitivity(p) * math.Sqrt(1/(2*budget)), nil",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-step-batch-reused", why: "every hidden step of \"local\" uses the first step batch (a sample enters K steps; the one-step charge no longer covers it)",
		file: "shared/optim/local.go",
		old:  "dv.est.mean(v, r, x, batch[j*dv.bs:(j+1)*dv.bs], S)",
		new:  "dv.est.mean(v, r, x, batch[0:dv.bs], S)",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-clip-1.1", why: "each hidden step of \"local\" clips its gradients to 1.1 S while its noise is calibrated to S (the step's sensitivity is 10% over the charge)",
		file: "shared/optim/local.go",
		old:  "dv.est.mean(v, r, x, batch[j*dv.bs:(j+1)*dv.bs], S)",
		new:  "dv.est.mean(v, r, x, batch[j*dv.bs:(j+1)*dv.bs], 1.1*S)",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "estimator-ghost-at-round-point", why: "the SGD estimator's ghost path takes each gradient at the round's x_t, not at the point it is given: the hidden steps of \"local\" all stand at x_t",
		file: "shared/optim/device.go",
		old:  "n = fm.FactorGradDiff(1, at, 0, nil, s)",
		new:  "n = fm.FactorGradDiff(1, r.X, 0, nil, s)",
		pkgs: []string{"./shared/optim/", "-run", "Estimator|Local"},
	},
	{
		name: "estimator-formed-at-round-point", why: "the SGD estimator's formed path (the MLP) takes each gradient at the round's x_t, not at the point it is given",
		file: "shared/optim/device.go",
		old:  "if err := e.grad(e.g, r, s, at, bound); err != nil {",
		new:  "if err := e.grad(e.g, r, s, r.X, bound); err != nil {",
		pkgs: []string{"./shared/optim/", "-run", "Estimator|Local"},
	},
	{
		name: "estimator-nonfinite-norm-unchecked", why: "the ghost path adds a sample whose gradient norm is not finite (a NaN or an infinite clip factor) instead of refusing it",
		file: "shared/optim/device.go",
		old:  "if !(n <= math.MaxFloat64) {",
		new:  "if false && !(n <= math.MaxFloat64) {",
		pkgs: []string{"./shared/optim/", "-run", "Estimator|Local"},
	},
	{
		name: "local-clean-kept-after-failure", why: "a release of \"local\" that fails half-way leaves its partial clean sum readable as the last release's (what the page shows as \"what your phone sent\" and the simulator's measures read)",
		file: "shared/optim/local.go",
		old:  "\tdv.cleanOK = false\n\tclear(dv.clean)\n",
		new:  "\tclear(dv.clean)\n",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-release-noise-dropped", why: "a hidden step's release of \"local\" in its one pass adds no noise to the integer sum the iterate and the message follow",
		file: "shared/optim/local.go",
		old:  "\t\tk += nz[i]\n",
		new:  "\t\tk += 0 * nz[i]\n",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-release-grid-unchecked", why: "a hidden step's release of \"local\" rounds a value beyond the grid's exact range (or NaN) instead of refusing it",
		file: "shared/optim/local.go",
		old:  "\t\tif !ok {\n\t\t\treturn i, errNotOnGrid\n\t\t}\n",
		new:  "\t\t_ = ok\n",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-budget-unchecked", why: "\"local\" skips its budget check before a release",
		file: "shared/optim/local.go",
		old:  "if dv.ledger.Rho()+cost > dv.budget*budgetSlack {",
		new:  "if false && dv.ledger.Rho()+cost > dv.budget*budgetSlack {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-release-cap-off-by-one", why: "\"local\" allows T+1 releases",
		file: "shared/optim/local.go",
		old:  "if dv.n >= dv.p.Rounds {",
		new:  "if dv.n > dv.p.Rounds {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-update-bound-one-step", why: "the coordinator's norm bound for \"local\" counts one step instead of K E (honest devices rejected)",
		file: "shared/optim/plausible/bound.go",
		old:  "steps = float64(p.HiddenSteps())",
		new:  "steps = 1",
		pkgs: []string{"./shared/optim/plausible/", "-run", "UpdateBound"},
	},
	{
		name: "local-op-sens-no-E", why: "output perturbation of \"local\" calibrates its one noise vector to one step's sensitivity, not the E steps' a record enters (noise E times too small)",
		file: "shared/optim/algo/local.go",
		old:  "return float64(p.LocalE()) * Sensitivity(p) * (1 + localOPSlack)",
		new:  "return Sensitivity(p) * (1 + localOPSlack)",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-slack-dropped", why: "output perturbation of \"local\" calibrates to E Delta without the floating-point allowance of its K E hidden steps",
		file: "shared/optim/algo/local.go",
		old:  "return float64(p.LocalE()) * Sensitivity(p) * (1 + localOPSlack)",
		new:  "return float64(p.LocalE()) * Sensitivity(p)",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-uncertified", why: "output perturbation (noiseless hidden steps) is used for an uncertified \"local\" session, where a step may expand distances",
		file: "shared/optim/algo/local.go",
		old:  "return p.Algorithm == \"local\" && certifiedLocal(p)",
		new:  "return p.Algorithm == \"local\"",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-message-scale", why: "output perturbation of \"local\" sends twice (x_t - x_{KE})/eta (the message's sensitivity is twice the calibrated one)",
		file: "shared/optim/local.go",
		old:  "dv.msg[i] = (x0[i] - x[i]) / eta",
		new:  "dv.msg[i] = 2 * (x0[i] - x[i]) / eta",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-one-sample-step-twice", why: "a one-sample hidden step of output perturbation moves the iterate by 2 eta times its gradient (the step is no longer the nonexpansive one the proof uses, the message moves twice as far)",
		file: "shared/optim/local.go",
		old:  "fm.AddFactor(x, -eta*mechanism.ClipFactor(n, S))",
		new:  "fm.AddFactor(x, -2*eta*mechanism.ClipFactor(n, S))",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-noise-dropped", why: "output perturbation of \"local\" releases the last iterate without its noise vector",
		file: "shared/optim/local.go",
		old:  "dv.sum[i] = u + dv.nz[i]",
		new:  "dv.sum[i] = u",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-float-guard-off", why: "output perturbation of \"local\" runs from a query point so large that floating point may add more than its allowance to the sensitivity",
		file: "shared/optim/local.go",
		old:  "!(fs <= room) {",
		new:  "false && !(fs <= room) {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-op-step-batch-reused", why: "every noiseless hidden step of output perturbation uses the first step batch (a record enters K E steps, not E)",
		file: "shared/optim/local.go",
		old:  "sb := batch[j*dv.bs : (j+1)*dv.bs]",
		new:  "sb := batch[0:dv.bs]",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "check-coordinate-off", why: "the Checker skips its coordinate test (a spike inside the norm bound passes)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if !(math.Abs(v) <= coord) {",
		new:  "if false && !(math.Abs(v) <= coord) {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "check-coordinate-quantile-1.1", why: "the coordinate test's quantile is 10% too loose",
		file: "shared/optim/plausible/plausible.go",
		old:  "c.zc = math.Sqrt(2 * math.Log(2*float64(d)*R2/prob))",
		new:  "c.zc = 1.1 * math.Sqrt(2*math.Log(2*float64(d)*R2/prob))",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "check-blocks-off", why: "the Checker skips its block tests (and the running sum's norm)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if nb := math.Sqrt(sums[l]); !(nb <= lim) {",
		new:  "if nb := math.Sqrt(sums[l]); false && !(nb <= lim) {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "check-history-off", why: "the Checker never tests a device's running sum",
		file: "shared/optim/plausible/plausible.go",
		old:  "if h == nil || !c.history {",
		new:  "if true {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "check-sum-norm-off", why: "the running sum's norm is not tested (a dense drift grows by several E a round)",
		file: "shared/optim/plausible/plausible.go",
		old:  "levels = append(levels[:len(levels):len(levels)], c.d)",
		new:  "levels = levels[:len(levels):len(levels)]",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "check-persist-off", why: "the persistence test is skipped (a push hidden in the first answer stays in the model)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if c.persist && h.FromStart && h.n > 0 {",
		new:  "if false {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "history-slack-last-only", why: "the float32 running sum's slack keeps only the last add's rounding (the stored sum can drift past it)",
		file: "shared/optim/plausible/plausible.go",
		old:  "h.slack[nb+1] += histRound*math.Sqrt(all)",
		new:  "h.slack[nb+1] = histRound*math.Sqrt(all)",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-slack-1024x", why: "the float32 running sum's slack is 1,024 times its rounding (every running-sum limit looser)",
		file: "shared/optim/plausible/plausible.go",
		old:  "histRound = 1.0 / (1 << 23)",
		new:  "histRound = 1.0 / (1 << 13)",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-subnormal-unbounded", why: "the slack omits float32's absolute error below its normal range",
		file: "shared/optim/plausible/plausible.go",
		old:  "histTiny  = 0x1p-149",
		new:  "histTiny  = 0",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-slack-unused", why: "the running sum's coordinate limit omits the float32 slack (an honest sum refused after rounding)",
		file: "shared/optim/plausible/plausible.go",
		old:  "coord = c.HistCoordLimit(n, a) + slack[0]",
		new:  "coord = c.HistCoordLimit(n, a)",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-block-slack-2x", why: "the running sum's block and norm limits add twice the slack",
		file: "shared/optim/plausible/plausible.go",
		old:  "return c.HistBlockLimit(k, n, a) + slack[slackLevel(levels[l])]",
		new:  "return c.HistBlockLimit(k, n, a) + 2*slack[slackLevel(levels[l])]",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-block-slack-whole", why: "every block's limit adds the whole vector's slack (a block of 8 gets up to sqrt(d/8) times its own)",
		file: "shared/optim/plausible/plausible.go",
		old:  "return c.HistBlockLimit(k, n, a) + slack[slackLevel(levels[l])]",
		new:  "return c.HistBlockLimit(k, n, a) + slack[len(blockSizes)+1]",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-persist-slack-loose", why: "the persistence limit's slack term is e instead of e^2 (looser)",
		file: "shared/optim/plausible/plausible.go",
		old:  "+ 3*e*e",
		new:  "+ 3*e",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-slack-guard-off", why: "a history with a slack no checked history reaches (a cancelled huge sum, an overflow) is tested as any other",
		file: "shared/optim/plausible/plausible.go",
		old:  "!(e <= lim) {",
		new:  "false {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-last-block-dropped", why: "the slack of each block size leaves out the vector's last, shorter block (its error can pass its slack)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if count[l] == k || last {",
		new:  "if count[l] == k && last == last {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-short-block-whole-slack", why: "a shorter last block's limit adds the slack of its own length's level (the whole vector's) instead of its size's",
		file: "shared/optim/plausible/plausible.go",
		old:  "return c.HistBlockLimit(k, n, a) + slack[slackLevel(levels[l])]",
		new:  "return c.HistBlockLimit(k, n, a) + slack[slackLevel(k)]",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "history-guard-loose", why: "the guard on a history's slack is a million times looser",
		file: "shared/optim/plausible/plausible.go",
		old:  "lim := 8 * histRound * float64(h.n)",
		new:  "lim := 8e6 * histRound * float64(h.n)",
		pkgs: []string{"./shared/optim/plausible/", "-run", "History"},
	},
	{
		name: "edge-history-unchecked", why: "an edge adds an update to a device's history in a round whose checker does not test running sums (unchecked messages in the float32 sum)",
		file: "coordinator/edge/edgeround.go",
		old:  "if ec == nil || ec.hist == nil || r.chk == nil || !r.chk.Tracks() {",
		new:  "if ec == nil || ec.hist == nil {",
		pkgs: []string{"./coordinator/edge/", "-run", "TestHistoryOnlyWhenChecked"},
	},
	{
		name: "check-asks-ignored", why: "the noise allowed is the release cap's whatever the rounds asked (early answers get the loosest limits)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if c.sigZ == nil || a <= 0 || a >= c.cap {",
		new:  "if true {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "signal-bound-ignored", why: "the Checker ignores an assumed signal bound D (a running sum of n keeps n E)",
		file: "shared/optim/plausible/plausible.go",
		old:  "if c.dsum > 0 {",
		new:  "if false && c.dsum > 0 {",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "signal-bound-1.1", why: "the running-sum tests use 1.1 D in place of an assumed signal bound D",
		file: "shared/optim/plausible/plausible.go",
		old:  "return min(fn*c.e, c.e+(fn-1)*c.dsum)",
		new:  "return min(fn*c.e, c.e+(fn-1)*1.1*c.dsum)",
		pkgs: []string{"./shared/optim/plausible/", "-run", "Checker"},
	},
	{
		name: "signal-bound-any-shards", why: "the coordinator accepts -signal-bound with label-skewed demo shards (honest devices refused)",
		file: "cmd/coordinator/session.go",
		old:  "if sess.SignalBound > 0 && (shardsN <= 0 || !(o.DemoAlpha >= signalBoundAlpha)) {",
		new:  "if false && sess.SignalBound > 0 && (shardsN <= 0 || !(o.DemoAlpha >= signalBoundAlpha)) {",
		pkgs: []string{"./cmd/coordinator/", "-run", "TestAssembleSession"},
	},
	{
		name: "coordinator-norm-only", why: "the coordinator applies only the norm bound to a direct update",
		file: "coordinator/intake.go",
		old:  "if err := check.Message(in.chk, *vec, norm, hist); err != nil {",
		new:  "if err := check.Message(in.chk, *vec, norm, hist); err != nil && !(norm <= in.bound) {",
		pkgs: []string{"./coordinator/", "-run", "TestSpikeInsideNormBoundRejected"},
	},
	{
		name: "sim-norm-only", why: "the simulator's server applies only the norm bound (its results would not be the product's)",
		file: "sim/sim.go",
		old:  "d: proto.Dim(), gate: chk,",
		new:  "d: proto.Dim(), gate: check.NormOnly(chk.NormBound()),",
		pkgs: []string{"./sim/", "-run", "TestChecksBoundTheSpike"},
	},
	{
		name: "history-kept-after-eviction", why: "a device the coordinator evicted comes back with a history from the start (its next honest answers are refused for good)",
		file: "coordinator/roster/roster.go",
		old:  "r.histLost[id] = true // its asks and inclusions so far are forgotten",
		new:  "r.histLost[id] = false",
		pkgs: []string{"./coordinator/", "-run", "TestHistoryFromStart"},
	},
	{
		name: "aggregate-keeps-history-from-start", why: "an inclusion through an edge's aggregate leaves the device's history from the start (a later direct answer is tested against a sum that misses it)",
		file: "coordinator/rounds.go",
		old:  "\t\t\td.Hist.Restart()\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "TestHistoryFromStart"},
	},
	{
		name: "coordinator-history-not-from-start", why: "the coordinator never treats a device's history as from its start (no persistence test, the release cap's noise for every answer)",
		file: "coordinator/admit.go",
		old:  "d.Hist = check.NewHistory((w != nil && w.Secret != \"\") || (c.loop.seenAll && !c.roster.HistLost(id)))",
		new:  "d.Hist = check.NewHistory(false)",
		pkgs: []string{"./sim/", "-run", "TestHostileIsTheProduct"},
	},
	{
		name: "coordinator-asks-not-counted", why: "the coordinator does not count the rounds it asks a device (its limits fall back to the release cap's)",
		file: "coordinator/shell.go",
		old:  "d.Round = t\n\t\td.Hist.Ask()",
		new:  "d.Round = t",
		pkgs: []string{"./sim/", "-run", "TestHostileIsTheProduct"},
	},
	// Every charge read by a proven route.
	{
		name: "last-iterate-read-by-cks", why: "a ledger holding a last-iterate charge is read like an ordinary one (the smaller of GDP with the slack bound and the zCDP/CKS conversion), a route no proof covers for it",
		file: "shared/privacy/spent.go",
		old:  "if !s.LastIterate {\n\t\treturn ledgerEpsilon(s.Rho, delta)",
		new:  "if true {\n\t\treturn ledgerEpsilon(s.Rho, delta)",
		pkgs: []string{"./shared/privacy/", "-run", "LastIterate"},
	},
	{
		name: "spent-add-drops-last-iterate", why: "composing ledgers forgets a last-iterate charge unless both hold one",
		file: "shared/privacy/spent.go",
		old:  "LastIterate: s.LastIterate || t.LastIterate",
		new:  "LastIterate: s.LastIterate && t.LastIterate",
		pkgs: []string{"./shared/privacy/", "-run", "LastIterate|Spent"},
	},
	{
		name: "ledger-v1-read-ordinary", why: "a ledger stored in the old encoding, which did not record last-iterate charges, is read as ordinary charges (so possibly by the zCDP conversion)",
		file: "shared/privacy/zcdp.go",
		old:  "v1 := AnyCharged(rho)",
		new:  "v1 := Charged(rho)",
		pkgs: []string{"./shared/privacy/", "-run", "LedgerVersions|FuzzLedger"},
	},
	{
		name: "owner-ledger-legacy-ordinary", why: "the page reads an owner's ledger stored before charges recorded their kind as ordinary charges",
		file: "wasm/local/owner.go",
		old:  "if l.Version == 0 {",
		new:  "if false {",
		pkgs: []string{"./wasm/local/"},
	},
	// The default lesson spends the owner's budget.
	{
		name: "lesson-target-over-budget", why: "the default lesson's target is sized 2% over the owner's default budget (its worst-case device would pass the budget, and the page refuse the lesson)",
		file: "shared/plan/figures.go",
		old:  "return DefaultLessonShare * b.Epsilon, b.Delta",
		new:  "return 1.02 * b.Epsilon, b.Delta",
		pkgs: []string{"./shared/lesson/"},
	},
	{
		name: "lesson-target-under-budget", why: "the default lesson's target uses 90% of the owner's default budget (under the 95% asked)",
		file: "shared/plan/figures.go",
		old:  "return DefaultLessonShare * b.Epsilon, b.Delta",
		new:  "return 0.9 * b.Epsilon, b.Delta",
		pkgs: []string{"./shared/lesson/"},
	},
	// The server's tests against hostile devices.
	{
		name: "ledger-epsilon-gdp-overflow", why: "LedgerEpsilon gives up (an error, no epsilon) when the GDP conversion overflows instead of using the finite zCDP bound",
		file: "shared/privacy/discrete.go",
		old:  "if errors.Is(err, ErrNotFinite) {",
		new:  "if false && errors.Is(err, ErrNotFinite) {",
		pkgs: []string{"./shared/privacy/", "-run", "LedgerEpsilon|FuzzLedger"},
	},
	{
		name: "xff-from-any-peer", why: "X-Forwarded-For is believed from any peer, not only from a trusted proxy (a faked header picks a fresh address for every join-code guess)",
		file: "coordinator/gate/proxy.go",
		old:  "if !ok || !inPrefixes(hop, trusted) {",
		new:  "if !ok {",
		pkgs: []string{"./coordinator/gate/", "-run", "ClientAddr"},
	},
	{
		name: "xff-left-of-client", why: "the walk over X-Forwarded-For does not stop at the first untrusted entry from the right (the client's own left-most, faked entry is used)",
		file: "coordinator/gate/proxy.go",
		old:  "if !inPrefixes(a, trusted) {",
		new:  "if false && !inPrefixes(a, trusted) {",
		pkgs: []string{"./coordinator/gate/", "-run", "ClientAddr"},
	},
	{
		name: "trust-proxy-everyone", why: "-trust-proxy accepts 0.0.0.0/0 (every peer trusted: the old hole)",
		file: "coordinator/gate/proxy.go",
		old:  "if p.Bits() == 0 {",
		new:  "if false {",
		pkgs: []string{"./coordinator/gate/", "-run", "ParseTrustedProxies"},
	},
	{
		name: "web-sources-served", why: "the Go sources beside the page's assets (web/*.go) are served under /web/",
		file: "coordinator/site/static.go",
		old:  `case d.IsDir() || strings.HasSuffix(p, ".go"):`,
		new:  `case d.IsDir():`,
		pkgs: []string{"./coordinator/site/", "-run", "StaticSite"},
	},
	{
		name: "metrics-open-off-loopback", why: "/metrics stays open without a token when the coordinator listens beyond loopback",
		file: "coordinator/site/metricstoken.go",
		old:  "if tcp, ok := listen.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {",
		new:  "if listen != nil {",
		pkgs: []string{"./coordinator/site/", "-run", "MetricsToken"},
	},
	{
		name: "teacher-backoff-off", why: "wrong teacher secrets get no backoff (every guess from one address is checked)",
		file: "coordinator/gate/secrets.go",
		old:  "if now.Before(b.until) {",
		new:  "if false {",
		pkgs: []string{"./coordinator/", "-run", "TeacherSecretBackoff"},
	},
	{
		name: "teacher-backoff-cleared-by-join-code", why: "the teacher-secret backoff shares the join-code record, so a right join code (every student has it) clears it",
		file: "coordinator/gate/gate.go",
		old:  "s.failures, s.until = 0, time.Time{}",
		new:  "s.failures, s.until, s.teacher = 0, time.Time{}, backoff{}",
		pkgs: []string{"./coordinator/", "-run", "TeacherSecretBackoff"},
	},
	{
		name: "sessions-list-with-join-code", why: "/api/sessions (every past session) is listed to anyone with today's join code, not only to the teacher",
		file: "coordinator/sessions/host.go",
		old:  "h.teacherOnly(cur, func(w http.ResponseWriter, r *http.Request) {",
		new:  "h.authorized(cur, \"\", func(w http.ResponseWriter, r *http.Request) {",
		pkgs: []string{"./coordinator/", "-run", "HostNewSession"},
	},
	{
		name: "nickname-exact-only", why: "a nickname is refused only when it equals a present one (look-alikes such as a Cyrillic \"Тeacher\" join)",
		file: "coordinator/roster/view.go",
		old:  "d.Skeleton != \"\" && d.Skeleton == sk {",
		new:  "d.Skeleton != sk+\"x\" && d.Nickname == nickname {",
		pkgs: []string{"./coordinator/", "-run", "Nickname"},
	},
	{
		name: "nickname-homoglyphs-ignored", why: "the skeleton skips the Cyrillic and Greek homoglyph table",
		file: "coordinator/gate/nickname.go",
		old:  "if l, ok := homoglyphs[r]; ok {",
		new:  "if l, ok := homoglyphs[r]; ok && false {",
		pkgs: []string{"./coordinator/gate/", "-run", "Nickname"},
	},
	{
		name: "nickname-not-nfkc", why: "the coordinator keeps a nickname as sent, not in NFKC form (full-width look-alikes on the projector)",
		file: "coordinator/gate/nickname.go",
		old:  "n := norm.NFKC.String(s)",
		new:  "n := s",
		pkgs: []string{"./coordinator/gate/", "-run", "Nickname"},
	},
	{
		name: "device-fetch-no-retry", why: "the native device gives up at its first failed attempt to reach a coordinator that is not up yet",
		file: "cmd/device/retry.go",
		old:  "if err == nil || errors.Is(err, errPermanent) {",
		new:  "if true {",
		pkgs: []string{"./cmd/device/", "-run", "FetchShardRetries"},
	},
	{
		name: "device-backoff-uncapped", why: "the native device's wait between attempts keeps doubling past its cap",
		file: "cmd/device/retry.go",
		old:  "d = min(2*d, r.Max)",
		new:  "d = 2 * d",
		pkgs: []string{"./cmd/device/", "-run", "FetchShardRetries"},
	},
	{
		name: "device-wait-not-cancellable", why: "the native device's wait for the coordinator ignores Ctrl-C (its context)",
		file: "cmd/device/retry.go",
		old:  "case <-ctx.Done():\n\t\t\tt.Stop()",
		new:  "case <-(chan struct{})(nil):\n\t\t\tt.Stop()",
		pkgs: []string{"./cmd/device/", "-run", "FetchShardRetries"},
	},
	{
		name: "dashboard-keeps-wrong-teacher-secret", why: "the dashboard keeps sending a wrong teacher secret (every poll a guess; the link never works read-only)",
		file: "coordinator/site/dashboard.js",
		old:  "      teacherSecret = \"\";\n      sessionStorage.removeItem(\"bfl-teacher\");",
		new:  "      sessionStorage.removeItem(\"bfl-teacher\");",
		pkgs: []string{"./e2e/", "-run", "TestWrongTeacherLink"},
	},
	{
		name: "plan-warnings-template", why: "the plan warnings read the template's plan, not the lesson Start sized (\"8 devices, fewer than the cohort m = 10\" after Start sized it to 8)",
		file: "coordinator/status.go",
		old:  "a := view.Activity{Session: c.sess, MinDevices: c.minDevices}",
		new:  "a := view.Activity{Session: c.cfg.Session, MinDevices: c.minDevices}",
		pkgs: []string{"./coordinator/", "-run", "NoticesFollowTheLesson"},
	},
	{
		name: "plan-warnings-in-lobby", why: "the plan warnings speak in the lobby (\"rounds run with 0\" before anyone joined)",
		file: "coordinator/api/warnings.go",
		old:  "if in.Finished || in.Lobby || left <= 0 {",
		new:  "if in.Finished || left <= 0 {",
		pkgs: []string{"./coordinator/api/", "-run", "PlanWarnings"},
	},
	{
		name: "lesson-time-from-lobby", why: "the lesson's time counts from the store's first use (the lobby included), not from Start",
		file: "coordinator/api/projector.go",
		old:  "start := life.Started\n",
		new:  "start, _ := st.SessionStart(now)\n",
		pkgs: []string{"./coordinator/", "-run", "NoticesFollowTheLesson"},
	},
	{
		name: "dashboard-shared-one-figure", why: "the dashboard's privacy table gives a shared-noise session one figure (the promise), not the floor a device's own noise alone keeps",
		file: "coordinator/site/dashboard.js",
		old:  "      : p.shared ? \"ε at most \" + p.promise_text + \" if the other devices are real; ε at most \"",
		new:  "      : false ? \"ε at most \" + p.promise_text + \" if the other devices are real; ε at most \"",
		pkgs: []string{"./e2e/", "-run", "TestSharedNoiseEveryEngine/chromium"},
	},
	{
		name: "dashboard-ticks-two-decimals", why: "the projector's y ticks print two decimals whatever their step (the loss axis read 2.27 five times)",
		file: "coordinator/site/dashboard.js",
		old:  "return {ticks, decimals: Math.max(0, -Math.floor(Math.log10(step) + 1e-9))};",
		new:  "return {ticks, decimals: 2};",
		pkgs: []string{"./e2e/", "-run", "TestDashboardLesson"},
	},
	{
		name: "dashboard-empty-chart-box", why: "a chart without data is an empty box (no sentence)",
		file: "coordinator/site/dashboard.js",
		old:  "if (pts.length === 0) { emptyNote(canvas, empty || \"Nothing to draw yet.\"); return; }",
		new:  "if (pts.length === 0) { canvasCtx(canvas); return; }",
		pkgs: []string{"./e2e/", "-run", "TestDashboardLesson"},
	},
	{
		name: "dashboard-qr-on-loopback", why: "the projector shows the QR code of a localhost address no phone can use, not the instruction",
		file: "coordinator/site/dashboard.js",
		old:  "const local = !!j.loopback_only;",
		new:  "const local = false;",
		pkgs: []string{"./e2e/", "-run", "TestDashboardLesson"},
	},
	{
		name: "dashboard-taskform-below-screen", why: "the teacher's open task form does not scroll in the card's room: at 1280x720 it runs below the screen and its button cannot be reached",
		file: "coordinator/site/dashboard.css",
		old:  ".taskform[open] { flex:1 1 0; min-height:8rem; overflow:auto; }",
		new:  ".taskform[open] { }",
		pkgs: []string{"./e2e/", "-run", "TestTaskFormEngines/chromium"},
	},
	{
		name: "dashboard-taskform-fields-overflow", why: "the task form's fields do not shrink: each column's Remove button is drawn outside the card",
		file: "coordinator/site/dashboard.css",
		old:  "grid-template-columns:minmax(0,1fr) minmax(0,2fr) auto minmax(0,2fr) auto;",
		new:  "grid-template-columns:1fr 2fr auto 2fr auto;",
		pkgs: []string{"./e2e/", "-run", "TestTaskFormEngines/chromium"},
	},
	{
		name: "dashboard-class-picture-misaligned", why: "the class pictures are cut from the weights without the bias (class c's picture drawn from the wrong weights)",
		file: "coordinator/site/dashboard.js",
		old:  "w: W.slice(c * (F + 1), c * (F + 1) + F)",
		new:  "w: W.slice(c * F, c * F + F)",
		pkgs: []string{"./e2e/", "-run", "TestDashboardLesson"},
	},
	{
		name: "dashboard-mlp-weakest-units", why: "for the MLP the projector draws the first layer's weakest units, not the strongest",
		file: "coordinator/site/dashboard.js",
		old:  "units.sort((a, b) => b.n - a.n);",
		new:  "units.sort((a, b) => a.n - b.n);",
		pkgs: []string{"./e2e/", "-run", "TestDashboardMLP"},
	},
	{
		name: "dashboard-feature-weights-as-pixels", why: "the projector draws a feature model's 3,969 weights per class as 63 x 63 pictures, captioned as pixels",
		file: "coordinator/site/dashboard.js",
		old:  "  if (m.session && m.session.transform) {\n",
		new:  "  if (false) {\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserFeatureSession"},
	},
	{
		name: "dashboard-jargon-outside-details", why: "the plan's symbols (clipping S, minibatch b) show on the projector outside Details",
		file: "coordinator/site/dashboard.js",
		old:  "    [\"devices that helped\", sum.participants ?? \"–\"],\n",
		new:  "    [\"devices that helped\", sum.participants ?? \"–\"],\n    [\"clipping S · minibatch b\", ss.clip + \" · \" + ss.batch],\n",
		pkgs: []string{"./e2e/", "-run", "TestDashboardLesson"},
	},
	{
		name: "device-nickname-retried", why: "the device runtime treats a refused nickname as a lost connection and knocks again with it forever",
		file: "device/runtime.go",
		old:  "case wire.CodeNickname:",
		new:  "case \"not-nickname\":",
		pkgs: []string{"./coordinator/", "-run", "LookalikeNicknames"},
	},
	{
		name: "removed-hello-accepted", why: "the hello of a device the teacher removed is accepted (it rejoins the session)",
		file: "coordinator/admit.go",
		old:  "if a.removed[id] {",
		new:  "if false && a.removed[id] {",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
	{
		name: "removed-device-probed", why: "a device the teacher removed can still be asked (as a probe once it missed rounds) while its connection closes",
		file: "coordinator/roster/cohort.go",
		old:  "return d.Conn != nil && d.Round == 0 && !d.Left && !d.Removed\n",
		new:  "return d.Conn != nil && d.Round == 0 && !d.Left\n",
		pkgs: []string{"./coordinator/roster/", "-run", "TestWhoMayBeAsked"},
	},
	{
		name: "removal-not-persisted", why: "a removal is kept in memory only (a restart lets the removed device back in)",
		file: "coordinator/remove.go",
		old:  "if err := c.store.MarkRemoved(id); err != nil {",
		new:  "if err := error(nil); err != nil {",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
	{
		name: "removal-half-included", why: "a device removed while the open round holds its update is told \"excluded\" but its update stays in the round's sum",
		file: "coordinator/remove.go",
		old:  "\t\tif u != nil {\n\t\t\tdelete(or.updates, id)\n\t\t\tif u.vec != nil {\n\t\t\t\tc.in.vecs.Put(u.vec)\n\t\t\t}\n\t\t}\n\t\tdelete(or.cohort, id)\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "RemoveMidRound"},
	},
	{
		name: "watched-payload-flipped", why: "watching a release for the page's \"what your phone sent\" changes the update that is sent",
		file: "device/watch.go",
		old:  "\t\tw.watch(pr)\n\t}\n\treturn u, nil\n",
		new:  "\t\tw.watch(pr)\n\t}\n\tu.Payload[len(u.Payload)-1] ^= 1\n\treturn u, nil\n",
		pkgs: []string{"./device/", "-run", "WatchPrepared"},
	},
	{
		name: "progress-figures-other-delta", why: "the meter read from figures derived once (plan.Budget.ProgressOf, the page's route) takes figures derived at another delta than the owner's",
		file: "shared/plan/figures.go",
		old:  "if f.Delta != b.Delta {",
		new:  "if false {",
		pkgs: []string{"./shared/plan/", "-run", "TestBudgetProgress"},
	},
	{
		name: "progress-ignores-before", why: "the meter's (and the pre-join check's) most for a session leaves out what the owner's data spent before",
		file: "shared/plan/figures.go",
		old:  "worst, err := before.Add(f.WorstSpent)",
		new:  "worst, err := privacy.Spent{}.Add(f.WorstSpent)",
		pkgs: []string{"./shared/plan/"},
	},
	{
		name: "trusted-meter-nc-words", why: "in the trusted mode the privacy meter says the nc words (epsilon against everyone, the server included; \"Nothing sent yet\" while nothing bounds the server)",
		file: "wasm/ui/state.go",
		old:  "\tcase plan.ProtectionServer:\n\t\treturn serverMeter(joined, pr, budget, delta)\n",
		new:  "",
		pkgs: []string{"./wasm/ui/", "-run", "TestPrivacyWordsEveryMode"},
	},
	{
		name: "trusted-page-nc-words", why: "the page takes a trusted session for one whose devices add the noise: meter, details, status line and \"what your phone sent\" say the nc words",
		file: "wasm/app.go",
		old:  "Mode: mode, Protection: f.Protection(), Model: p.Model,",
		new:  "Mode: mode, Protection: plan.ProtectionDevice, Model: p.Model,",
		pkgs: []string{"./e2e/", "-run", "TestPrivacyWordsEveryMode/chromium/trusted"},
	},
	{
		name: "trusted-page-figure-zero", why: "a trusted page's meter counts nothing for the rounds published (its device charges no ledger): epsilon 0 for the whole lesson",
		file: "wasm/train.go",
		old:  "if ledger, err = f.Published(n); err != nil {",
		new:  "if _, err = f.Published(n); err != nil {",
		pkgs: []string{"./e2e/", "-run", "TestPrivacyWordsEveryMode/chromium/trusted"},
	},
	{
		name: "published-counts-one-round", why: "a trusted session's figure against everyone but the server counts one published round whatever their number",
		file: "shared/plan/figures.go",
		old:  "for range min(max(n, 0), f.WorstReleases) {",
		new:  "for range min(max(n, 0), 1) {",
		pkgs: []string{"./shared/plan/"},
	},
	{
		name: "meter-never-over", why: "the privacy meter stays calm when the spent figure passes the lesson's most",
		file: "wasm/ui/state.go",
		old:  "\tif pr.Spent > pr.Most*(1+1e-9) {\n\t\tm.Class = \"meter-over\"\n\t}\n",
		new:  "",
		pkgs: []string{"./wasm/ui/", "-run", "PrivacyMeter"},
	},
	{
		name: "meter-share-under", why: "the privacy meter's fill (plan.Progress.Share) under-reports the ledger: 90% of the share of the lesson's zCDP rho it holds",
		file: "shared/plan/figures.go",
		old:  "share, planned := ledger.Rho/f.WorstRho, f.PlannedShare(releases)",
		new:  "share, planned := 0.9*ledger.Rho/f.WorstRho, f.PlannedShare(releases)",
		pkgs: []string{"./shared/plan/", "-run", "Share"},
	},
	{
		name: "meter-share-in-epsilon", why: "the privacy meter fills by epsilon over the lesson's most instead of the ledger's share of the lesson's zCDP rho (a fill that is not the ledger's)",
		file: "wasm/ui/state.go",
		old:  "m := Reading{Class: \"meter-calm\", Fraction: math.Min(1, math.Max(0, pr.Share))}",
		new:  "m := Reading{Class: \"meter-calm\", Fraction: math.Min(1, math.Max(0, pr.Spent/pr.Most))}",
		pkgs: []string{"./wasm/ui/", "-run", "PrivacyMeter"},
	},
	{
		name: "meter-says-on-plan-off-plan", why: "the meter says its fill is as planned when the ledger holds more than the plan spends in as many updates",
		file: "shared/plan/figures.go",
		old:  "OnPlan: share <= planned*(1+ShareTolerance), Decreasing: decreasing,",
		new:  "OnPlan: true, Decreasing: decreasing,",
		pkgs: []string{"./shared/plan/", "-run", "Share"},
	},
	{
		name: "meter-share-over-plan-hidden", why: "the meter's words show 100% of the lesson's privacy for a ledger up to 5% over the plan",
		file: "wasm/ui/state.go",
		old:  "case share > 1+plan.ShareTolerance:",
		new:  "case share > 1.05:",
		pkgs: []string{"./wasm/ui/", "-run", "ShareWords"},
	},
	{
		name: "teacher-may-pick-trusted", why: "a teacher's new session may move to any way of learning (the trusted server, a non-private reference), not only between the two in which every page adds noise",
		file: "shared/plan/session.go",
		old:  "if !slices.Contains(TeacherAlgorithms(), s.Algorithm) || !slices.Contains(TeacherAlgorithms(), alg) {",
		new:  "if !slices.Contains(TeacherAlgorithms(), s.Algorithm) {",
		pkgs: []string{"./shared/plan/", "-run", "WithAlgorithm"},
	},
	{
		name: "secagg-late-attempt-refused", why: "a slow device's message of a failed attempt of the round, arriving in the next attempt, closes its connection and takes it out of the attempt it answers",
		file: "coordinator/secround/secround.go",
		old:  "return h.Session == session && h.Round < current",
		new:  "return h.Session == session && h.Round < current && false",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseLateAttempt"},
	},
	{
		name: "edge-secagg-other-connection", why: "an edge relays a device's secure aggregation frame under another connection's number (the last it admitted): the frame would speak for another device",
		file: "coordinator/edge/secagg.go",
		old:  "&bus.Header{Epoch: r.epoch, Seq: cn.Seq, ID: cn.ID, T: f.T}",
		new:  "&bus.Header{Epoch: r.epoch, Seq: e.seq, ID: cn.ID, T: f.T}",
		pkgs: []string{"./coordinator/edge/", "-run", "TestEdgeRelaysSecAgg"},
	},
	{
		name: "edge-secagg-down-unchecked", why: "an edge relays to a device whatever the bus carries as a secure aggregation frame, without decoding it or checking its round",
		file: "coordinator/edge/secagg.go",
		old:  "\tif err != nil {\n\t\te.link.errors.Add(1)\n\t\te.front.Log.Warn(\"secure aggregation frame from the session dropped\"",
		new:  "\tif false {\n\t\te.link.errors.Add(1)\n\t\te.front.Log.Warn(\"secure aggregation frame from the session dropped\"",
		pkgs: []string{"./coordinator/edge/", "-run", "TestEdgeRelaysSecAgg"},
	},
	{
		name: "cluster-secagg-any-edge", why: "the session node takes a relayed secure aggregation frame for the connection of that number on any edge, not on the edge whose subject it came on: an edge speaks for another edge's device",
		file: "coordinator/sessionnode/node.go",
		old:  "\tl := n.link(edge, h.Seq)\n\tif l == nil || l.id != h.ID {",
		new:  "\tl := func() *remoteLink {\n\t\tn.mu.Lock()\n\t\tdefer n.mu.Unlock()\n\t\tfor k, l := range n.links {\n\t\t\tif k.seq == h.Seq {\n\t\t\t\treturn l\n\t\t\t}\n\t\t}\n\t\treturn nil\n\t}()\n\tif l == nil || l.id != h.ID {",
		pkgs: []string{"./coordinator/", "-run", "TestClusterSharedNoise$"},
	},
	{
		name: "teacher-choice-off-ignored", why: "an operator's -teacher-choice=false does not stop a teacher switching the next lobby to shared noise",
		file: "coordinator/sessions/host.go",
		old:  "	case h.cfg.NoTeacherChoice:\n		return fmt.Errorf(",
		new:  "	case false:\n		return fmt.Errorf(",
		pkgs: []string{"./coordinator/", "-run", "TestHostTeacherChoice"},
	},
	{
		name: "teacher-choice-off-still-offered", why: "with the way of learning fixed by the operator, the teacher's status still offers the choice (the dashboard shows the form)",
		file: "coordinator/sessions/host.go",
		old:  "	if h.cfg.NoTeacherChoice {\n		return nil, nil\n	}",
		new:  "	if false {\n		return nil, nil\n	}",
		pkgs: []string{"./coordinator/", "-run", "TestHostTeacherChoice"},
	},
	{
		name: "phone-sent-shows-clean", why: "the page's picture of what was sent shows the clean update instead of the frame sent",
		file: "wasm/train.go",
		old:  "t.sent = ui.Sent{Round: pr.T, Label: label, Clean: clean, Noisy: noisy}",
		new:  "t.sent = ui.Sent{Round: pr.T, Label: label, Clean: clean, Noisy: clean}",
		pkgs: []string{"./e2e/", "-run", "TestPhoneScreens"},
	},
	{
		name: "reload-meter-zero", why: "after a reload the training screen shows before the saved ledger is read (the meter says nothing was sent)",
		file: "wasm/train.go",
		old:  "\t\tshowPrivacy(s, pr)\n\t\ts.Train.Joined = joined\n\t\ts.Data.Used = min(st.Cursor, s.Data.Count)\n\t})",
		new:  "\t\tshowPrivacy(s, plan.Progress{Most: pr.Most})\n\t\ts.Train.Joined = joined\n\t\ts.Data.Used = min(st.Cursor, s.Data.Count)\n\t})",
		pkgs: []string{"./e2e/", "-run", "TestPhoneScreens"},
	},
	{
		name: "stopped-shows-training", why: "the runtime's last word moves the student back to the training screen (after \"I'm done\" or \"Leave and delete my pictures\")",
		file: "wasm/ui/stopped.go",
		old:  "\ts.Train.Lobby = false // no longer waiting for the teacher\n",
		new:  "\ts.Train.Lobby = false // no longer waiting for the teacher\n\ts.Screen = ScreenTrain\n",
		pkgs: []string{"./wasm/ui/", "-run", "Stopped"},
	},
	{
		name: "owner-ledger-unlocked", why: "the page reserves in the owner's ledger with a read and a write in two transactions and no lock (two tabs can both pass on the same old ledger)",
		file: "wasm/owner/owner.go",
		old:  "\terr := idb.Exclusive(ctx, ownerLock, rmw)\n\tif errors.Is(err, idb.ErrNoLocks) {\n\t\terr = rmw()\n\t}\n",
		new: "\t_ = rmw\n\tb, err := o.st.Get(ctx, keyOwnerLedger)\n\tif err == nil || errors.Is(err, idb.ErrNotFound) {\n\t\tvar l local.OwnerLedger\n" +
			"\t\tif l, err = local.ParseOwnerLedger(b); err == nil {\n\t\t\tif err = f(&l); err != nil {\n\t\t\t\tferr = err\n" +
			"\t\t\t} else if b, err = l.Marshal(); err == nil {\n\t\t\t\terr = o.st.Put(ctx, map[string][]byte{keyOwnerLedger: b})\n\t\t\t}\n\t\t}\n\t}\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserOwnerLedgerTwoTabs/web_locks"},
	},
	{
		name: "owner-ledger-fallback-unsafe", why: "without Web Locks the page reserves in the owner's ledger with a read and a write in two transactions (two tabs can both pass on the same old ledger)",
		file: "wasm/owner/owner.go",
		old:  "\tif errors.Is(err, idb.ErrNoLocks) {\n\t\terr = rmw()\n\t}\n",
		new: "\tif errors.Is(err, idb.ErrNoLocks) {\n\t\tvar b []byte\n\t\tb, err = o.st.Get(ctx, keyOwnerLedger)\n\t\tif err == nil || errors.Is(err, idb.ErrNotFound) {\n\t\t\tvar l local.OwnerLedger\n" +
			"\t\t\tif l, err = local.ParseOwnerLedger(b); err == nil {\n\t\t\t\tif err = f(&l); err != nil {\n\t\t\t\t\tferr = err\n" +
			"\t\t\t\t} else if b, err = l.Marshal(); err == nil {\n\t\t\t\t\terr = o.st.Put(ctx, map[string][]byte{keyOwnerLedger: b})\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserOwnerLedgerTwoTabs/no_web_locks"},
	},
	{
		name: "rejection-unrecorded", why: "a rejected update is not recorded against its device (the teacher's view does not flag it)",
		file: "coordinator/intake.go",
		old:  "\td.Standing.Refused()\n\td.RejectWhy = why\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
	{
		name: "trusted-noise-0.9", why: "the trusted server's discrete noise is calibrated to 0.9 of TrustedSigma",
		file: "shared/optim/server.go",
		old:  "if s.sigmaZ, err = mechanism.DiscreteSigma(algo.TrustedSigma(p), sens, s.gstep, d); err != nil {",
		new:  "if s.sigmaZ, err = mechanism.DiscreteSigma(0.9*algo.TrustedSigma(p), sens, s.gstep, d); err != nil {",
		pkgs: []string{"./shared/optim/", "-run", "TestTrustedNoiseIsDiscrete"},
	},
	{
		name: "trusted-noise-continuous", why: "the trusted server adds continuous float64 Gaussian noise to q_t instead of discrete noise on the grid",
		file: "shared/optim/server.go",
		old:  "mechanism.FromGrid(s.noise, s.qgrid, s.gstep)",
		new:  "s.stream.FillNormal(s.noise, s.gstep*float64(s.sigmaZ)); for i := range s.noise { s.noise[i] += s.q[i] }",
		pkgs: []string{"./shared/optim/", "-run", "TestTrustedNoiseIsDiscrete"},
	},
	{
		name: "scatter-normalisation-reads-others", why: "the features' normalisation carries a running mean over the pictures transformed before (it reads other pictures' data, which would have to be charged)",
		file: "shared/scatter/scatter.go",
		old:  "mean /= float64(per)",
		new:  "mean /= float64(per); t.carry[g] += mean; mean = t.carry[g] / 2",
		more: []edit{{"x, u1, y, u2 []complex128\n}", "x, u1, y, u2 []complex128\n\tcarry [64]float64\n}"}},
		pkgs: []string{"./shared/scatter/", "-run", "TestOnlyItsOwnImage"},
	},
	{
		name: "features-read-other-pictures", why: "a device's features of one picture depend on another of its pictures (a set-level adjustment): replacing one sample then moves every sample of the batch, past the per-sample clipping the noise is calibrated to",
		file: "shared/plan/features.go",
		old:  "return out.Samples, nil",
		new:  "for i := range out.Samples { out.Samples[i].X[0] -= out.Samples[len(out.Samples)-1].X[0] / 2 }; return out.Samples, nil",
		pkgs: []string{"./shared/plan/", "-run", "TestFeaturesAreScatter"},
	},
	{
		name: "device-features-skipped", why: "the device trains on its raw pictures while the session's model reads features (the session's shape no longer says what the device computes)",
		file: "device/runtime.go",
		old:  "if rt.feat != nil {\n\t\tfor i := range batch {",
		new:  "if false && rt.feat != nil {\n\t\tfor i := range batch {",
		pkgs: []string{"./device/", "-run", "TestRuntimeTrainsOnFeatures"},
	},
	{
		name: "session-features-unchecked", why: "a session's transform is not checked against its announced Features (a coordinator could announce one shape and have devices compute another)",
		file: "shared/plan/features.go",
		old:  "case s.Features != f.Dim():",
		new:  "case false && s.Features != f.Dim():",
		pkgs: []string{"./shared/plan/", "-run", "TestSessionFeatures"},
	},
	{
		name: "task-keeps-transform", why: "a teacher's task set at Start keeps the template's picture transform (its devices, holding rows, would be told to compute picture features)",
		file: "shared/plan/session.go",
		old:  "s.Transform = \"\" // the features of pictures",
		new:  "_ = s.Transform // the features of pictures",
		pkgs: []string{"./shared/plan/", "-run", "TestWithTaskDropsSignalBound"},
	},
	{
		name: "wire-transform-unbounded", why: "a session's transform name from the network is not bounded (wire.MaxTransformLen)",
		file: "shared/wire/control.go",
		old:  "case len(p.Transform) > MaxTransformLen:",
		new:  "case false && len(p.Transform) > MaxTransformLen:",
		pkgs: []string{"./shared/plan/", "-run", "TestSessionFeatures"},
	},
	{
		name: "trusted-compressor-allowed", why: "a trusted session accepts a sparsifying compressor on its clean updates (a sample then moves a message far more than the noise is calibrated to)",
		file: "shared/optim/algo/validate.go",
		old:  "} else if k.Noise == NoiseServer && !denseSpec(spec) {",
		new:  "} else if false && k.Noise == NoiseServer && !denseSpec(spec) {",
		pkgs: []string{"./shared/optim/algo/", "-run", "TestTrustedRefusesCompressors"},
	},
	{
		name: "device-data-unchecked", why: "the device sets a session up without checking that its data fits it (rows of another task, pictures in a row session)",
		file: "device/runtime.go",
		old:  "feat, err := checkData(s, rt.cfg.Task, rt.cfg.Data)\n\tif err != nil {\n",
		new:  "feat, err := checkData(s, rt.cfg.Task, rt.cfg.Data)\n\tif false && err != nil {\n",
		pkgs: []string{"./device/", "-run", "TestRuntimeRefusesOtherTask"},
	},
	{
		name: "device-late-data-unchecked", why: "samples arriving while the device runs are added without checking that they fit the session",
		file: "device/runtime.go",
		old:  "\t\tif _, err := checkData(*s, rt.cfg.Task, samples); err != nil {\n",
		new:  "\t\tif _, err := checkData(*s, rt.cfg.Task, samples); false && err != nil {\n",
		pkgs: []string{"./device/", "-run", "TestAddDataWhileRunning"},
	},
	{
		name: "device-late-data-dropped", why: "samples arriving while the device runs are not used: it leaves when its first data is used up",
		file: "device/runtime.go",
		old:  "\trt.cfg.Data = d\n",
		new:  "\t_ = d\n",
		pkgs: []string{"./device/", "-run", "TestAddDataWhileRunning"},
	},
	{
		name: "demo-range-sign-accepted", why: "a demo chunk's parameter is read without checking it is decimal digits only (+3, -1, 0x1 reach strconv)",
		file: "coordinator/shards/chunk.go",
		old:  "\t\tif c < '0' || c > '9' {\n",
		new:  "\t\tif false && (c < '0' || c > '9') {\n",
		pkgs: []string{"./coordinator/shards/", "-run", "TestParseRange"},
	},
	{
		name: "demo-range-end-served", why: "a demo chunk that starts at the shard's end is not refused as the end (416)",
		file: "coordinator/shards/chunk.go",
		old:  "\tif from >= n {\n",
		new:  "\tif from > n {\n",
		pkgs: []string{"./coordinator/shards/", "-run", "TestParseRange"},
	},
	{
		name: "demo-chunk-gives-up", why: "the page stops fetching the rest of the example pictures after one failed fetch (the device runs out and leaves)",
		file: "wasm/demo.go",
		old:  "\t\tpause, retry = retry, min(2*retry, demoRetryMax)\n",
		new:  "\t\treturn\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserDemoChunks"},
	},
	{
		name: "demo-shard-record-cut-line-kept", why: "a demo shard size cut short by a crash is replayed as a shard of that size (or the next record is glued onto it)",
		file: "cmd/coordinator/session.go",
		old:  "whole := bytes.LastIndexByte(b, '\\n') + 1; whole < len(b) {",
		new:  "whole := bytes.LastIndexByte(b, '\\n') + 1; false && whole < len(b) {",
		pkgs: []string{"./cmd/coordinator/", "-run", "TestShardLog"},
	},
	{
		name: "demo-shards-not-replayed", why: "a restarted coordinator makes new demo shards instead of the ones it handed out (a page's later chunks come from another shard)",
		file: "coordinator/shards/shards.go",
		old:  "\t\tset.parts = append(set.parts, part)\n",
		new:  "\t\t_ = part\n",
		pkgs: []string{"./coordinator/shards/", "-run", "TestReplay"},
	},
	{
		name: "device-insert-among-used", why: "samples arriving while the device runs may be put before the cursor (used samples move, one is used twice)",
		file: "device/runtime.go",
		old:  "\tif at < rt.st.Cursor || at > len(rt.cfg.Data) {\n",
		new:  "\tif at > len(rt.cfg.Data) {\n",
		pkgs: []string{"./device/", "-run", "TestAddDataWhileRunning"},
	},
	{
		name: "device-other-task-accepted", why: "a device holding rows of one task trains in a session of another task of the same shape",
		file: "device/runtime.go",
		old:  "case st != nil && !reflect.DeepEqual(st, d):",
		new:  "case false && st != nil && !reflect.DeepEqual(st, d):",
		pkgs: []string{"./device/", "-run", "TestCheckDataTask"},
	},
	{
		name: "device-session-task-unchecked", why: "the owner's check accepts a session whose task does not match the shape it announces",
		file: "device/runtime.go",
		old:  "\tif _, err := plan.SessionTask(s); err != nil {\n\t\treturn fmt.Errorf(\"%w: %w\", ErrRefused, err)",
		new:  "\tif _, err := plan.SessionTask(s); false && err != nil {\n\t\treturn fmt.Errorf(\"%w: %w\", ErrRefused, err)",
		pkgs: []string{"./device/", "-run", "TestCheckDataTask"},
	},
	{
		name: "page-row-unchecked", why: "the page hands on a typed row without checking it against the task (a value out of range, an unknown choice)",
		file: "wasm/ui/rows.go",
		old:  "if _, err := d.Encode(vals); err != nil {",
		new:  "if _, err := d.Encode(vals); false && err != nil {",
		pkgs: []string{"./wasm/ui/", "-run", "TestAddRowChecks"},
	},
	{
		name: "bridge-row-unbounded", why: "the worker accepts a row message with any number of values",
		file: "wasm/bridge/bridge.go",
		old:  "if len(v) < 1 || len(v) > task.MaxFeatures {",
		new:  "if len(v) < 1 {",
		pkgs: []string{"./wasm/bridge/", "-run", "TestDecodeToWorker"},
	},
	{
		name: "native-refused-rows-silent", why: "a native device leaves out the lines of its -rows file that do not fit the task without saying which",
		file: "cmd/device/rows.go",
		old:  "for _, e := range refused {",
		new:  "for _, e := range refused[:0] {",
		pkgs: []string{"./e2e/", "-run", "TestNativeRowsDevice"},
	},
	{
		name: "session-task-shape-unchecked", why: "a session whose task encodes rows to another dimension than it announces is read anyway (a device would encode its rows to a shape the model and the update bound were not sized for)",
		file: "shared/plan/session.go",
		old:  "case s.Features != d.Dim():",
		new:  "case false && s.Features != d.Dim():",
		pkgs: []string{"./shared/plan/", "-run", "TestSessionTask"},
	},
	{
		name: "teacher-task-unchecked", why: "a teacher's task definition or way of learning is not checked before the current lobby is ended (a request that cannot make a session would end the class's lobby)",
		file: "coordinator/sessions/host.go",
		old:  "\tcfg, err := h.sessionConfig(req)\n\tif err != nil {\n\t\treturn NewSessionInfo{}, err\n\t}\n\th.newMu.Lock()",
		new:  "\tcfg, _ := h.sessionConfig(req)\n\th.newMu.Lock()",
		pkgs: []string{"./coordinator/", "-run", "TestHostTeacher(Task|Algorithm)"},
	},
	{
		name: "report-partial-section-written", why: "the reproduction report rewrites a section with some of its runs on disk: a partial rerun replaces finished figures by \"not run\" cells",
		file: "cmd/flresults/report.go",
		old:  "func (s section) complete() bool { return s.hits == s.reads }",
		new:  "func (s section) complete() bool { return s.hits > 0 || s.reads == 0 }",
		pkgs: []string{"./cmd/flresults/", "-run", "TestReport"},
	},
	{
		name: "report-sweeps-not-counted", why: "a report section shows the choices of sweeps whose runs are not all on disk and is rewritten anyway: old choices beside a new sweep table, or a section emptied",
		file: "cmd/flresults/report.go",
		old:  "\t\ts.reads += t.reads\n\t\ts.hits += t.hits\n",
		new:  "\t\t_ = t\n",
		pkgs: []string{"./cmd/flresults/", "-run", "TestReport"},
	},
	{
		name: "secagg-self-seed-4-bytes", why: "a secure aggregation self-mask seed has 4 random bytes and 28 zero bytes (a 32-bit key, the mistake of flwrlabs/flower#7522)",
		file: "shared/secagg/client.go",
		old:  "rand.Read(c.selfSeed[:])",
		new:  "rand.Read(c.selfSeed[:4])",
		pkgs: []string{"./shared/secagg/", "-run", "TestSeedEntropy"},
	},
	{
		name: "secagg-pairwise-seed-folded", why: "a pairwise mask seed keeps 4 of its 32 derived bytes (sums stay exact: only the seed check sees it)",
		file: "shared/secagg/crypto.go",
		old:  "copy(seed[:], key)",
		new:  "copy(seed[:4], key)",
		pkgs: []string{"./shared/secagg/", "-run", "TestSeedEntropy"},
	},
	{
		name: "secagg-prg-key-folded", why: "the mask stream is keyed with 4 bytes of its 32-byte seed",
		file: "shared/secagg/crypto.go",
		old:  "prg := mrand.NewChaCha8(seed)",
		new:  "prg := mrand.NewChaCha8([SeedSize]byte(append(seed[:4:4], make([]byte, SeedSize-4)...)))",
		pkgs: []string{"./shared/secagg/", "-run", "TestSeedEntropy"},
	},
	{
		name: "secagg-consistency-unbound", why: "the consistency signature does not cover the survivor set: a server shows X alive to some clients and dropped to others and collects both of X's secrets",
		file: "shared/secagg/crypto.go",
		old:  "\tb = appendIDs(b, uint32(len(survivors)))\n\treturn appendIDs(b, survivors...)",
		new:  "\treturn b",
		pkgs: []string{"./shared/secagg/", "-run", "TestSplitView"},
	},
	{
		name: "secagg-unmask-signatures-unchecked", why: "a client reveals shares without verifying the consistency signatures it is shown",
		file: "shared/secagg/client.go",
		old:  "if !verify(c.dir[s.From], msg, s.Sig) {",
		new:  "if false && !verify(c.dir[s.From], msg, s.Sig) {",
		pkgs: []string{"./shared/secagg/", "-run", "TestSplitView|TestTampered"},
	},
	{
		name: "secagg-unmask-one-signature", why: "a client reveals shares after one consistency signature instead of t",
		file: "shared/secagg/client.go",
		old:  "if valid < c.p.Threshold {",
		new:  "if valid < 1 {",
		pkgs: []string{"./shared/secagg/", "-run", "TestBelowThreshold|TestSplitView"},
	},
	{
		name: "secagg-reveal-both-shares", why: "a client reveals the masking key shares of the survivors too: the server removes every mask of a survivor's input",
		file: "shared/secagg/client.go",
		old:  "for _, v := range dropped {\n\t\tout.SShares",
		new:  "for _, v := range c.u2 {\n\t\tout.SShares",
		pkgs: []string{"./shared/secagg/", "-run", "TestCuriousServer"},
	},
	{
		name: "secagg-no-pairwise-masks", why: "a client masks its input with its self mask only, which the server reconstructs (sums stay exact: only the curious-server harness sees it)",
		file: "shared/secagg/client.go",
		old:  "for _, v := range u2 {\n\t\tif v == c.id {",
		new:  "for _, v := range u2[:0] {\n\t\tif v == c.id {",
		pkgs: []string{"./shared/secagg/", "-run", "TestCuriousServer"},
	},
	{
		name: "secagg-server-threshold-1", why: "the server goes on with fewer than t clients at every step",
		file: "shared/secagg/server.go",
		old:  "if n < s.p.Threshold {",
		new:  "if n < 1 {",
		pkgs: []string{"./shared/secagg/", "-run", "TestBelowThreshold"},
	},
	{
		name: "secagg-dropout-correction-sign", why: "the server removes a dropped client's pairwise masks with the wrong sign",
		file: "shared/secagg/server.go",
		old:  "addMask(acc, seed, s.k, v < u)",
		new:  "addMask(acc, seed, s.k, v > u)",
		pkgs: []string{"./shared/secagg/", "-run", "TestDropouts"},
	},
	{
		name: "secagg-sum-shares-of-u3", why: "the server interpolates from the first t survivors rather than the first t clients that answered the unmasking",
		file: "shared/secagg/server.go",
		old:  "u5 := slices.Sorted(maps.Keys(s.resp))[:s.p.Threshold]",
		new:  "u5 := s.u3[:s.p.Threshold]",
		pkgs: []string{"./shared/secagg/", "-run", "TestDropouts"},
	},
	{
		name: "secagg-ring-unsigned-bound", why: "the 32-bit ring is chosen while n*maxAbs fits 32 unsigned bits: a negative or large sum wraps",
		file: "shared/secagg/params.go",
		old:  "case hi == 0 && lo <= math.MaxInt32:",
		new:  "case hi == 0 && lo <= math.MaxUint32:",
		pkgs: []string{"./shared/secagg/", "-run", "TestRingBits|TestHonestSum"},
	},
	{
		name: "secagg-decode-half", why: "a negative sum is decoded from the ring with 2^(k-1) instead of 2^k",
		file: "shared/secagg/params.go",
		old:  "return int64(r) - 1<<uint(k)",
		new:  "return int64(r) - 1<<uint(k-1)",
		pkgs: []string{"./shared/secagg/", "-run", "TestHonestSum"},
	},
	{
		name: "secagg-round-not-checked", why: "a client takes a message of another round of the session",
		file: "shared/secagg/client.go",
		old:  "if h != c.h {",
		new:  "if h.Session != c.h.Session {",
		pkgs: []string{"./shared/secagg/", "-run", "TestReplay"},
	},
	{
		name: "secagg-bad-share-skipped", why: "a client skips a share it cannot decrypt instead of aborting the round",
		file: "shared/secagg/client.go",
		old:  "b, sk, err := openShares(aead, c.h, s.From, c.id, s.Ciphertext)\n\t\tif err != nil {\n\t\t\treturn nil, c.fail(err)\n\t\t}",
		new:  "b, sk, err := openShares(aead, c.h, s.From, c.id, s.Ciphertext)\n\t\tif err != nil {\n\t\t\tcontinue\n\t\t}",
		pkgs: []string{"./shared/secagg/", "-run", "TestTampered"},
	},
	{
		name: "secagg-advertisement-unchecked", why: "a client takes the listed keys without verifying their signatures (the server substitutes its own keys)",
		file: "shared/secagg/client.go",
		old:  "case !verify(pub, advertiseSigned(c.h, a), a.Sig):",
		new:  "case len(pub) == 0 && !verify(pub, advertiseSigned(c.h, a), a.Sig):",
		pkgs: []string{"./shared/secagg/", "-run", "TestTampered"},
	},
	{
		name: "secagg-decoder-id-0", why: "a decoder takes client id 0, the point where a Shamir polynomial holds its secret",
		file: "shared/secagg/messages.go",
		old:  "if r.err == nil && v == 0 {",
		new:  "if false && v == 0 {",
		pkgs: []string{"./shared/secagg/", "-run", "TestDecodeRefuses"},
	},
	{
		name: "secagg-field-unreduced", why: "the Shamir field's product drops its reduction: shares no longer give their secret back",
		file: "shared/secagg/field.go",
		old:  "a = a<<1 ^ fieldPoly&-(a>>15)",
		new:  "a = a << 1",
		pkgs: []string{"./shared/secagg/", "-run", "TestField|TestHonestSum"},
	},
	{
		name: "task-without-test-rows-evaluated", why: "a task file without test rows is evaluated on its empty test set (the accuracy of nothing, NaN, stopped the coordinator at round 1)",
		file: "cmd/coordinator/session.go",
		old:  "\t\tevaluate, evalEvery = nil, 0\n",
		new:  "\t\t_ = evalEvery\n",
		pkgs: []string{"./cmd/coordinator/", "-run", "TestTaskFileLesson"},
	},
	{
		name: "too-few-rows-leave-unexplained", why: "a device with too few samples for one round leaves without saying why: the dashboard only says it left",
		file: "device/runtime.go",
		old:  "\t\treturn short.Error()\n",
		new:  "\t\treturn \"\"\n",
		pkgs: []string{"./cmd/coordinator/", "-run", "TestTaskFileLesson"},
	},
	{
		name: "kept-file-digest-unchecked", why: "the native device trusts a kept shard or demo rows whatever their digest file says (a file changed on disk is read as data)",
		file: "cmd/device/files.go",
		old:  "case string(sum) != sha(b):",
		new:  "case false && string(sum) != sha(b):",
		pkgs: []string{"./cmd/device/", "-run", "TestDeviceRecoversDamaged"},
	},
	{
		name: "state-file-digest-unchecked", why: "the device trusts a state file whose state does not match its digest (a damaged ledger read as the device's)",
		file: "device/file.go",
		old:  "if got := digest(state); got != sum {",
		new:  "if got := digest(state); false && got != sum {",
		pkgs: []string{"./device/", "-run", "TestFileStorageChecked"},
	},
	{
		name: "shared-device-sends-unmasked", why: "a shared-noise device sends its release in the clear in place of its masked input (the coordinator sees one device's share of the noise)",
		file: "device/secagg.go",
		old:  "\tif err := c.sendSecAgg(ctx, sa.r.T, masked); err != nil {",
		new:  "\tfor i, v := range x {\n\t\tmasked.Y[i] = uint64(v) & (1<<masked.Bits - 1)\n\t}\n\tif err := c.sendSecAgg(ctx, sa.r.T, masked); err != nil {",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseDropouts"},
	},
	{
		name: "device-pending-unsaved", why: "a device sends its release without first saving it pending with its ledger charged (a device process killed after its masked input comes back without the charge and without the round)",
		file: "device/runtime.go",
		old:  "\t// Saved before sending: a crash from here on resumes with pending.\n\terr = rt.save(ctx)\n",
		new:  "\t// Saved before sending: a crash from here on resumes with pending.\n\terr = nil\n",
		pkgs: []string{"./cmd/device/", "-run", "TestSharedNoiseNativeChaos"},
	},
	{
		name: "shared-coordinator-takes-updates", why: "the coordinator of a shared-noise session takes a plain update frame (a device's release with its share of the noise, unmasked)",
		file: "coordinator/intake.go",
		old:  "\tcase c.sa != nil:\n\t\t// A shared-noise device sends only masked inputs",
		new:  "\tcase false:\n\t\t// A shared-noise device sends only masked inputs",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseRefusesUpdates"},
	},
	{
		name: "secagg-sender-unchecked", why: "the coordinator's secure aggregation takes a device's message that speaks for another device's id",
		file: "engine/secagg.go",
		old:  "\tif from != n {\n",
		new:  "\tif false && from != n {\n",
		pkgs: []string{"./engine/", "-run", "TestSecAggRoundSender"},
	},
	{
		name: "secagg-gone-waited-for", why: "a shared-noise round's next step waits, until its deadline, for a device that answered the step before and then left (a closed tab holds the class up)",
		file: "engine/secagg.go",
		old:  "\tfor n := range r.gone {\n",
		new:  "\tfor n := range map[uint32]bool{} {\n",
		pkgs: []string{"./engine/", "-run", "TestSecAggRoundDropAfterAnswer"},
	},
	{
		name: "secagg-full-advertise-waited", why: "a shared-noise round whose advertisements already fill the cohort waits, until its deadline, for the members asked beyond it (over-selected once a device missed a round), whose advertisements it would ignore",
		file: "engine/secagg.go",
		old:  "|| r.step == wire.StepAdvertise && len(r.got) >= r.a.MaxClients)",
		new:  "|| false && r.step == wire.StepAdvertise && len(r.got) >= r.a.MaxClients)",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseChaos"},
	},
	{
		name: "secagg-included-all-members", why: "a shared-noise round counts every member of its secure aggregation as included, not only those whose masked input is in the sum",
		file: "engine/secagg.go",
		old:  "\t\t\tfor _, n := range sl.Survivors {\n\t\t\t\tsend(n, sl)\n\t\t\t\tr.u3 = append(r.u3, r.ids[n])\n\t\t\t}",
		new:  "\t\t\tfor _, n := range sl.Survivors {\n\t\t\t\tsend(n, sl)\n\t\t\t}\n\t\t\tfor n := range r.ids {\n\t\t\t\tr.u3 = append(r.u3, r.ids[n])\n\t\t\t}",
		pkgs: []string{"./engine/", "-run", "TestSecAggRoundDropouts"},
	},
	{
		name: "secagg-failed-round-committed", why: "a shared-noise round whose secure aggregation fell below its threshold is committed (empty) instead of discarded",
		file: "engine/loop.go",
		old:  "\tif c.Failed != nil {",
		new:  "\tif false && c.Failed != nil {",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseBelowThreshold"},
	},
	{
		name: "secagg-ring-one-device", why: "a shared-noise session's ring is sized for one release instead of the cohort's sum (sums of 3,000 wrap a 32-bit ring)",
		file: "shared/plan/secagg.go",
		old:  "secagg.RingBits(maxAbs, a.MaxClients)",
		new:  "secagg.RingBits(maxAbs, 1)",
		pkgs: []string{"./shared/plan/", "-run", "TestSessionSecAgg"},
	},
	{
		name: "shared-grid-bound-no-noise", why: "a shared-noise session's coordinate bound leaves out the noise: honest releases overflow the ring's bound and are refused",
		file: "shared/optim/plausible/grid.go",
		old:  "lim := math.Ceil(c.e/c.step + 0.5 + c.s/c.step*c.zc)",
		new:  "lim := math.Ceil(c.e/c.step + 0.5)",
		pkgs: []string{"./shared/plan/", "-run", "TestSessionSecAgg"},
	},
	{
		name: "sumcheck-skipped", why: "the coordinator applies a shared-noise round's sum without testing it: a device that wraps the ring spoils the model",
		file: "coordinator/secround/secround.go",
		old:  "if err := engine.CheckSum(r.s.sum, sum, len(inc)); err != nil {",
		new:  "if err := engine.CheckSum(r.s.sum, sum, len(inc)); err != nil && false {",
		pkgs: []string{"./coordinator/", "-run", "TestSharedNoiseSpoiledSum"},
	},
	{
		name: "sumbound-loose", why: "the bound of a shared round's sum (and of its blocks) is 10% looser than derived: a hostile device pushes the sum further",
		file: "shared/optim/plausible/sum.go",
		old:  "return fn*(c.e+c.half*math.Sqrt(float64(k))) + math.Sqrt(fn)*c.s*chiRoot(k, u)",
		new:  "return 1.1 * (fn*(c.e+c.half*math.Sqrt(float64(k))) + math.Sqrt(fn)*c.s*chiRoot(k, u))",
		pkgs: []string{"./shared/optim/plausible/", "-run", "TestSum"},
	},
	{
		name: "sim-sumcheck-skipped", why: "the simulator's shared-noise path applies the round's sum without testing it",
		file: "sim/shared.go",
		old:  "if err := engine.CheckSum(s.chk, s.sum, len(ids)); err != nil {",
		new:  "if err := engine.CheckSum(s.chk, s.sum, len(ids)); err != nil && false {",
		pkgs: []string{"./sim/", "-run", "TestSharedSumCheck"},
	},
}

func main() {
	only := flag.String("only", "", "run only the mutations with these names (comma-separated)")
	timeout := flag.Duration("timeout", 10*time.Minute, "per-mutation test timeout (a hang counts as killed)")
	jobs := flag.Int("j", 8, "mutations tested at the same time")
	builds := flag.Int("builds", runtime.NumCPU(), "mutations building (compiling, linking) at the same time")
	times := flag.String("times", "", "write each mutation's wall, CPU and test-run seconds to this file (tab-separated)")
	flag.Parse()
	if err := run(*only, *timeout, *jobs, *builds, *times); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

// outcome is what testing one mutation found.
type outcome struct {
	killed bool
	detail string
	err    error
	cost   cost
}

// cost is what testing one mutation took: wall time, the CPU time of go
// test and everything it waited for (compiler, linker, vet, the test
// binaries: the machine is shared, so CPU time is the steadier figure),
// and the part of the wall time the test binaries ran (the "ok"/"FAIL"
// lines' durations; the rest is building: compile, link, vet).
type cost struct {
	wall, cpu, tests time.Duration
}

func run(only string, timeout time.Duration, jobs, builds int, times string) error {
	// Check the whole list first: a stale snippet is an error, before
	// any test runs.
	var names []string
	if only != "" {
		names = strings.Split(only, ",")
	}
	var todo []mutation
	for _, m := range mutations {
		b, err := os.ReadFile(m.file)
		if err != nil {
			return err
		}
		for _, e := range append([]edit{{m.old, m.new}}, m.more...) {
			if n := bytes.Count(b, []byte(e.old)); n != 1 {
				return fmt.Errorf("%s: the snippet %q occurs %d times in %s, want exactly once (update scripts/mutants/main.go)", m.name, e.old, n, m.file)
			}
		}
		for _, e := range m.elsewhere {
			b, err := os.ReadFile(e.file)
			if err != nil {
				return err
			}
			if n := bytes.Count(b, []byte(e.old)); n != 1 {
				return fmt.Errorf("%s: the snippet %q occurs %d times in %s, want exactly once (update scripts/mutants/main.go)", m.name, e.old, n, e.file)
			}
		}
		if only == "" || slices.Contains(names, m.name) {
			todo = append(todo, m)
		}
	}
	if len(todo) < len(names) {
		return fmt.Errorf("-only %q: %d of its names are mutations", only, len(todo))
	}
	if len(todo) == 0 {
		return errors.New("no mutations")
	}
	tmp, err := os.MkdirTemp("", "browserfl-mutants-")
	if err != nil {
		return fmt.Errorf("overlay directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// On an early return, stop the tests still running and wait for them.
	ctx, cancel := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer workers.Wait()
	defer cancel()

	// Up to jobs mutations at a time; each result is printed in list
	// order as soon as it and those before it are known.
	done := make([]chan outcome, len(todo))
	for i := range done {
		done[i] = make(chan outcome, 1)
	}
	next := make(chan int)
	go func() {
		defer close(next)
		for _, i := range startOrder(todo) {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Up to jobs mutations at a time, but only builds of them building:
	// a mutation holds a build slot from the start of its go test to the
	// start of its first test binary. Building is CPU work; many tests
	// that kill a mutation mostly wait (a bound of 10 to 60 s on
	// something the mutation stops from happening), and those waits
	// overlap the next mutations' builds instead of holding a core.
	slots := make(chan struct{}, max(builds, 1))
	for range max(jobs, 1) {
		workers.Go(func() {
			for i := range next {
				killed, detail, c, err := try(ctx, todo[i], filepath.Join(tmp, strconv.Itoa(i)), timeout, slots)
				done[i] <- outcome{killed, detail, err, c}
			}
		})
	}
	fmt.Println("| mutation | what it breaks | tests run | result |")
	fmt.Println("|---|---|---|---|")
	var survived []string
	costs := make([]cost, len(todo))
	for i, m := range todo {
		var o outcome
		select {
		case o = <-done[i]:
		case <-ctx.Done():
			return ctx.Err()
		}
		if o.err != nil {
			return fmt.Errorf("%s: %w", m.name, o.err)
		}
		costs[i] = o.cost
		res := "killed: " + o.detail
		if !o.killed {
			res = "**SURVIVED**"
			survived = append(survived, m.name)
		}
		fmt.Printf("| `%s` | %s | `go test %s` | %s |\n", m.name, m.why, strings.Join(m.pkgs, " "), res)
	}
	if err := reportCosts(todo, costs, times); err != nil {
		return err
	}
	if len(survived) > 0 {
		return fmt.Errorf("%d mutation(s) survived: %s", len(survived), strings.Join(survived, ", "))
	}
	fmt.Printf("all %d mutations killed\n", len(todo))
	return nil
}

// reportCosts prints where the time went (to stderr: the table on
// stdout is docs/mutants.md's) and writes every mutation's cost to
// the file times if it is set.
func reportCosts(todo []mutation, costs []cost, times string) error {
	var sum cost
	order := make([]int, len(todo))
	for i, c := range costs {
		sum.wall += c.wall
		sum.cpu += c.cpu
		sum.tests += c.tests
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(costs[b].cpu - costs[a].cpu) })
	fmt.Fprintf(os.Stderr, "mutants: %d mutations: wall %.0f s in all (%.0f s in test binaries, %.0f s building), CPU %.0f s\n",
		len(todo), sum.wall.Seconds(), sum.tests.Seconds(), (sum.wall - sum.tests).Seconds(), sum.cpu.Seconds())
	for _, i := range order[:min(10, len(order))] {
		c := costs[i]
		fmt.Fprintf(os.Stderr, "mutants:   %-36s CPU %5.1f s, wall %5.1f s (tests %5.1f s)\n", todo[i].name, c.cpu.Seconds(), c.wall.Seconds(), c.tests.Seconds())
	}
	if times == "" {
		return nil
	}
	var b strings.Builder
	b.WriteString("mutation\tcpu_s\twall_s\ttests_s\tpkgs\n")
	for i, c := range costs {
		fmt.Fprintf(&b, "%s\t%.2f\t%.2f\t%.2f\t%s\n", todo[i].name, c.cpu.Seconds(), c.wall.Seconds(), c.tests.Seconds(), strings.Join(todo[i].pkgs, " "))
	}
	return os.WriteFile(times, []byte(b.String()), 0o644)
}

// testsRan sums the durations go test prints for each package it ran
// ("ok  \tpkg\t1.23s", "FAIL\tpkg\t1.23s"): the time in test binaries.
func testsRan(out string) time.Duration {
	var d time.Duration
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 || (strings.TrimSpace(f[0]) != "ok" && f[0] != "FAIL") {
			continue
		}
		if x, err := time.ParseDuration(strings.TrimSpace(f[2])); err == nil {
			d += x
		}
	}
	return d
}

// writeOverlay writes m's mutated files into dir, each numbered (two may
// share a base name) but the first, and an overlay (go help build) that
// puts them in place of their sources; it returns the overlay's path and
// each source with its mutated copy.
func writeOverlay(m mutation, dir string) (ovl string, files, dsts []string, err error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return "", nil, nil, err
	}
	mutated := bytes.Replace(orig, []byte(m.old), []byte(m.new), 1)
	for _, e := range m.more {
		mutated = bytes.Replace(mutated, []byte(e.old), []byte(e.new), 1)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, nil, err
	}
	files = []string{m.file}
	contents := [][]byte{mutated}
	for _, e := range m.elsewhere {
		i := slices.Index(files, e.file)
		if i < 0 {
			b, err := os.ReadFile(e.file)
			if err != nil {
				return "", nil, nil, err
			}
			files, contents, i = append(files, e.file), append(contents, b), len(files)
		}
		contents[i] = bytes.Replace(contents[i], []byte(e.old), []byte(e.new), 1)
	}
	replace := map[string]string{}
	dsts = make([]string, len(files))
	for i, f := range files {
		src, err := filepath.Abs(f)
		if err != nil {
			return "", nil, nil, err
		}
		dsts[i] = filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f)))
		if i == 0 {
			dsts[i] = filepath.Join(dir, filepath.Base(f))
		}
		if err := os.WriteFile(dsts[i], contents[i], 0o644); err != nil {
			return "", nil, nil, err
		}
		replace[src] = dsts[i]
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", nil, nil, err
	}
	ovl = filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ovl, overlay, 0o644); err != nil {
		return "", nil, nil, err
	}
	return ovl, files, dsts, nil
}

// try writes the mutated file into dir and runs m's tests with a build
// overlay (go help build) that puts it in place of the source: the tree
// is never modified, so mutations can be tested side by side. The
// overlay is passed in GOFLAGS, so the builds a test runs itself (the
// e2e tests build the wasm page and cmd/coordinator with go build) see
// the mutation too. -failfast: the first failing test kills it.
func try(ctx context.Context, m mutation, dir string, timeout time.Duration, slots chan struct{}) (killed bool, detail string, c cost, err error) {
	ovl, files, dsts, err := writeOverlay(m, dir)
	if err != nil {
		return false, "", c, err
	}
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		return false, "", c, ctx.Err()
	}
	var freed sync.Once
	free := func() { freed.Do(func() { <-slots }) }
	defer free()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// -vet=off: vet is not a test (the vet stage of make test vets the
	// tree), and on a large package it is a tenth of the build. -w: the
	// test binary is linked without DWARF (nothing here reads it; stack
	// traces do not need it), a third less linking.
	// -json: the "start" event of the first test binary ends the build
	// (free); the text is the events' output, as go test prints it.
	// -toolexec=nice: compiler and linker at nice 10, the tests at the
	// usual priority: beside make test's other lanes the builds take the
	// CPU their tests leave (the build cache is the one without it).
	args := append([]string{"test", "-json", "-count=1", "-failfast", "-vet=off", "-ldflags=-w"}, m.pkgs...)
	cmd := exec.CommandContext(tctx, "go", args...)
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -overlay="+ovl+" -toolexec=nice"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, "", c, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return false, "", c, err
	}
	var text strings.Builder
	for r := bufio.NewReader(stdout); ; {
		line, rerr := r.ReadBytes('\n')
		var ev struct{ Action, Output string }
		if json.Unmarshal(line, &ev) == nil {
			if ev.Action == "start" {
				free()
			}
			text.WriteString(ev.Output)
		} else {
			text.Write(line)
		}
		if rerr != nil {
			break
		}
	}
	runErr := cmd.Wait()
	free()
	c.wall = time.Since(start)
	out := text.String() + stderr.String()
	c.tests = testsRan(out)
	if ps := cmd.ProcessState; ps != nil {
		// The rusage of go test includes every process it waited for.
		c.cpu = ps.UserTime() + ps.SystemTime()
	}
	if ctx.Err() != nil {
		return false, "", c, ctx.Err()
	}
	if runErr == nil {
		return false, "", c, nil
	}
	if tctx.Err() != nil {
		return true, "tests did not finish within " + timeout.String(), c, nil
	}
	// A build error names the mutated copy: name the source instead.
	for i, f := range files {
		out = strings.ReplaceAll(out, dsts[i], f)
	}
	if notBuilt(out) {
		// A mutation that does not compile tests nothing.
		return false, "", c, fmt.Errorf("mutation %s does not build, so no test can kill it: %s", m.name, firstFailure(out))
	}
	return true, firstFailure(out), c, nil
}

// startOrder is the order in which the mutations are started: those
// whose tests drive browsers (./e2e/: half a minute, mostly waiting on
// Chromium) first, so they overlap the many short ones instead of
// running alone at the end; the others in list order. Results are still
// printed in list order.
func startOrder(todo []mutation) []int {
	var first, rest []int
	for i, m := range todo {
		if slices.Contains(m.pkgs, "./e2e/") {
			first = append(first, i)
		} else {
			rest = append(rest, i)
		}
	}
	return append(first, rest...)
}

// notBuilt reports whether go test output failed before any test ran: a
// package that did not build or did not pass vet, and no failing test.
func notBuilt(out string) bool {
	if strings.Contains(out, "--- FAIL: ") {
		return false
	}
	return strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") ||
		strings.Contains(out, "\n# ") && strings.Contains(out, "vet: ")
}

// firstFailure returns the name of the first failing test (or the build
// error) in go test output.
func firstFailure(out string) string {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "--- FAIL: ") {
			f := strings.Fields(strings.TrimPrefix(line, "--- FAIL: "))
			if len(f) > 0 {
				return f[0]
			}
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, ".go:") {
			return "build: " + strings.TrimSpace(line)
		}
	}
	return "tests failed"
}
