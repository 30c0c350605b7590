package secagg

import (
	"crypto/ed25519"
	"math/rand/v2"
	"runtime"
	"testing"

	"browserfl/internal/cputime"
)

// BenchmarkClientRound times one client's work in a round of n = 30
// clients, t = 21, d = 39,700, ring of 32 bits: its five steps, from its
// fresh keys to its unmasking shares (the other clients' and the
// server's work is not timed). cpu-ms/round is its CPU time: the thread's
// natively, node's whole process under GOOS=js GOARCH=wasm.
func BenchmarkClientRound(b *testing.B) {
	const n, thr, d = 30, 21, 39700
	dir, keys := identities(b, n)
	clientRound(b, testParams(n, thr, d, 1<<26, 1), dir, keys)
}

// BenchmarkClientRound300 is BenchmarkClientRound at n = 300, t = 210,
// with the complete graph and with the sparse graph of ChooseSparse
// (k = 52, tau = 18).
func BenchmarkClientRound300(b *testing.B) {
	const n, thr, d = 300, 210, 39700
	dir, keys := identities(b, n)
	for _, k := range []int{0, 52} {
		b.Run(graphName(k), func(b *testing.B) {
			p := testParams(n, thr, d, 1<<22, 1)
			if k > 0 {
				p.Degree, p.NeighbourThreshold = k, 18
			}
			clientRound(b, p, dir, keys)
		})
	}
}

func graphName(k int) string {
	if k == 0 {
		return "complete"
	}
	return "sparse"
}

// clientRound times client 1's five steps in rounds of p.
func clientRound(b *testing.B, p Params, dir Directory, keys map[uint32]ed25519.PrivateKey) {
	rng := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cpu, t0 int64
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		p.Round = uint64(i + 1)
		h := newHarness(b, p, dir, keys, rng)
		h.clock = func(id uint32, on bool) {
			switch {
			case id != 1:
			case on:
				b.StartTimer()
				t0 = cputime.CPU()
			default:
				cpu += cputime.CPU() - t0
				b.StopTimer()
			}
		}
		if _, err := h.run(); err != nil {
			b.Fatal(err)
		}
		if len(h.clientErr) != 0 {
			b.Fatal(h.clientErr)
		}
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/round")
}

// BenchmarkServerUnmask times the server's last step, Sum, at n = 300,
// t = 210, d = 39,700, with 30% of the clients (90) gone after sharing
// their keys and before their masked input: 210 self-mask seeds and 90
// masking keys reconstructed, 210 self-mask streams and, with the
// complete graph, 210 x 90 pairwise streams removed; with the sparse
// graph (k = 52, tau = 18) only those of the dropped clients' surviving
// neighbours. cpu-ms/op is the process's CPU time during Sum, which
// spreads the pairwise masks over every core.
func BenchmarkServerUnmask(b *testing.B) {
	const n = 300
	dir, keys := identities(b, n)
	for _, k := range []int{0, 52} {
		b.Run(graphName(k), func(b *testing.B) {
			p := testParams(n, 210, 39700, 1<<22, 1)
			if k > 0 {
				p.Degree, p.NeighbourThreshold = k, 18
			}
			serverUnmask(b, p, dir, keys)
		})
	}
}

func serverUnmask(b *testing.B, p Params, dir Directory, keys map[uint32]ed25519.PrivateKey) {
	const gone = 90
	h := newHarness(b, p, dir, keys, rand.New(rand.NewPCG(1, 2)))
	for i := range gone {
		h.drop[uint32(3*i+1)] = stepMask
	}
	for _, step := range []func() error{h.step0, h.step1, h.step2, h.step3, h.step4} {
		if err := step(); err != nil {
			b.Fatal(err)
		}
	}
	h.seen = nil
	want := h.plainSum(h.server.Included())
	var cpu int64
	ops := 0
	for b.Loop() {
		t0 := cputime.Process()
		got, err := h.server.Sum()
		cpu += cputime.Process() - t0
		ops++
		if err != nil {
			b.Fatal(err)
		}
		if err := equalSums(got, want); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu)/float64(ops)/1e6, "cpu-ms/op")
	streams := len(h.server.u3) * len(h.server.dropped())
	if g := h.server.g; g != nil {
		streams = 0
		for _, v := range h.server.dropped() {
			streams += len(intersect(g.nbrs[v], h.server.u3))
		}
	}
	b.ReportMetric(float64(streams), "pair-streams")
}
