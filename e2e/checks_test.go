package e2e

import (
	"encoding/binary"
	"math"
	"testing"

	"browserfl/shared/dataset"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/optim/algo"
	"browserfl/shared/wire"
)

// sampleIndex holds byte patterns of local samples: every image row
// (28 pixels) with at least minInk nonzero pixels, as the uint8 bytes a
// stored or picked IDX file holds and as the little-endian float32 values
// (pixel/255) the model reads. A frame that contains any of them carries
// a sample's bytes.
type sampleIndex struct {
	u8  map[string]bool
	f32 map[string]bool
}

// minInk keeps near-empty rows (all zeros, or one stray pixel) out of the
// index: such a row would match any run of zeros in a frame.
const minInk = 8

func newSampleIndex(sets []dataset.Set) sampleIndex {
	ix := sampleIndex{u8: map[string]bool{}, f32: map[string]bool{}}
	for _, s := range sets {
		for _, smp := range s.Samples {
			for r := 0; r+28 <= len(smp.X); r += 28 {
				row := smp.X[r : r+28]
				ink := 0
				u8 := make([]byte, 28)
				f32 := make([]byte, 4*28)
				for j, v := range row {
					if v > 0 {
						ink++
					}
					u8[j] = byte(math.Round(float64(v) * 255))
					binary.LittleEndian.PutUint32(f32[4*j:], math.Float32bits(v))
				}
				if ink >= minInk {
					ix.u8[string(u8)] = true
					ix.f32[string(f32)] = true
				}
			}
		}
	}
	return ix
}

// find returns the offset of the first sample pattern in b, or -1.
func (ix sampleIndex) find(b []byte) int {
	for i := 0; i+28 <= len(b); i++ {
		if ix.u8[string(b[i:i+28])] {
			return i
		}
		if i+112 <= len(b) && ix.f32[string(b[i:i+112])] {
			return i
		}
	}
	return -1
}

// TestSampleIndexFinds shows the frame check can fail: a frame that
// carries one row of a sample, raw or as float32, is caught.
func TestSampleIndexFinds(t *testing.T) {
	x := make([]float32, 784)
	for i := 300; i < 330; i++ {
		x[i] = float32(i%7+1) / 255
	}
	set := dataset.Set{Samples: []dataset.Sample{{X: x, Label: 3}}, Features: 784, Classes: 10}
	ix := newSampleIndex([]dataset.Set{set})
	raw := append([]byte("prefix"), make([]byte, 28)...)
	for j := 0; j < 28; j++ {
		raw[6+j] = byte(math.Round(float64(x[308+j]) * 255))
	}
	f := make([]byte, 3+112)
	for j := 0; j < 28; j++ {
		binary.LittleEndian.PutUint32(f[3+4*j:], math.Float32bits(x[308+j]))
	}
	tests := []struct {
		name string
		b    []byte
		want int
	}{
		{"raw row", raw, 6},
		{"float32 row", f, 3},
		{"zeros", make([]byte, 4096), -1},
	}
	for _, tc := range tests {
		if got := ix.find(tc.b); got != tc.want {
			t.Errorf("%s: find = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// checkFrames asserts that no outgoing websocket frame of any page
// (pages[i] holds page i's frames) contains any page's sample bytes, and
// that every page sent updates at all.
func checkFrames(t *testing.T, pages [][]frame, sets []dataset.Set) {
	t.Helper()
	ix := newSampleIndex(sets)
	for i, frames := range pages {
		var text, bin, bytes int
		for k, f := range frames {
			if f.Opcode == 1 {
				text++
			} else {
				bin++
			}
			bytes += len(f.Data)
			if off := ix.find(f.Data); off >= 0 {
				t.Errorf("page %d: outgoing frame %d (opcode %d, %d bytes) contains a local sample's pixels at offset %d", i, k, f.Opcode, len(f.Data), off)
			}
		}
		t.Logf("page %d: %d outgoing frames (%d text, %d binary, %d bytes), none with sample bytes", i, len(frames), text, bin, bytes)
		if bin == 0 {
			t.Errorf("page %d sent no update frames: the capture saw nothing", i)
		}
	}
}

// checkNoised asserts that every update the scripted coordinator received
// is noised. An un-noised update is the mean of b clipped corrections, so
// its norm is at most S. A noised one is s + y - Y with y ~ N(0, sigma_n^2
// I_d), sigma_n = algo.NCSigma(p, n) for the device's n-th release, and
// Y independent of y (the previous committed noise, or 0), so ||y - Y||^2
// is at least sigma_n^2 times a chi-square with d degrees of freedom
// (stochastically). For d = 7850 the chi-square's standard deviation is
// sqrt(2d) = 125.3 and P(chi2_d < d - 6 sqrt(2d)) < 1e-8 (its lower tail
// is lighter than the normal's, 9.9e-10 at 6 sigma); over at most 200
// updates the false-failure probability is below 2e-6. So every update
// must have norm >= sigma_n sqrt(d - 6 sqrt(2d)) - S, which for this
// session is about 1.6 > S = 1: an un-noised update cannot pass.
// The sent count n undercounts N_i only if a release was prepared and
// never sent, which makes sigma_n (increasing in n) a lower value: the
// bound stays valid.
func checkNoised(t *testing.T, ups []sentUpdate, p wire.SessionParams) {
	t.Helper()
	op := p
	d := float64(p.Dim)
	n := map[string]int{}
	if len(ups) == 0 {
		t.Fatal("no updates to check")
	}
	var minRatio = math.Inf(1)
	for _, u := range ups {
		n[u.Device]++
		sigma := algo.NCSigma(op, n[u.Device])
		floor := sigma*math.Sqrt(d-6*math.Sqrt(2*d)) - op.S()
		if floor <= op.S() {
			t.Fatalf("test design: noise floor %.3g does not exceed S = %.3g", floor, op.S())
		}
		norm := mechanism.Norm(u.Vec)
		minRatio = math.Min(minRatio, norm/floor)
		if norm < floor {
			t.Errorf("device %s round %d: update norm %.4g below the noise floor %.4g: not noised as promised", u.Device, u.T, norm, floor)
		}
	}
	t.Logf("%d updates, all noised: smallest norm / floor = %.3f", len(ups), minRatio)
}

// checkInvariant asserts the exactly-once noise state of each page from
// its stored state: the messages the coordinator included telescope,
// sum_t (s_t + y_t - Y_{t-1}) = sum_t s_t + Y_i, so
// || sum of included messages - Y_i || <= (included rounds) * S, while a
// lost or duplicated noise state would leave a Gaussian vector of norm
// about sigma sqrt(d) > 2.7 per missing term. The float32 wire encoding
// adds at most 2^-24 relative error per coordinate; 1e-3 per message
// covers it. ups are the updates the pages sent (each page's own frames);
// included says whether the coordinator included device id's update of
// round t.
func checkInvariant(t *testing.T, ups []sentUpdate, included func(t int, id string) bool, bs []*browser, code string, p wire.SessionParams) {
	t.Helper()
	op := p
	for i, b := range bs {
		st, dv := storedDevice(t, b, code, p)
		in, ok := dv.(optim.Introspector)
		if !ok {
			t.Fatal("device half has no Introspector")
		}
		y := make([]float64, p.Dim)
		if err := in.Noise(y); err != nil {
			t.Fatal(err)
		}
		// A device that sent round t twice (its first update was lost
		// with a coordinator that died mid-round, decided "excluded" on
		// resume, and the round was assigned again) can only have had the
		// last one included: keep the last update per round, in sending
		// order.
		last := map[int][]float64{}
		for _, u := range ups {
			if u.Device == st.DeviceID {
				last[u.T] = u.Vec
			}
		}
		sum := make([]float64, p.Dim)
		k := 0
		for r, vec := range last {
			if included(r, st.DeviceID) {
				k++
				for j, v := range vec {
					sum[j] += v
				}
			}
		}
		for j := range sum {
			sum[j] -= y[j]
		}
		gap := mechanism.Norm(sum)
		bound := float64(k)*op.S() + 1e-3*float64(k)
		led := dv.(optim.Accountant).Ledger()
		t.Logf("page %d (%s): %d included, ||sum - Y_i|| = %.4g <= %.4g; ledger rho %.4g", i, st.DeviceID, k, gap, bound, led.Rho())
		if k != st.Included {
			var incl, sent []int
			for r := 1; r <= p.Rounds; r++ {
				if included(r, st.DeviceID) {
					incl = append(incl, r)
				}
				if _, ok := last[r]; ok {
					sent = append(sent, r)
				}
			}
			t.Logf("page %d: rounds the coordinator included %v; rounds with a captured update %v", i, incl, sent)
			t.Errorf("page %d: coordinator included %d of its updates, the page counted %d", i, k, st.Included)
		}
		if gap > bound {
			t.Errorf("page %d: noise-cancellation invariant broken: ||sum of included messages - Y_i|| = %.4g > %.4g", i, gap, bound)
		}
	}
}

// frameUpdates decodes the update frames a page sent (as captured by
// the DevTools protocol) and labels them with device id.
func frameUpdates(t *testing.T, frames []frame, id string, dim int) []sentUpdate {
	t.Helper()
	var out []sentUpdate
	for _, f := range frames {
		if f.Opcode != 2 {
			continue
		}
		u, err := wire.DecodeUpdate(f.Data, wire.Limits{MaxBytes: 8 << 20})
		if err != nil {
			t.Errorf("device %s sent a binary frame that is not an update: %v", id, err)
			continue
		}
		vec := make([]float64, dim)
		if err := mechanism.Decode(vec, u.Payload); err != nil {
			t.Errorf("device %s round %d: payload: %v", id, u.T, err)
			continue
		}
		out = append(out, sentUpdate{Device: id, T: u.T, Vec: vec})
	}
	return out
}

// taskReport is what the Long Tasks API and the page's performance
// entries say about one page, read before the test itself evaluates
// anything heavy in the page (reading IndexedDB from the test runs on the
// page's main thread and would show up as a long task of its own).
type taskReport struct {
	tasks []longTask
	train float64 // the "fl-train" mark
	parts string  // the page's own measures: prepare, render, save
}

func readTasks(t testing.TB, b *browser) taskReport {
	t.Helper()
	lt, err := b.longTasks()
	if err != nil {
		t.Fatal(err)
	}
	train, err := b.mark("fl-train")
	if err != nil {
		t.Fatal(err)
	}
	var parts string
	b.eval(`["fl-prepare", "fl-render", "fl-save"].map(n => n + " max " + Math.round(Math.max(0, ...performance.getEntriesByName(n).map(e => e.duration))) + " ms").join(", ")`, &parts)
	return taskReport{tasks: lt, train: train, parts: parts}
}

// reportLongTasks logs the longest tasks before and after training started
// (the Long Tasks API reports every task over 50 ms; the goal is none
// over 200 ms during training). It asserts nothing: wall-clock durations
// include time the page waited for a CPU core, and a test must not fail
// because the machine is busy.
func reportLongTasks(t *testing.T, reps []taskReport) {
	t.Helper()
	for i, r := range reps {
		var worstStart, worstTrain float64
		var nTrain int
		for _, e := range r.tasks {
			if e.Start < r.train {
				worstStart = math.Max(worstStart, e.Duration)
				continue
			}
			nTrain++
			worstTrain = math.Max(worstTrain, e.Duration)
		}
		// A measurement, not an assertion: task lengths depend on how
		// busy the machine is (tests must not fail on timing). The
		// responsiveness goal and its measurement are in
		// docs/browser.md and docs/performance.md.
		t.Logf("page %d: start-up: longest task %.0f ms; training: %d long tasks (> 50 ms), longest %.0f ms (%s)", i, worstStart, nTrain, worstTrain, r.parts)
	}
}
