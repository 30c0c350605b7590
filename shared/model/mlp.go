package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"browserfl/shared/dataset"
)

// MLP is the one-hidden-layer network of SoteriaFL sec. 6.2:
// f(w; (x, y)) = CE(softmax(W2 sigmoid(W1 x + c1) + c2), y).
//
// Layout, following the paper's w = vec(W1, c1, W2, c2), matrices
// row-major:
//
//	W1  hidden x features  w[0 : H*F]              row j = weights of hidden unit j
//	c1  hidden             w[H*F : H*F+H]
//	W2  classes x hidden   w[H*F+H : H*F+H+C*H]     row c = weights of class c
//	c2  classes            w[H*F+H+C*H : d]
//
// with d = H*F + H + C*H + C (50,890 for 784-64-10).
type MLP struct {
	features, hidden, classes int
	in                        input
	ha, hb                    []float64 // hidden activations
	da, db                    []float64 // hidden pre-activation deltas
	za, zb                    []float64 // logits, then dz = p - onehot(y)
}

// NewMLP returns the network features-hidden-classes. It panics unless
// features >= 1, hidden >= 1 and classes >= 2 (use New for names and sizes
// from outside the program).
func NewMLP(features, hidden, classes int) *MLP {
	if features < 1 || hidden < 1 || classes < 2 {
		panic(fmt.Sprintf("model: NewMLP(%d, %d, %d): need features >= 1, hidden >= 1 and classes >= 2", features, hidden, classes))
	}
	return &MLP{
		features: features, hidden: hidden, classes: classes,
		in: newInput(features),
		ha: make([]float64, hidden), hb: make([]float64, hidden),
		da: make([]float64, hidden), db: make([]float64, hidden),
		za: make([]float64, classes), zb: make([]float64, classes),
	}
}

// Name returns "mlp".
func (m *MLP) Name() string { return NameMLP }

// Dim returns hidden*features + hidden + classes*hidden + classes.
func (m *MLP) Dim() int { return m.hidden*m.features + m.hidden + m.classes*m.hidden + m.classes }

// Features returns the number of input features.
func (m *MLP) Features() int { return m.features }

// Hidden returns the number of hidden units.
func (m *MLP) Hidden() int { return m.hidden }

// Classes returns the number of classes.
func (m *MLP) Classes() int { return m.classes }

// Clone returns an independent MLP of the same shape.
func (m *MLP) Clone() Model { return NewMLP(m.features, m.hidden, m.classes) }

// InitParams fills dst deterministically from seed: W1 and W2 entries are
// uniform on [-r, r] with r = sqrt(6/(fan_in+fan_out)) (Glorot and Bengio
// 2010; r = 0.0854 for W1 and 0.2887 for W2 at 784-64-10), biases are 0.
// The stream is math/rand/v2's PCG seeded with (seed, 0x6d6c70): the same
// seed gives the same vector on every platform. Initialisation is public,
// so it needs no cryptographic source.
func (m *MLP) InitParams(dst []float64, seed uint64) {
	mustLen("InitParams dst", dst, m.Dim())
	rng := rand.New(rand.NewPCG(seed, 0x6d6c70))
	w1, c1, w2, c2 := m.split(dst)
	fill := func(w []float64, fanIn, fanOut int) {
		r := math.Sqrt(6 / float64(fanIn+fanOut))
		for i := range w {
			w[i] = r * (2*rng.Float64() - 1)
		}
	}
	fill(w1, m.features, m.hidden)
	clear(c1)
	fill(w2, m.hidden, m.classes)
	clear(c2)
}

// split returns the four blocks of w (or of a gradient).
func (m *MLP) split(w []float64) (w1, c1, w2, c2 []float64) {
	hf := m.hidden * m.features
	ch := m.classes * m.hidden
	w1 = w[:hf]
	c1 = w[hf : hf+m.hidden]
	w2 = w[hf+m.hidden : hf+m.hidden+ch]
	c2 = w[hf+m.hidden+ch : hf+m.hidden+ch+m.classes]
	return
}

// forward writes the hidden activations into h and the logits into z.
func (m *MLP) forward(h, z, w []float64, sparse bool) {
	w1, c1, w2, c2 := m.split(w)
	F, H := m.features, m.hidden
	m.in.rows(h, w1, F, sparse)
	for j := range h {
		h[j] = sigmoid(h[j] + c1[j])
	}
	for c := range z {
		z[c] = c2[c] + dot(w2[c*H:(c+1)*H], h)
	}
}

// backward writes the pre-activation deltas
// delta_j = dL/da_j = (sum_c dz_c W2[c][j]) h_j (1 - h_j), given the
// activations h and dz in z.
func (m *MLP) backward(delta, h, z, w []float64) {
	_, _, w2, _ := m.split(w)
	H := m.hidden
	for j, hj := range h {
		g := 0.0
		for c, dz := range z {
			g += dz * w2[c*H+j]
		}
		delta[j] = g * hj * (1 - hj)
	}
}

// Loss returns the cross-entropy of w on s.
func (m *MLP) Loss(w []float64, s dataset.Sample) float64 {
	l, _ := m.lossPredict(w, s)
	return l
}

func (m *MLP) lossPredict(w []float64, s dataset.Sample) (float64, int) {
	m.check(w, s)
	sparse := m.in.load(s.X)
	m.forward(m.ha, m.za, w, sparse)
	k := argmax(m.za)
	return softmaxCE(m.za, s.Label), k
}

// Predict returns the class of largest logit (smallest index on ties).
func (m *MLP) Predict(w []float64, x []float32) int {
	mustLen("Predict w", w, m.Dim())
	mustLenX(x, m.features)
	sparse := m.in.load(x)
	m.forward(m.ha, m.za, w, sparse)
	return argmax(m.za)
}

// Grad writes the gradient at w on s into dst and returns the loss.
func (m *MLP) Grad(dst, w []float64, s dataset.Sample) float64 {
	m.check(w, s)
	mustLen("Grad dst", dst, m.Dim())
	sparse := m.in.load(s.X)
	m.forward(m.ha, m.za, w, sparse)
	loss := softmaxCE(m.za, s.Label)
	m.backward(m.da, m.ha, m.za, w)
	// w is not read after this point, so dst may alias it.
	// Output layer: dW2[c][j] = dz_c h_j, dc2 = dz.
	_, _, g2, gc2 := m.split(dst)
	H := m.hidden
	for c, dz := range m.za {
		scaleTo(g2[c*H:(c+1)*H], dz, m.ha)
		gc2[c] = dz
	}
	m.writeHidden(dst, m.da, sparse)
	return loss
}

// GradDiff writes a*grad f(wa; s) - b*grad f(wb; s) into dst in one pass
// and returns f(wa; s) and f(wb; s).
func (m *MLP) GradDiff(dst []float64, a float64, wa []float64, b float64, wb []float64, s dataset.Sample) (lossA, lossB float64) {
	m.check(wa, s)
	mustLen("GradDiff wb", wb, m.Dim())
	mustLen("GradDiff dst", dst, m.Dim())
	sparse := m.in.load(s.X)
	m.forward(m.ha, m.za, wa, sparse)
	m.forward(m.hb, m.zb, wb, sparse)
	lossA = softmaxCE(m.za, s.Label)
	lossB = softmaxCE(m.zb, s.Label)
	m.backward(m.da, m.ha, m.za, wa)
	m.backward(m.db, m.hb, m.zb, wb)
	// wa and wb are not read after this point, so dst may alias either.
	_, _, g2, gc2 := m.split(dst)
	H := m.hidden
	for c := range m.za {
		da, db := a*m.za[c], b*m.zb[c]
		r := g2[c*H : (c+1)*H]
		for j := range r {
			r[j] = da*m.ha[j] - db*m.hb[j]
		}
		gc2[c] = da - db
	}
	for j := range m.da {
		m.da[j] = a*m.da[j] - b*m.db[j]
	}
	m.writeHidden(dst, m.da, sparse)
	return lossA, lossB
}

// writeHidden writes dW1[j] = delta_j x and dc1 = delta.
func (m *MLP) writeHidden(dst, delta []float64, sparse bool) {
	g1, gc1, _, _ := m.split(dst)
	F := m.features
	for j, d := range delta {
		m.in.row(g1[j*F:(j+1)*F], d, sparse)
		gc1[j] = d
	}
}

func (m *MLP) check(w []float64, s dataset.Sample) {
	mustLen("w", w, m.Dim())
	mustLenX(s.X, m.features)
	mustLabel(s.Label, m.classes)
}
