package secagg

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Errors wrapped by every refusal, to be matched with errors.Is.
var (
	// ErrMalformed: bytes or a message that this protocol does not allow
	// (sizes, counts, ids, field values).
	ErrMalformed = errors.New("secagg: malformed message")
	// ErrWrongRound: a message of another session or round (a replay).
	ErrWrongRound = errors.New("secagg: message of another session or round")
	// ErrBelowThreshold: fewer than the threshold t of clients at a step;
	// the round cannot be unmasked.
	ErrBelowThreshold = errors.New("secagg: fewer clients than the threshold")
	// ErrSignature: a signature that does not verify.
	ErrSignature = errors.New("secagg: bad signature")
	// ErrDecrypt: an encrypted share that does not decrypt (tampered, or
	// not meant for this client).
	ErrDecrypt = errors.New("secagg: share does not decrypt")
	// ErrSplitView: the server's view of who survived disagrees with the
	// one this client signed, or it asks for both shares of one client.
	ErrSplitView = errors.New("secagg: inconsistent survivor sets")
	// ErrState: a step called out of order or twice.
	ErrState = errors.New("secagg: step out of order")
	// ErrUnknownClient: a client id that is not in the directory or not
	// in the set the step allows.
	ErrUnknownClient = errors.New("secagg: unknown client")
	// ErrDuplicate: a client's message received twice, or a client listed
	// twice.
	ErrDuplicate = errors.New("secagg: duplicate")
	// ErrBadShare: a reconstructed secret that does not match its
	// commitment or public key.
	ErrBadShare = errors.New("secagg: reconstructed secret does not match")
	// ErrRange: a parameter or input outside the range the ring allows.
	ErrRange = errors.New("secagg: out of range")
)

// Limits on what a message may carry. A decoder refuses larger counts
// before allocating anything.
const (
	// MaxClients is the most clients a round may list.
	MaxClients = 1 << 14
	// MaxDim is the longest input vector.
	MaxDim = 1 << 26
)

// SessionID names a session. With the round number it is bound into
// every message, key derivation and signature.
type SessionID [16]byte

// Params are the public parameters of one round, the same at the server
// and at every client.
type Params struct {
	Session SessionID
	Round   uint64
	// Threshold is t: the fewest clients at every step. No sum of fewer
	// than t inputs is unmasked. It must exceed MaxClients/2, so that a
	// server that shows two survivor sets cannot collect t signatures on
	// each (docs/secagg.md, the consistency round).
	Threshold int
	// MaxClients is the most clients the round may list (the cohort).
	MaxClients int
	// Dim is the length of every input vector.
	Dim int
	// MaxAbs bounds every input coordinate: |x_i| <= MaxAbs.
	MaxAbs int64
	// Degree is k of the sparse SecAgg+ graph: each client shares with
	// and masks against k neighbours (even, at least 2; only when
	// MaxClients exceeds SparseAbove). 0, the default, is the complete
	// graph. docs/secagg.md says what it does and does not guarantee.
	Degree int
	// NeighbourThreshold is tau, the shares of a client's k + 1 that
	// reconstruct its secrets with the sparse graph (in [2, k+1]); 0
	// with the complete graph. ChooseSparse gives k and tau.
	NeighbourThreshold int
}

// Validate checks the parameters.
func (p Params) Validate() error {
	switch {
	case p.MaxClients < 2 || p.MaxClients > MaxClients:
		return fmt.Errorf("secagg: max clients %d not in [2, %d]: %w", p.MaxClients, MaxClients, ErrRange)
	case p.Threshold <= p.MaxClients/2 || p.Threshold > p.MaxClients:
		return fmt.Errorf("secagg: threshold %d not in (%d/2, %d]: %w", p.Threshold, p.MaxClients, p.MaxClients, ErrRange)
	case p.Dim < 1 || p.Dim > MaxDim:
		return fmt.Errorf("secagg: dimension %d not in [1, %d]: %w", p.Dim, MaxDim, ErrRange)
	}
	if _, err := RingBits(p.MaxAbs, p.MaxClients); err != nil {
		return fmt.Errorf("secagg: params: %w", err)
	}
	return p.validateGraph()
}

// validateGraph checks the sparse graph's parameters.
func (p Params) validateGraph() error {
	k, tau := p.Degree, p.NeighbourThreshold
	switch {
	case k == 0 && tau == 0:
		return nil
	case k == 0:
		return fmt.Errorf("secagg: neighbour threshold %d without a sparse graph: %w", tau, ErrRange)
	case p.MaxClients <= SparseAbove:
		return fmt.Errorf("secagg: sparse graph for a cohort of %d, at most %d keep the complete graph: %w", p.MaxClients, SparseAbove, ErrRange)
	case k < 2 || k%2 != 0 || k >= p.MaxClients-1:
		return fmt.Errorf("secagg: degree %d not even in [2, %d): %w", k, p.MaxClients-1, ErrRange)
	case tau < 2 || tau > k+1:
		return fmt.Errorf("secagg: neighbour threshold %d not in [2, %d]: %w", tau, k+1, ErrRange)
	}
	return nil
}

// Bits is the ring's k: inputs and masks live in Z_(2^k).
func (p Params) Bits() int {
	k, err := RingBits(p.MaxAbs, p.MaxClients)
	if err != nil {
		return 0
	}
	return k
}

// RingBits returns the k, 32 or 64, of the smallest ring Z_(2^k) in which
// no sum of at most n inputs each with |x| <= maxAbs wraps: n*maxAbs <=
// 2^(k-1) - 1, so that the signed decoding of the sum modulo 2^k is the
// sum itself (docs/secagg.md, the ring bound).
func RingBits(maxAbs int64, n int) (int, error) {
	if maxAbs < 0 || n < 1 {
		return 0, fmt.Errorf("secagg: ring for %d inputs of magnitude %d: %w", n, maxAbs, ErrRange)
	}
	hi, lo := bits.Mul64(uint64(n), uint64(maxAbs))
	switch {
	case hi == 0 && lo <= math.MaxInt32:
		return 32, nil
	case hi == 0 && lo <= math.MaxInt64:
		return 64, nil
	}
	return 0, fmt.Errorf("secagg: %d inputs of magnitude %d overflow a 64-bit ring: %w", n, maxAbs, ErrRange)
}

// ringMask is 2^k - 1.
func ringMask(k int) uint64 {
	if k == 64 {
		return math.MaxUint64
	}
	return 1<<uint(k) - 1
}

// encode writes x in two's complement modulo 2^k.
func encode(x int64, k int) uint64 { return uint64(x) & ringMask(k) }

// decode reads r in [0, 2^k) as the signed integer in
// [-2^(k-1), 2^(k-1)) congruent to it modulo 2^k.
func decode(r uint64, k int) int64 {
	if k == 64 {
		return int64(r)
	}
	if r >= 1<<uint(k-1) {
		return int64(r) - 1<<uint(k)
	}
	return int64(r)
}
