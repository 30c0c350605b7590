//go:build ignore

// Command mutants applies a fixed list of privacy- and correctness-
// critical mutations to the source tree, one at a time, runs the tests
// that must catch each, restores the file, and fails if any mutation
// survives (its tests pass). Run it from the module root:
//
//	go run scripts/mutants/main.go            # all mutations
//	go run scripts/mutants/main.go -only ledger-half
//
// Each mutation names the one place it changes by an exact snippet that
// must occur exactly once in its file, so a refactoring that moves the
// code makes this command fail loudly instead of testing nothing. The
// list and the last results are in docs/mutants.md.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type mutation struct {
	name, why string
	file      string
	old, new  string
	more      []edit   // further edits in the same file, applied after old -> new
	pkgs      []string // go test arguments (packages, -run)
}

type edit struct{ old, new string }

var mutations = []mutation{
	{
		name: "nc-noise-0.9", why: "the nc noise scale a device draws is 10% too small (its ledger charge unchanged)",
		file: "shared/optim/device.go",
		old:  "z, err := mechanism.DiscreteSigma(ncSigma(dv.p, dv.rhoP, n), dv.sens, dv.step, dv.dim)",
		new:  "z, err := mechanism.DiscreteSigma(0.9*ncSigma(dv.p, dv.rhoP, n), dv.sens, dv.step, dv.dim)",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "nc-noise-0.5-audit", why: "the nc noise a device draws is half the calibrated scale (the empirical privacy audit must see it)",
		file: "shared/optim/device.go",
		old:  "z, err := mechanism.DiscreteSigma(ncSigma(dv.p, dv.rhoP, n), dv.sens, dv.step, dv.dim)",
		new:  "z, err := mechanism.DiscreteSigma(0.5*ncSigma(dv.p, dv.rhoP, n), dv.sens, dv.step, dv.dim)",
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
		name: "sensitivity-S/b", why: "the replace-one sensitivity 2S/b of the nc noise becomes S/b (noise and charge both too small)",
		file: "shared/optim/params.go",
		old:  "sens := 2 * p.S() / float64(p.Batch)",
		new:  "sens := p.S() / float64(p.Batch)",
		pkgs: []string{"./shared/optim/", "./shared/privacy/..."},
	},
	{
		name: "ledger-sensitivity-S/b", why: "the sensitivity the ledger charges (optim.Sensitivity for mu^2) becomes S/b: a quarter of the true cost",
		file: "shared/optim/params.go",
		old:  "case estMu2:\n\t\treturn 2 * S / b",
		new:  "case estMu2:\n\t\treturn S / b",
		pkgs: []string{"./shared/optim/", "./shared/privacy/..."},
	},
	{
		name: "Y-not-committed", why: "Commit does not store the new noise Y_i",
		file: "shared/optim/device.go",
		old:  "dv.y = mechanism.NCState{N: dv.n, Has: true, Seed: p.seed, Sigma: p.sigma, Dim: dv.dim}",
		new:  "_ = mechanism.NCState{N: dv.n, Has: true, Seed: p.seed, Sigma: p.sigma, Dim: dv.dim}",
		pkgs: []string{"./shared/optim/", "./sim/"},
	},
	{
		name: "Y-half-cancelled", why: "the previous noise Y_i is cancelled at half weight",
		file: "shared/optim/device.go",
		old:  "dv.vz[i] += p.yvec[i] - dv.yvec[i]",
		new:  "dv.vz[i] += p.yvec[i] - dv.yvec[i]/2",
		pkgs: []string{"./shared/optim/", "./sim/"},
	},
	{
		name: "gdp-no-discretisation-term", why: "the device's exact-GDP conversion drops the discrete-noise coupling's total-variation term (1 + e^eps) kappa rho",
		file: "shared/privacy/discrete.go",
		old:  "return d + (1+math.Exp(epsilon))*DiscretisationSlack*rho, nil",
		new:  "return d, nil",
		pkgs: []string{"./shared/privacy/"},
	},
	{
		name: "gdp-mu-sqrt-rho", why: "the device's exact-GDP conversion reads the ledger's rho as mu = sqrt(rho) instead of sqrt(2 rho)",
		file: "shared/privacy/discrete.go",
		old:  "d, err := GDPToDelta(math.Sqrt(2*rho), epsilon)",
		new:  "d, err := GDPToDelta(math.Sqrt(rho), epsilon)",
		pkgs: []string{"./shared/privacy/", "./shared/privacy/plan/"},
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
		pkgs: []string{"./shared/mechanism/"},
	},
	{
		name: "discrete-sigma-no-floor", why: "DiscreteSigma lets sigma_Z fall below 64 grid units, where the total-variation bound is not proven",
		file: "shared/mechanism/discrete.go",
		old:  "c := math.Max(math.Ceil(x), privacy.MinDiscreteSigma)",
		new:  "c := math.Max(math.Ceil(x), 1)",
		pkgs: []string{"./shared/mechanism/"},
	},
	{
		name: "ledger-half", why: "the ledger charges half of each release's cost",
		file: "shared/optim/device.go",
		old:  "if err := dv.ledger.ChargeRho(cost); err != nil {",
		new:  "if err := dv.ledger.ChargeRho(cost * 0.5); err != nil {",
		pkgs: []string{"./shared/optim/", "./device/"},
	},
	{
		name: "clip-1.1", why: "per-sample clipping at 1.1 S instead of S (ghost clipping: logistic regression's factored gradients)",
		file: "shared/optim/device.go",
		old:  "f = mechanism.ClipFactor(n, bound)",
		new:  "f = mechanism.ClipFactor(n, 1.1*bound)",
		pkgs: []string{"./shared/optim/"},
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
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "release-cap-off-by-one", why: "a device may make one release more than its cap (MaxReleases, or T)",
		file: "shared/optim/device.go",
		old:  "if dv.n >= dv.p.ReleaseCap() {",
		new:  "if dv.n > dv.p.ReleaseCap() {",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "release-cap-ignored", why: "the device refuses only after T releases although the noise is calibrated to MaxReleases < T",
		file: "shared/optim/device.go",
		old:  "if dv.n >= dv.p.ReleaseCap() {",
		new:  "if dv.n >= dv.p.Rounds {",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "harmonic-one-term-short", why: "the nc calibration factor H_K misses its first term: noise too small for the K releases",
		file: "shared/optim/params.go",
		old:  "for n := K; n >= 1; n-- {",
		new:  "for n := K; n >= 2; n-- {",
		pkgs: []string{"./shared/optim/", "./shared/privacy/..."},
	},
	{
		name: "harmonic-bound-low", why: "beyond 1,024 releases H_K is replaced by ln K + gamma, below H_K (noise too small)",
		file: "shared/optim/params.go",
		old:  "return math.Log(k) + 0.57721566490153286 + 1/(2*k)",
		new:  "return math.Log(k) + 0.57721566490153286",
		pkgs: []string{"./shared/optim/"},
	},
	{
		name: "sim-downlink-f64", why: "simulated devices compute at the server's float64 query points, not the float32 ones the round frame carries",
		file: "sim/sim.go",
		old:  "r, err := downlink(srv.Next())",
		new:  "r, err := srv.Next(), error(nil)",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "sim-cohort-unsorted", why: "the simulator hands updates to the server in sampling order, not the coordinator's sorted order",
		file: "sim/sim.go",
		old:  "slices.Sort(cohort) ",
		new:  "_ = slices.Sort[[]int]; // ",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "delta-from-session", why: "the owner's budget is read at the session's delta when that is larger",
		file: "shared/privacy/plan/figures.go",
		old:  "eps, err := privacy.LedgerEpsilon(spent+f.WorstRho, owner.Delta)",
		new:  "eps, err := privacy.LedgerEpsilon(spent+f.WorstRho, max(owner.Delta, p.Delta))",
		pkgs: []string{"./shared/privacy/plan/", "./device/"},
	},
	{
		name: "decision-before-commit", why: "the round is committed concurrently with sending its decisions, not before",
		file: "coordinator/coordinator.go",
		old:  "if err := c.store.CommitRound(rec, state); err != nil {",
		new:  "go c.store.CommitRound(rec, state)\n\tif err := error(nil); err != nil {",
		pkgs: []string{"./coordinator/", "-run", "Crash|EndToEnd|Admission|Hostile"},
	},
	{
		name: "write-no-deadline", why: "a frame is written without the write timeout (a client that stops reading holds its writer for good)",
		file: "coordinator/conn.go",
		old:  "cn.fc.SetWriteDeadline(time.Now().Add(cn.f.lim.WriteTimeout))",
		new:  "_ = time.Now",
		pkgs: []string{"./coordinator/", "-run", "WriteTimeout"},
	},
	{
		name: "frame-held-dropped", why: "a long frame's first write, held back to go out with the rest in one writev, is dropped when the frame ends on the buffer's boundary",
		file: "coordinator/frameconn.go",
		old:  "_, err := fc.Conn.Write(b)",
		new:  "_, err := len(b), error(nil)",
		pkgs: []string{"./coordinator/", "-run", "FrameConn|LongFrame"},
	},
	{
		name: "admission-reads-before-lock", why: "admission reads the pending round's record before taking the lock (the round may commit in between)",
		file: "coordinator/coordinator.go",
		old:  "\tif c.cfg.BeforeAdmit != nil {\n\t\tc.cfg.BeforeAdmit(w.DeviceID, h.Pending)",
		new:  "\tmrec, mok, _ := c.store.Round(h.Pending)\n\tc.mutRound = func(int) (RoundRecord, bool, error) { return mrec, mok, nil }\n\tif c.cfg.BeforeAdmit != nil {\n\t\tc.cfg.BeforeAdmit(w.DeviceID, h.Pending)",
		more: []edit{
			{"\t\t\trec, ok, err := c.store.Round(pending)\n", "\t\t\trec, ok, err := c.mutRound(pending)\n"},
			{"\tnode *SessionNode\n}", "\tnode *SessionNode\n\tmutRound func(int) (RoundRecord, bool, error)\n}"},
		},
		pkgs: []string{"./coordinator/", "-run", "Admission"},
	},
	{
		name: "validation-skipped", why: "the coordinator skips the update norm bound",
		file: "coordinator/coordinator.go",
		old:  "if !(norm <= c.bound) {",
		new:  "if false && !(norm <= c.bound) {",
		pkgs: []string{"./coordinator/", "-run", "Hostile|Unservable"},
	},
	{
		name: "aggregate-norm-skipped", why: "the session process accepts an edge's sum without its norm bound (n times the update bound)",
		file: "coordinator/cluster.go",
		old:  "case !(norm <= float64(len(ids))*c.bound):",
		new:  "case false && !(norm <= float64(len(ids))*c.bound):",
		pkgs: []string{"./coordinator/", "-run", "HostileAggregate"},
	},
	{
		name: "aggregate-members-unchecked", why: "the session process counts an edge's sum without checking that each member is the device bound to the connection the edge names",
		file: "coordinator/cluster.go",
		old:  "case links[i] == nil || d == nil || d.conn != links[i]:",
		new:  "case d == nil || links[i] == nil:",
		more: []edit{{"if l := n.link(edge, s); l != nil && l.id == h.IDs[i] {", "if l := n.link(edge, s); l != nil {"}},
		pkgs: []string{"./coordinator/", "-run", "HostileAggregate"},
	},
	{
		name: "edge-validation-skipped", why: "an edge adds an update above the norm bound to its round's sum",
		file: "coordinator/edge.go",
		old:  "if !(norm <= r.bound) {",
		new:  "if false && !(norm <= r.bound) {",
		pkgs: []string{"./coordinator/", "-run", "EdgeRejectsHostile"},
	},
	{
		name: "edge-disconnect-before-sum", why: "an edge reports a device gone before handing over the update it holds from it (the session drops the device and refuses the edge's whole sum)",
		file: "coordinator/edge.go",
		old:  "if r := e.round; r != nil && !r.flushed && r.members[cn.seq] && slices.Contains(r.seqs, cn.seq) {",
		new:  "if r := e.round; false && r != nil && !r.flushed && r.members[cn.seq] && slices.Contains(r.seqs, cn.seq) {",
		pkgs: []string{"./coordinator/", "-run", "EdgeDeviceGone"},
	},
	{
		name: "roster-drops-hello-in-flight", why: "a whole roster drops the link of a connection whose hello the session is still deciding (the admitted device becomes unreachable)",
		file: "coordinator/cluster.go",
		old:  "if k.edge == edge && !es.rosterSeqs[k.seq] && es.hellos[k.seq] == nil {",
		new:  "if k.edge == edge && !es.rosterSeqs[k.seq] {",
		pkgs: []string{"./coordinator/", "-run", "RosterKeepsHello"},
	},
	{
		name: "edge-end-before-decision", why: "an edge ends a device whose update is still undecided (a lost decision leaves its noise state pending for good)",
		file: "coordinator/edge.go",
		old:  "\tif ec.assigned != 0 {\n\t\tif !ec.endHeld {",
		new:  "\tif false && ec.assigned != 0 {\n\t\tif !ec.endHeld {",
		pkgs: []string{"./coordinator/", "-run", "EdgeHoldsEnd"},
	},
	{
		name: "device-xprev-not-last", why: "a device given a round frame without x_{t-1} uses the wrong point in its place (the round's own X)",
		file: "device/runtime.go",
		old:  "\t\tr.XPrev = rt.lastX\n",
		new:  "\t\tr.XPrev = r.X\n",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "short-frame-after-gap", why: "the coordinator sends a frame without x_{t-1} to a device that was last sent round t-2's frame, not t-1's",
		file: "coordinator/conn.go",
		old:  "cn.lastRound.Load() == t-1 {",
		new:  "cn.lastRound.Load() >= t-2 {",
		pkgs: []string{"./sim/", "-run", "SimulatorIsTheProduct"},
	},
	{
		name: "local-noise-0.9", why: "the noise of each hidden local step of \"local\" is 10% too small (its ledger charge unchanged)",
		file: "shared/optim/local.go",
		old:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.sens, dv.step, d); err != nil {",
		new:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(0.9*dv.sigma, dv.sens, dv.step, d); err != nil {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-noise-0.5-audit", why: "the noise of each hidden local step of \"local\" is half the calibrated scale (the empirical privacy audit must see it)",
		file: "shared/optim/local.go",
		old:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(dv.sigma, dv.sens, dv.step, d); err != nil {",
		new:  "if dv.sigmaZ, err = mechanism.DiscreteSigma(0.5*dv.sigma, dv.sens, dv.step, d); err != nil {",
		pkgs: []string{"./sim/audit/", "-run", "TestAuditSound"},
	},
	{
		name: "local-sensitivity-2S/b", why: "\"local\"'s per-step sensitivity ignores K (2S/b instead of 2S/(b/K)): noise and charge both K times too small",
		file: "shared/optim/params.go",
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
		old:  "dv.vz[i] += dv.noise.DiscreteGaussian(dv.sigmaZ)",
		new:  "if step == 0 {\n\t\t\t\tdv.vz[i] += dv.noise.DiscreteGaussian(dv.sigmaZ)\n\t\t\t}",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-li-first-use-only", why: "the last-iterate charge of \"local\" counts only a record's first use, not its E passes (about 1 step instead of 1 + (E-1)/K)",
		file: "shared/privacy/shifted.go",
		old:  "if (j-i)%k == 0 {",
		new:  "if j == i {",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-li-eta-unchecked", why: "the last-iterate charge of \"local\" is used with steps longer than 2/beta, where a step can expand distances",
		file: "shared/optim/local.go",
		old:  "p.Eta > 0 && p.Eta*beta <= 2 &&",
		new:  "p.Eta > 0 && beta >= 0 &&",
		pkgs: []string{"./shared/optim/", "-run", "LocalCharge"},
	},
	{
		name: "local-li-clipping-unchecked", why: "the last-iterate charge of \"local\" is used with a clipping bound below the model's gradient bound (clipped steps need not be nonexpansive)",
		file: "shared/optim/local.go",
		old:  "ok && p.S() >= G &&",
		new:  "ok && G > 0 &&",
		pkgs: []string{"./shared/optim/", "-run", "LocalCharge"},
	},
	{
		name: "local-epochs-uncalibrated", why: "the noise of \"local\" ignores the charge of its E passes (calibrated for one step, charged for the round)",
		file: "shared/optim/params.go",
		old:  "		K = f\n",
		new:  "		K = math.Min(f, 1)\n",
		pkgs: []string{"./shared/optim/", "-run", "Local"},
	},
	{
		name: "local-step-batch-reused", why: "every hidden step of \"local\" uses the first step batch (a sample enters K steps; the one-step charge no longer covers it)",
		file: "shared/optim/local.go",
		old:  "for _, s := range batch[j*dv.bs : (j+1)*dv.bs] {",
		new:  "for _, s := range batch[0:dv.bs] {",
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
		file: "shared/optim/bound.go",
		old:  "steps = float64(p.HiddenSteps())",
		new:  "steps = 1",
		pkgs: []string{"./shared/optim/", "-run", "UpdateBound"},
	},
	{
		name: "removed-hello-accepted", why: "the hello of a device the teacher removed is accepted (it rejoins the session)",
		file: "coordinator/coordinator.go",
		old:  "if c.removed[id] {",
		new:  "if false && c.removed[id] {",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
	{
		name: "removal-not-persisted", why: "a removal is kept in memory only (a restart lets the removed device back in)",
		file: "coordinator/teacher.go",
		old:  "if err := c.store.MarkRemoved(id); err != nil {",
		new:  "if err := error(nil); err != nil {",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
	{
		name: "removal-half-included", why: "a device removed while the open round holds its update is told \"excluded\" but its update stays in the round's sum",
		file: "coordinator/teacher.go",
		old:  "\t\tif u != nil {\n\t\t\tdelete(or.updates, id)\n\t\t\tif u.vec != nil {\n\t\t\t\tc.vecs.put(u.vec)\n\t\t\t}\n\t\t}\n\t\tdelete(or.cohort, id)\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "RemoveMidRound"},
	},
	{
		name: "owner-ledger-unlocked", why: "the page reserves in the owner's ledger with a read and a write in two transactions and no lock (two tabs can both pass on the same old ledger)",
		file: "wasm/owner.go",
		old:  "\terr := idb.Exclusive(ctx, ownerLock, rmw)\n\tif errors.Is(err, idb.ErrNoLocks) {\n\t\terr = rmw()\n\t}\n",
		new: "\t_ = rmw\n\tb, err := o.st.Get(ctx, keyOwnerLedger)\n\tif err == nil || errors.Is(err, idb.ErrNotFound) {\n\t\tvar l local.OwnerLedger\n" +
			"\t\tif l, err = local.ParseOwnerLedger(b); err == nil {\n\t\t\tif err = f(&l); err != nil {\n\t\t\t\tferr = err\n" +
			"\t\t\t} else if b, err = l.Marshal(); err == nil {\n\t\t\t\terr = o.st.Put(ctx, map[string][]byte{keyOwnerLedger: b})\n\t\t\t}\n\t\t}\n\t}\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserOwnerLedgerTwoTabs/web_locks"},
	},
	{
		name: "owner-ledger-fallback-unsafe", why: "without Web Locks the page reserves in the owner's ledger with a read and a write in two transactions (two tabs can both pass on the same old ledger)",
		file: "wasm/owner.go",
		old:  "\tif errors.Is(err, idb.ErrNoLocks) {\n\t\terr = rmw()\n\t}\n",
		new: "\tif errors.Is(err, idb.ErrNoLocks) {\n\t\tvar b []byte\n\t\tb, err = o.st.Get(ctx, keyOwnerLedger)\n\t\tif err == nil || errors.Is(err, idb.ErrNotFound) {\n\t\t\tvar l local.OwnerLedger\n" +
			"\t\t\tif l, err = local.ParseOwnerLedger(b); err == nil {\n\t\t\t\tif err = f(&l); err != nil {\n\t\t\t\t\tferr = err\n" +
			"\t\t\t\t} else if b, err = l.Marshal(); err == nil {\n\t\t\t\t\terr = o.st.Put(ctx, map[string][]byte{keyOwnerLedger: b})\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}\n",
		pkgs: []string{"./e2e/", "-run", "TestBrowserOwnerLedgerTwoTabs/no_web_locks"},
	},
	{
		name: "rejection-unrecorded", why: "a rejected update is not recorded against its device (the teacher's view does not flag it)",
		file: "coordinator/coordinator.go",
		old:  "\td.rejected++\n\td.rejectWhy = why\n",
		new:  "",
		pkgs: []string{"./coordinator/", "-run", "TeacherSeesRejectionsAndRemoves"},
	},
}

func main() {
	only := flag.String("only", "", "run only the mutation with this name")
	timeout := flag.Duration("timeout", 10*time.Minute, "per-mutation test timeout (a hang counts as killed)")
	flag.Parse()
	if err := run(*only, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(1)
	}
}

func run(only string, timeout time.Duration) error {
	// Check the whole list first: a stale snippet is an error, before
	// anything is changed.
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
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("| mutation | what it breaks | tests run | result |")
	fmt.Println("|---|---|---|---|")
	var survived []string
	ran := 0
	for _, m := range mutations {
		if only != "" && m.name != only {
			continue
		}
		ran++
		killed, detail, err := try(ctx, m, timeout)
		if err != nil {
			return err
		}
		res := "killed: " + detail
		if !killed {
			res = "**SURVIVED**"
			survived = append(survived, m.name)
		}
		fmt.Printf("| `%s` | %s | `go test %s` | %s |\n", m.name, m.why, strings.Join(m.pkgs, " "), res)
	}
	if ran == 0 {
		return fmt.Errorf("no mutation named %q", only)
	}
	if len(survived) > 0 {
		return fmt.Errorf("%d mutation(s) survived: %s", len(survived), strings.Join(survived, ", "))
	}
	fmt.Printf("all %d mutations killed\n", ran)
	return nil
}

// try applies m, runs its tests and restores the file whatever happens.
func try(ctx context.Context, m mutation, timeout time.Duration) (killed bool, detail string, err error) {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return false, "", err
	}
	mutated := bytes.Replace(orig, []byte(m.old), []byte(m.new), 1)
	for _, e := range m.more {
		mutated = bytes.Replace(mutated, []byte(e.old), []byte(e.new), 1)
	}
	if err := os.WriteFile(m.file, mutated, 0o644); err != nil {
		return false, "", err
	}
	defer func() {
		if werr := os.WriteFile(m.file, orig, 0o644); werr != nil && err == nil {
			err = fmt.Errorf("restore %s: %w", m.file, werr)
		}
	}()
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := append([]string{"test", "-count=1"}, m.pkgs...)
	cmd := exec.CommandContext(tctx, "go", args...)
	out, runErr := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return false, "", ctx.Err()
	}
	if runErr == nil {
		return false, "", nil
	}
	if tctx.Err() != nil {
		return true, "tests did not finish within " + timeout.String(), nil
	}
	return true, firstFailure(string(out)), nil
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
