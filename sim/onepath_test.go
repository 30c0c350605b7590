package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"browserfl/coordinator"
	"browserfl/coordinator/api"
	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/coordinator/wsconn"
	"browserfl/device"
	"browserfl/engine"
	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/wire"
	"browserfl/sim"
)

// blobSet returns n samples of two Gaussian blobs in 4 dimensions
// (centres +-1 per coordinate, standard deviation 0.5; seeded).
func blobSet(n int, seed uint64) dataset.Set {
	rng := rand.New(rand.NewPCG(seed, 3))
	s := dataset.Set{Name: "blobs", Features: 4, Classes: 2}
	for range n {
		label := rng.IntN(2)
		x := make([]float32, 4)
		for k := range x {
			x[k] = float32(float64(2*label-1) + 0.5*rng.NormFloat64())
		}
		s.Samples = append(s.Samples, dataset.Sample{X: x, Label: label})
	}
	return s
}

// TestSimulatorIsTheProduct runs one session twice with the same seeds:
// in the simulator (sim.Run) and live, through the coordinator and M
// native device runtimes over real loopback websockets, each device
// running the product's device half on the shard the simulator gives the
// device of the same rank, with the simulator's entropy stream. Cohorts
// (optim.SampleCohort over the sorted eligible devices), minibatches
// (optim.Minibatch), the float32 downlink, the noise, the compression and
// the order in which updates reach the server are the same, so the final
// models must be equal bit for bit: no tolerance. A difference in any of
// these (a cohort drawn by another rule, minibatches drawn with
// replacement, devices computing at float64 points, updates summed in
// another order) makes the test fail.
//
// The session is private ("nc", noise on every message) with m < M, so
// cohort sampling, noise and noise cancellation are all exercised; the
// deadline is long enough that no device misses a round, and every device
// is connected before the first round, so every round's eligible set is
// all M devices in both runs.
func TestSimulatorIsTheProduct(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live session over websockets")
	}
	for _, tc := range []struct {
		algorithm, compressor string
		rho                   float64
		mod                   func(*wire.SessionParams)
	}{
		{"nc", "", 50, nil},
		{"nc", "f64", 8, nil},
		{"noisysgd", "ef+randk:0.5", 50, nil},
		// Without noise and with exact f64 payloads nothing rounds the
		// devices' work onto a grid: this case fails if the simulated
		// devices compute at the float64 query points instead of the
		// float32 ones the round frame carries.
		{"mu2", "f64", 0, nil},
		// Several passes of hidden steps, certified: output perturbation.
		{"local", "", 50, func(s *wire.SessionParams) {
			s.Model, s.Clip, s.Eta, s.LocalSteps, s.LocalEpochs = "logreg-unit", 2, 1, 2, 3
		}},
	} {
		t.Run(tc.algorithm+"/"+tc.compressor, func(t *testing.T) { onePath(t, tc.algorithm, tc.compressor, tc.rho, tc.mod, "", nil, nil) })
	}
}

// TestHostileIsTheProduct is TestSimulatorIsTheProduct with one hostile
// device (sim.Hostile behind a native device runtime) for each attack
// kind that needs no other device's message: the coordinator's tests
// (plausible.Checker with its histories, asks and persistence) and the
// simulator's decide alike, round after round, so the attacked models are
// equal bit for bit, and the simulator's attack table is the product's.
// The omniscient kinds (alie, ipm) see the honest messages in the
// simulator only.
func TestHostileIsTheProduct(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live session over websockets")
	}
	for _, kind := range []string{sim.AttackSpike, sim.AttackBlock, sim.AttackSignFlip, sim.AttackDrift} {
		t.Run(kind, func(t *testing.T) { onePath(t, "nc", "", 8, nil, kind, nil, nil) })
	}
}

// TestSignalBoundIsTheProduct runs a drift attacker against a session
// that states a signal bound D (wire signal_bound) live and in the
// simulator: the coordinator's checker, built from the session's
// parameters, must decide as the simulator's does, bit for bit. The bound
// binds here: in the simulator the same session without it ends with
// another model.
func TestSignalBoundIsTheProduct(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live session over websockets")
	}
	const D = 0.05
	p := optim.Params{Algorithm: "nc", Model: "logreg", M: 6, Cohort: 5, Rounds: 24, Batch: 4, Clip: 1, Eta: 0.05, Rho: 8}
	models := map[float64][]float64{}
	for _, d := range []float64{0, D} {
		p.SignalBound = d
		res, err := sim.Run(context.Background(), sim.Config{Params: p, Train: blobSet(600, 1), Test: blobSet(200, 2),
			Partition: dataset.Scheme{Kind: dataset.SchemeIID}, Seed: 11, EvalEvery: 1000, Attack: sim.AttackDrift, Attackers: 1})
		if err != nil {
			t.Fatal(err)
		}
		models[d] = res.Model
	}
	if slices.Equal(models[0], models[D]) {
		t.Fatal("the signal bound changes nothing in this session: the test would show nothing")
	}
	onePath(t, "nc", "", 8, func(s *wire.SessionParams) { s.SignalBound = D }, sim.AttackDrift, nil, nil)
}

// TestOneRoundEngine runs sessions with dropouts through both shells of
// the round engine (package engine): the simulator's, and the
// coordinator's over loopback websockets with native device runtimes. A
// device whose message is lost prepares it (its samples and noise are
// spent) and goes away before sending (the device runtime's BeforeSend
// hook; sim.Config.Dropout); it comes back, learns "excluded" and aborts.
// Each device misses a round now and then, never two in a row. The
// cohort is the whole session (m = M), so no round over-selects and
// which updates are included never depends on which arrive first.
// Models, each round's included devices and every device's ledger must
// be the same, bit for bit, for several algorithms and compressors.
//
// The sessions with m < M then have devices that stay but withhold their
// messages (sim.Config.Withhold; the device runtime's Withhold hook), so
// that the rounds over-select around unsure members, ask devices that
// missed too many rounds as probes, and, once every device has, run a
// recovery round (engine.PlanRecovery): each round's members, not only
// its included devices, must then be the same too.
func TestOneRoundEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a live session over websockets")
	}
	dropout := func(t, i int) bool { return t > 1 && (t+2*i)%7 == 0 }
	whole := func(s *wire.SessionParams) { s.M, s.Cohort = 5, 5 }
	for _, tc := range []struct {
		algorithm, compressor string
		rho                   float64
	}{
		{"nc", "", 8},
		{"nc", "randk:0.5", 8},
		{"nc", "qinf:8bit", 8},
		{"noisysgd", "", 50},
		{"mu2", "f64", 0},
	} {
		t.Run(tc.algorithm+"/"+tc.compressor, func(t *testing.T) {
			onePath(t, tc.algorithm, tc.compressor, tc.rho, whole, "", dropout, nil)
		})
	}
	// m < M, a 3 s deadline: only the rounds in which everyone withholds
	// wait for it (whether a message arrives in time never decides).
	partial := func(s *wire.SessionParams) { s.M, s.Cohort, s.DeadlineMillis = 6, 3, 3000 }
	for _, tc := range []struct {
		algorithm, compressor string
		rho                   float64
	}{
		{"nc", "", 8},
		{"mu2", "f64", 0},
	} {
		t.Run("partial/"+tc.algorithm+"/"+tc.compressor, func(t *testing.T) {
			onePath(t, tc.algorithm, tc.compressor, tc.rho, partial, "", nil, stayingSilent())
		})
	}
}

// stayingSilent is a Withhold policy that leads a session of m < M
// through over-selection, probes and a recovery round while no round ever
// has more messages than its target (so which arrive first never decides
// which are included): in rounds 1 to 3 and after the first recovery
// round exactly the round's target answer, its unsure members first (so
// probes come back), the others withhold (a sure member then only was
// slower; an unsure one missed the round); from round 4 until a recovery
// round every member withholds, so each such round closes at its deadline
// and all its members miss it, until none is sampled any more.
func stayingSilent() func(t, i int, p engine.Plan[int]) bool {
	recovered := false
	return func(t, i int, p engine.Plan[int]) bool {
		if p.Recovery {
			recovered = true
			return false
		}
		if t >= 4 && !recovered {
			return true
		}
		order := slices.Clone(p.Members)
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case p.Unsure[a] == p.Unsure[b]:
				return 0
			case p.Unsure[a]:
				return -1
			default:
				return 1
			}
		})
		return slices.Index(order, i) >= p.Target
	}
}

// onePath runs the session in the simulator and live and compares the
// models, each round's included devices and every device's ledger; with
// attack set, device 0 is hostile (sim.Hostile) in both; with dropout
// set, device i's message of round t is lost when dropout(t, i); with
// withhold set, device i withholds its message of round t when the
// simulator's withhold(t, i, plan) did, and each round's members must be
// the same live and simulated.
func onePath(t *testing.T, algorithm, compressor string, rho float64, mod func(*wire.SessionParams), attack string, dropout func(t, i int) bool, withhold func(t, i int, p engine.Plan[int]) bool) {
	const seed = 11
	sess := wire.SessionParams{Name: "onepath", Dim: 10, DeadlineMillis: 60000, Algorithm: algorithm, Model: "logreg",
		Features: 4, Classes: 2, M: 6, Cohort: 5, Rounds: 24, Batch: 4, Clip: 1, Eta: 0.05, Rho: rho,
		Compressor: compressor}
	if mod != nil {
		mod(&sess)
	}
	p := sess
	if algorithm == "local" {
		if !algo.LocalOutputPerturbation(p) {
			t.Fatal("the local case is not under output perturbation")
		}
	}
	train, test := blobSet(6*100, 1), blobSet(200, 2) // 25 minibatches per device: none runs out in 24 rounds
	scheme := dataset.Scheme{Kind: dataset.SchemeIID}

	// The simulator.
	attackers := 0
	if attack != "" {
		attackers = 1
	}
	// The simulator's plans and withheld messages, replayed live.
	plans := map[int]engine.Plan[int]{}
	withheld := map[[2]int]bool{}
	var simWithhold func(t, i int, p engine.Plan[int]) bool
	if withhold != nil {
		simWithhold = func(t, i int, p engine.Plan[int]) bool {
			plans[t] = p
			withheld[[2]int{t, i}] = withhold(t, i, p)
			return withheld[[2]int{t, i}]
		}
	}
	res, err := sim.Run(context.Background(), sim.Config{Params: p, Train: train, Test: test, Partition: scheme,
		Seed: seed, EvalEvery: 1000, Workers: 2, Attack: attack, Attackers: attackers, Dropout: dropout,
		Withhold: simWithhold, MaxMisses: wsconn.Limits{}.WithDefaults(sess.Dim).MaxMisses})
	if err != nil {
		t.Fatal(err)
	}
	if withhold != nil {
		covered(t, plans, res.Withheld)
	}
	if res.Rounds != sess.Rounds || res.Declined != 0 {
		t.Fatalf("simulator: %d rounds, %d declined; want %d, 0", res.Rounds, res.Declined, sess.Rounds)
	}

	// The product: coordinator, server half, native device runtimes.
	proto, err := model.New(sess.Model, sess.Features, sess.Classes)
	if err != nil {
		t.Fatal(err)
	}
	x0 := make([]float64, proto.Dim())
	model.Init(proto, x0, seed) // the simulator's initial model
	server, err := optim.NewServer(p, x0, mechanism.NewStream(sim.ServerSeed(seed), 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// Device i gets an id that sorts at rank i, so the coordinator's
	// sorted eligible ids line up with the simulator's device indices.
	ids := make([]string, sess.M)
	secrets := make([]string, sess.M)
	for i := range ids {
		ids[i], secrets[i] = fmt.Sprintf("%032x", i), fmt.Sprintf("%064x", i+1)
		if err := st.AddDevice(ids[i], secrets[i]); err != nil {
			t.Fatal(err)
		}
	}
	// TrustNewDevices: the simulator's devices are all honest and asked
	// from round 1, so the live devices are sure members from their
	// hello too; otherwise round 2 over-selects around the device that
	// was not in round 1 (not yet proven) and which updates arrive first
	// decides which are included (coordinator/cohort.go).
	// With withheld messages no device leaves, so a round asks exactly
	// the devices the simulator's does however few are sampled.
	minDevices := sess.M
	if withhold != nil {
		minDevices = 1
	}
	c, err := coordinator.New(coordinator.Config{Session: sess, JoinCode: "join-me", Server: server, Store: st,
		MinDevices: minDevices, Seed: seed, TrustNewDevices: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler(c, site.Assets{}, nil))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	parts, err := scheme.Partition(train.Labels(), sess.M, seed) // the simulator's partition
	if err != nil {
		t.Fatal(err)
	}
	var connected sync.WaitGroup
	connected.Add(sess.M)
	var watched atomic.Int64 // releases the watch saw
	rts := make([]*device.Runtime, sess.M)
	halves := make([]optim.Device, sess.M)
	for i := range rts {
		shard, err := train.Subset(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		mdl, _ := model.New(sess.Model, sess.Features, sess.Classes)
		var dev optim.Device
		dev, err = optim.NewDevice(p, mdl, mechanism.NewStream(sim.DeviceSeed(seed, i), 0))
		if err != nil {
			t.Fatal(err)
		}
		if i < attackers {
			if dev, err = sim.NewHostile(attack, p, proto.Dim(), dev, seed, i, false, sess.Cohort, attackers); err != nil {
				t.Fatal(err)
			}
		}
		halves[i] = dev
		var hooks *device.Hooks
		if dropout != nil {
			hooks = &device.Hooks{BeforeSend: func(t int) (time.Duration, bool) { return 0, dropout(t, i) }}
		}
		if withhold != nil {
			hooks = &device.Hooks{Withhold: func(t int) bool { return withheld[[2]int{t, i}] }}
		}
		state, _ := json.Marshal(device.State{DeviceID: ids[i], Secret: secrets[i]})
		storage := &device.MemStorage{}
		if err := storage.Save(ctx, state); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		rts[i], err = device.New(ctx, device.Config{URL: url, JoinCode: "join-me", Storage: storage,
			Unlimited: true, AllowTrusted: !algo.Private(p), AllowNonPrivate: !algo.Private(p), // rho_p = 50: far above the default budget; mu2 gives no guarantee
			Data: shard.Samples, MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Hooks: hooks,
			// The page's watch (device.WatchPrepared, "what your phone
			// sent") on every device half: it must change nothing.
			NewDevice: device.WatchPrepared(func(optim.Params) (optim.Device, error) { return dev, nil },
				func(device.Prepared) { watched.Add(1) }),
			OnEvent: func(e device.Event) {
				switch e.Kind {
				case device.EventConnected:
					once.Do(connected.Done)
				case device.EventError:
					if dropout == nil || !strings.Contains(e.Err.Error(), "test hook") {
						t.Errorf("device %d: %v", i, e.Err)
					}
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	devErrs := make(chan error, sess.M)
	for _, rt := range rts {
		go func() { devErrs <- rt.Run(ctx) }()
	}
	connected.Wait() // every device is in before round 1
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for range rts {
		if err := <-devErrs; err != nil {
			t.Errorf("device: %v", err)
		}
	}
	if got := server.Next().T; got != sess.Rounds+1 {
		t.Fatalf("live server at round %d, want %d", got, sess.Rounds+1)
	}
	if watched.Load() == 0 {
		t.Error("the page's watch saw no release: the test shows nothing about it")
	}

	live := server.Model()
	diff := 0
	for k := range live {
		if math.Float64bits(live[k]) != math.Float64bits(res.Model[k]) {
			diff++
			t.Errorf("coordinate %d: live %v, simulated %v", k, live[k], res.Model[k])
		}
	}
	// The frames down: a device that was sent round t-1's frame (on the
	// same connection: none drops here) gets round t's without x_{t-1}
	// (wire.ShortRound), and the model above is still the simulator's bit
	// for bit, so it used the right x_{t-1}. The bytes say how many short
	// frames went out: exactly one per member of two consecutive cohorts.
	recs, err := st.Rounds(0, sess.Rounds)
	if err != nil {
		t.Fatal(err)
	}
	// The decisions: each round's included devices (ids rank as indices).
	if len(recs) != len(res.Included) {
		t.Fatalf("%d rounds live, %d simulated", len(recs), len(res.Included))
	}
	dropped := 0
	for k, rec := range recs {
		var inc []int
		for _, id := range rec.Included {
			inc = append(inc, slices.Index(ids, id))
		}
		dropped += len(rec.Cohort) - len(rec.Included)
		if !slices.Equal(inc, res.Included[k]) {
			t.Errorf("round %d: included %v live, %v simulated", rec.T, inc, res.Included[k])
		}
		if withhold != nil {
			var asked []int
			for _, id := range rec.Cohort {
				asked = append(asked, slices.Index(ids, id))
			}
			if want := plans[rec.T].Members; !slices.Equal(asked, want) {
				t.Errorf("round %d: asked %v live, %v simulated", rec.T, asked, want)
			}
		}
	}
	if dropout != nil && (res.Dropped == 0 || dropped < res.Dropped) {
		t.Errorf("%d messages dropped in the simulator, %d members not included live: the test shows nothing", res.Dropped, dropped)
	}
	// The ledgers: every device's charges, bit for bit.
	for i, dev := range halves {
		acc, ok := dev.(optim.Accountant)
		if !ok {
			continue
		}
		ll := acc.Ledger()
		live, _ := ll.MarshalBinary()
		simd, _ := res.Ledgers[i].MarshalBinary()
		if len(live) == 0 || !bytes.Equal(live, simd) {
			t.Errorf("device %d: ledger %s live, %s simulated", i, live, simd)
		}
	}
	d := proto.Dim()
	alg, err := algo.Lookup(p.Algorithm)
	if err != nil {
		t.Fatal(err)
	}
	full, short := int64(wire.RoundFrameLen(d, alg.UsesXPrev())), int64(wire.RoundFrameLen(d, false))
	// A member whose message was lost went away and came back on a new
	// connection: its next frame is whole.
	var want, got, shorts int64
	prev := map[string]bool{}
	for _, rec := range recs {
		cur := map[string]bool{}
		for _, id := range rec.Cohort {
			cur[id] = dropout == nil || slices.Contains(rec.Included, id)
			if alg.UsesXPrev() && prev[id] {
				want += short
				shorts++
			} else {
				want += full
			}
		}
		got += rec.BytesOut
		prev = cur
	}
	if got != want || (alg.UsesXPrev() && shorts == 0) {
		t.Errorf("%d bytes of round frames sent, want %d (%d short frames of %d B, the rest whole frames of %d B)", got, want, shorts, short, full)
	}
	if diff == 0 {
		acc, _ := model.Evaluate(proto, live, test.Samples)
		t.Logf("%s %s: %d rounds, the same model, decisions and ledgers bit for bit (held-out accuracy %.3f; simulated refusals: %d hostile, %d honest; %d messages lost)",
			algorithm, attack, sess.Rounds, acc, res.RejectedHostile, res.RejectedHonest, res.Dropped)
	}
}

// covered fails t unless the simulated rounds (plans by round) include
// one that over-selected around an unsure member, one that asked a probe
// beside a sampled cohort, and a recovery round, and some message was
// withheld: otherwise the session shows nothing about them.
func covered(t *testing.T, plans map[int]engine.Plan[int], withheld int) {
	t.Helper()
	var over, probes, recovery int
	for _, p := range plans {
		switch {
		case p.Recovery:
			recovery++
		case p.Probes > 0:
			probes++
		}
		if !p.Recovery && p.Extra > p.Probes {
			over++
		}
	}
	if over == 0 || probes == 0 || recovery == 0 || withheld == 0 {
		t.Fatalf("simulated rounds: %d over-selected, %d with probes, %d recovery, %d messages withheld: the test shows nothing about some", over, probes, recovery, withheld)
	}
	t.Logf("%d rounds over-selected, %d asked probes, %d recovery; %d messages withheld", over, probes, recovery, withheld)
}
