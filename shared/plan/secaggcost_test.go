package plan

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"browserfl/internal/cputime"
	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/secagg"
	"browserfl/shared/session"
	"browserfl/shared/wire"
)

// The costs of a shared-noise round (docs/secagg.md, "Costs"), measured
// on the product's code: the secagg state machines, the wire's frames
// (wire.EncodeSecAgg and its decoders, one codec for the page, the
// native device and the coordinator) and the algorithms' halves, each
// against the nc round it replaces, timed in the same iterations.

// costSession is the shared-noise session the costs are measured in:
// logistic regression on the scattering features (d = 39,700), a cohort
// of m devices, the default threshold ceil(0.7 m).
func costSession(m int) wire.SessionParams {
	return wire.SessionParams{Name: "costs", Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg", Features: 3969, Classes: 10,
		Dim: 39700, Transform: FeaturesScatter, M: m, Cohort: m, Rounds: 40, Batch: 32, Clip: 1, Eta: 0.1,
		Epsilon: 8, Delta: 1e-5, DeadlineMillis: 5000}
}

// ncOf is s run by nc.
func ncOf(s wire.SessionParams) wire.SessionParams {
	s.Algorithm = "nc"
	return s
}

// costRound is one round of secure aggregation between n clients and a
// server, every message carried as the wire frame the coordinator and
// the devices exchange. It counts each device's bytes up and down.
type costRound struct {
	tb      testing.TB
	t       int // the wire's round
	p       secagg.Params
	members []wire.SecAggMember
	dir     secagg.Directory
	keys    map[uint32]ed25519.PrivateKey
	ids     []uint32
	inputs  map[uint32][]int64
	clients map[uint32]*secagg.Client
	// gone are the clients that leave after sharing their keys, before
	// their masked input.
	gone     map[uint32]bool
	up, down map[uint32]int
	// clock is called around each client's work on a frame (decoding,
	// its step, encoding its answer).
	clock func(id uint32, on bool)
	// parallel runs the clients' work on every core (setting up large
	// rounds; never with a clock).
	parallel bool
	// sent holds each step's frames from the devices, in order, for
	// replaying the server's side (costServer).
	sent [][][]byte
	sum  []int64
}

// newCostRound sets up a round of the n = MaxClients clients of a:
// their long-term keys, directory and random inputs within the ring's
// bound.
func newCostRound(tb testing.TB, a SecAgg, round uint64, rng *mrand.Rand) *costRound {
	r := &costRound{tb: tb, t: int(round >> 32), p: a.Params(secagg.SessionID{7, 7, 7}, round), dir: secagg.Directory{},
		keys: map[uint32]ed25519.PrivateKey{}, inputs: map[uint32][]int64{}, clients: map[uint32]*secagg.Client{},
		gone: map[uint32]bool{}, up: map[uint32]int{}, down: map[uint32]int{}}
	for id := uint32(1); int(id) <= a.MaxClients; id++ {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			tb.Fatal(err)
		}
		r.ids = append(r.ids, id)
		r.dir[id], r.keys[id] = pub, priv
		r.members = append(r.members, wire.SecAggMember{ID: id, Key: [32]byte(pub)})
		x := make([]int64, a.Dim)
		for i := range x {
			x[i] = rng.Int64N(2*a.MaxAbs+1) - a.MaxAbs
		}
		r.inputs[id] = x
	}
	return r
}

// each runs f for every id, in turn or on every core, and stops at the
// first error.
func (r *costRound) each(ids []uint32, f func(id uint32) ([]byte, error)) ([][]byte, error) {
	out := make([][]byte, len(ids))
	errs := make([]error, len(ids))
	if !r.parallel {
		for i, id := range ids {
			if out[i], errs[i] = f(id); errs[i] != nil {
				return nil, errs[i]
			}
		}
		return out, nil
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = f(ids[i])
			}
		})
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// device is client id's work on frame b, the coordinator's: decode,
// answer, encode. A nil b is the setup's absence (never sent).
func (r *costRound) device(id uint32, b []byte, input []int64) ([]byte, error) {
	if r.clock != nil {
		r.clock(id, true)
		defer r.clock(id, false)
	}
	f, err := wire.DecodeSecAggToDevice(b, wire.Limits{})
	if err != nil {
		return nil, err
	}
	var out any
	switch m := f.Msg.(type) {
	case *wire.SecAggSetup:
		dir := make(secagg.Directory, len(m.Members))
		for _, e := range m.Members {
			dir[e.ID] = ed25519.PublicKey(e.Key[:])
		}
		c, err := secagg.NewClient(r.p, m.You, r.keys[m.You], dir)
		if err != nil {
			return nil, err
		}
		r.clients[id] = c
		out, err = c.AdvertiseKeys()
		if err != nil {
			return nil, err
		}
	case *secagg.KeyList:
		out, err = r.clients[id].ShareKeys(m)
	case *secagg.ShareDelivery:
		out, err = r.clients[id].MaskedInput(m, input)
	case *secagg.SurvivorList:
		out, err = r.clients[id].Consistency(m)
	case *secagg.UnmaskRequest:
		out, err = r.clients[id].Unmask(m)
	}
	if err != nil {
		return nil, err
	}
	return wire.EncodeSecAgg(f.T, out)
}

// run plays the round: the setups, then each step's device frames and
// the server's answers (costServer), and checks the sum.
func (r *costRound) run() error {
	var mu sync.Mutex
	toDevices := map[uint32][]byte{}
	for _, id := range r.ids {
		b, err := wire.EncodeSecAgg(r.t, &wire.SecAggSetup{Session: r.p.Session, Round: r.p.Round, You: id, Members: r.members})
		if err != nil {
			return err
		}
		toDevices[id] = b
	}
	srv, err := newCostServer(r.p, r.dir, r.t)
	if err != nil {
		return err
	}
	for step := 0; step < 5; step++ {
		var ids []uint32
		for _, id := range r.ids {
			if toDevices[id] == nil || step == 2 && r.gone[id] {
				continue
			}
			ids = append(ids, id)
		}
		frames, err := r.each(ids, func(id uint32) ([]byte, error) {
			mu.Lock()
			b := toDevices[id]
			r.down[id] += len(b)
			mu.Unlock()
			out, err := r.device(id, b, r.inputs[id])
			if err != nil {
				return nil, fmt.Errorf("device %d at step %d: %w", id, step, err)
			}
			mu.Lock()
			r.up[id] += len(out)
			mu.Unlock()
			return out, nil
		})
		if err != nil {
			return err
		}
		r.sent = append(r.sent, frames)
		if toDevices, err = srv.step(step, frames); err != nil {
			return err
		}
	}
	r.sum = srv.sum
	var included []uint32
	for _, id := range r.ids {
		if !r.gone[id] {
			included = append(included, id)
		}
	}
	want := make([]int64, r.p.Dim)
	for _, id := range included {
		for i, v := range r.inputs[id] {
			want[i] += v
		}
	}
	for i := range want {
		if r.sum[i] != want[i] {
			return fmt.Errorf("sum element %d is %d, want %d", i, r.sum[i], want[i])
		}
	}
	return nil
}

// costServer is the coordinator's side of a round: it decodes each
// device frame, takes it, closes the step and encodes each answer once,
// as coordinator/secround does.
type costServer struct {
	srv *secagg.Server
	t   int
	sum []int64
}

func newCostServer(p secagg.Params, dir secagg.Directory, t int) (*costServer, error) {
	s, err := secagg.NewServer(p, dir)
	return &costServer{srv: s, t: t}, err
}

// step takes step's frames from the devices and returns the frame each
// device is sent next (nothing after the last step: sum holds the sum).
func (s *costServer) step(step int, frames [][]byte) (map[uint32][]byte, error) {
	for _, b := range frames {
		f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{})
		if err != nil {
			return nil, err
		}
		switch m := f.Msg.(type) {
		case *secagg.AdvertiseKeys:
			err = s.srv.ReceiveAdvertise(m)
		case *secagg.ShareKeys:
			err = s.srv.ReceiveShares(m)
		case *secagg.MaskedInput:
			err = s.srv.ReceiveMasked(m)
		case *secagg.ConsistencySig:
			err = s.srv.ReceiveConsistency(m)
		case *secagg.UnmaskResponse:
			err = s.srv.ReceiveUnmask(m)
		}
		if err != nil {
			return nil, err
		}
	}
	out := map[uint32][]byte{}
	one := func(m any, to []uint32) error {
		b, err := wire.EncodeSecAgg(s.t, m)
		for _, id := range to {
			out[id] = b
		}
		return err
	}
	var err error
	switch step {
	case 0:
		kl, e := s.srv.KeyList()
		if err = e; err == nil {
			var to []uint32
			for _, a := range kl.Clients {
				to = append(to, a.Client)
			}
			err = one(kl, to)
		}
	case 1:
		ds, e := s.srv.Deliveries()
		for _, d := range ds {
			if e == nil {
				e = one(d, []uint32{d.To})
			}
		}
		err = e
	case 2:
		sl, e := s.srv.SurvivorList()
		if err = e; err == nil {
			err = one(sl, sl.Survivors)
		}
	case 3:
		ur, e := s.srv.UnmaskRequest()
		if err = e; err == nil {
			err = one(ur, s.srv.Signers())
		}
	case 4:
		s.sum, err = s.srv.Sum()
	}
	return out, err
}

// replay runs the server's side of the recorded round r again, from its
// devices' frames, on a fresh server.
func (r *costRound) replay() ([]int64, error) {
	s, err := newCostServer(r.p, r.dir, r.t)
	if err != nil {
		return nil, err
	}
	for step, frames := range r.sent {
		if _, err := s.step(step, frames); err != nil {
			return nil, err
		}
	}
	return s.sum, nil
}

// ncDevice is an nc device of session s on b synthetic samples of its
// features (dense, in [0, 1), as normalised scattering features are),
// stepping through rounds.
type ncDevice struct {
	dv    optim.Device
	data  []dataset.Sample
	x, xp []float64
	t     int
}

func newNCDevice(tb testing.TB, s wire.SessionParams) *ncDevice {
	m, err := model.New(s.Model, s.Features, s.Classes)
	if err != nil {
		tb.Fatal(err)
	}
	p := s
	p.Rounds = session.MaxRounds
	dv, err := optim.NewDevice(p, m, rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(3, 4))
	d := &ncDevice{dv: dv, x: make([]float64, m.Dim()), xp: make([]float64, m.Dim())}
	for i := range d.x {
		d.x[i], d.xp[i] = rng.NormFloat64()*0.01, rng.NormFloat64()*0.01
	}
	for i := range s.Batch {
		x := make([]float32, s.Features)
		for j := range x {
			x[j] = rng.Float32()
		}
		d.data = append(d.data, dataset.Sample{X: x, Label: i % s.Classes})
	}
	return d
}

// step is one nc device round: Prepare, the update frame's encoding,
// Commit. It returns the frame.
func (d *ncDevice) step(tb testing.TB) []byte {
	d.t++
	u, err := d.dv.Prepare(optim.Round{T: d.t, X: d.x, XPrev: d.xp}, d.data)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := wire.EncodeUpdate(wire.UpdateFrame{T: d.t, Payload: u.Payload})
	if err != nil {
		tb.Fatal(err)
	}
	if err := d.dv.Commit(d.t); err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkSecAggClient times one device's secure aggregation in a
// round of n = 30 devices (threshold 21, d = 39,700, the session's ring)
// against one nc device round of the same session (Prepare, the update
// frame, Commit, b = 32), interleaved: each iteration plays a whole
// round and times device 1's work on its five frames (decoding, its
// client's step, encoding its answer; the other devices' and the
// server's work is not timed), then one nc device round. Times are CPU
// time: the thread's natively, node's whole process under GOOS=js
// GOARCH=wasm. It also reports device 1's bytes beyond an nc device's,
// every frame counted whole: up, its five frames less the nc update
// frame the masked input replaces; down, the five frames it is sent
// (the round frame is the same in both modes). make bench prints them.
func BenchmarkSecAggClient(b *testing.B) {
	s := costSession(30)
	a, err := SessionSecAgg(s)
	if err != nil {
		b.Fatal(err)
	}
	nc := newNCDevice(b, ncOf(s))
	rng := mrand.New(mrand.NewPCG(1, 2))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cl, ncT, t0 int64
	var ncFrame int
	var r *costRound
	for i := 0; i < 3; i++ { // warm-up (V8's optimising tier under node)
		nc.step(b)
	}
	b.ResetTimer()
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		r = newCostRound(b, a, wire.SecAggRound(i+1, 1), rng)
		r.clock = func(id uint32, on bool) {
			switch {
			case id != 1:
			case on:
				t0 = cputime.CPU()
			default:
				cl += cputime.CPU() - t0
			}
		}
		if err := r.run(); err != nil {
			b.Fatal(err)
		}
		t1 := cputime.CPU()
		ncFrame = len(nc.step(b))
		ncT += cputime.CPU() - t1
	}
	n := float64(b.N)
	b.ReportMetric(float64(cl)/n/1e6, "client-cpu-ms")
	b.ReportMetric(float64(ncT)/n/1e6, "nc-cpu-ms")
	b.ReportMetric(float64(cl)/float64(ncT), "client/nc")
	b.ReportMetric(float64(r.up[1]-ncFrame), "up+B")
	b.ReportMetric(float64(r.down[1]), "down+B")
	b.ReportMetric(float64(a.Bits), "ring-bits")
}

// BenchmarkSecAggServer times the coordinator's side of one round of
// secure aggregation at n = 300 (threshold 210, d = 39,700): decoding
// every device frame, the server's five steps, encoding every answer,
// the unmasking (Sum) and the server half's ApplySum, against an nc
// round of the same cohort: decoding 300 update frames and Apply,
// interleaved. The devices' frames are recorded from one real round,
// set up once (its cost is not timed), and replayed into a fresh server
// each iteration. Two rounds: every device to the end ("all"), and 30%
// (90) gone after sharing their keys, before their masked input
// ("gone30": the server regenerates 90 x 210 pairwise masks, the costly
// case). Times are the process's CPU time: Sum spreads its work over
// every core.
func BenchmarkSecAggServer(b *testing.B) {
	for _, tc := range []struct {
		name string
		gone int
	}{{"all", 0}, {"gone30", 90}} {
		// Recorded once: b.Run calls the function again for each b.N.
		var r *costRound
		var setup float64
		b.Run(tc.name, func(b *testing.B) {
			if r == nil {
				t0 := cputime.Process()
				r = recordRound(b, 300, tc.gone)
				setup = float64(cputime.Process()-t0) / 1e9
			}
			benchServer(b, r)
			b.ReportMetric(setup, "setup-cpu-s")
		})
	}
}

// recordRound plays a round of n devices, gone of them leaving after
// sharing their keys, on every core, and keeps their frames.
func recordRound(b *testing.B, n, gone int) *costRound {
	a, err := SessionSecAgg(costSession(n))
	if err != nil {
		b.Fatal(err)
	}
	r := newCostRound(b, a, wire.SecAggRound(1, 1), mrand.New(mrand.NewPCG(5, 6)))
	r.parallel = true
	for i := range gone {
		r.gone[uint32(3*i+1)] = true
	}
	if err := r.run(); err != nil {
		b.Fatal(err)
	}
	r.clients, r.inputs = nil, nil // only the recorded frames are replayed
	return r
}

// benchServer times r's server side replayed against an nc round of the
// same cohort, interleaved.
func benchServer(b *testing.B, r *costRound) {
	s := costSession(r.p.MaxClients)
	a, err := SessionSecAgg(s)
	if err != nil {
		b.Fatal(err)
	}
	included := r.p.MaxClients - len(r.gone)
	srv, err := optim.NewServer(s, make([]float64, s.Dim), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	shared, ok := srv.(optim.SumApplier)
	if !ok {
		b.Fatal("the shared-noise server half takes no sum")
	}
	ncs := ncOf(s)
	ncSrv, err := optim.NewServer(ncs, make([]float64, s.Dim), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	frame := newNCDevice(b, ncs).step(b)
	sum := make([]float64, s.Dim)
	ups := make([]optim.Update, r.p.MaxClients)
	var tShared, tNC int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := cputime.Process()
		got, err := r.replay()
		if err != nil {
			b.Fatal(err)
		}
		for k, v := range got {
			sum[k] = float64(v) * a.Step
		}
		if err := shared.ApplySum(srv.Next().T, sum, included); err != nil {
			b.Fatal(err)
		}
		t1 := cputime.Process()
		t := ncSrv.Next().T
		for k := range ups {
			f, err := wire.DecodeUpdate(frame, wire.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			ups[k] = optim.Update{T: t, Payload: f.Payload}
		}
		if err := ncSrv.Apply(t, ups); err != nil {
			b.Fatal(err)
		}
		t2 := cputime.Process()
		tShared += t1 - t0
		tNC += t2 - t1
	}
	b.StopTimer()
	k := float64(b.N)
	b.ReportMetric(float64(tShared)/k/1e9, "server-cpu-s")
	b.ReportMetric(float64(tNC)/k/1e9, "nc-cpu-s")
	b.ReportMetric(float64(tShared)/float64(tNC), "server/nc")
}
