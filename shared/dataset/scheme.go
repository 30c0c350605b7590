package dataset

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The partition scheme names accepted by ParseScheme.
const (
	SchemeIID       = "iid"
	SchemeShards    = "shards"
	SchemeDirichlet = "dirichlet"
)

// DefaultShardsPerDevice is the k of "shards" without a parameter: two
// shards per device, as in McMahan et al. (2017).
const DefaultShardsPerDevice = 2

// Scheme names a partitioner and its parameter, so that a command-line
// flag or a session configuration can choose one.
type Scheme struct {
	Kind            string  // SchemeIID, SchemeShards or SchemeDirichlet
	ShardsPerDevice int     // k for SchemeShards (>= 1)
	Alpha           float64 // alpha for SchemeDirichlet (> 0)
}

// ParseScheme parses "iid", "shards", "shards:K" or "dirichlet:ALPHA"
// (e.g. "shards:2", "dirichlet:0.1"); String is its inverse.
func ParseScheme(s string) (Scheme, error) {
	kind, param, hasParam := strings.Cut(strings.TrimSpace(s), ":")
	switch kind {
	case SchemeIID:
		if hasParam {
			return Scheme{}, fmt.Errorf("dataset: partition scheme %q: iid takes no parameter", s)
		}
		return Scheme{Kind: SchemeIID}, nil
	case SchemeShards:
		k := DefaultShardsPerDevice
		if hasParam {
			var err error
			if k, err = strconv.Atoi(param); err != nil || k < 1 {
				return Scheme{}, fmt.Errorf("dataset: partition scheme %q: shards per device must be an integer >= 1", s)
			}
		}
		return Scheme{Kind: SchemeShards, ShardsPerDevice: k}, nil
	case SchemeDirichlet:
		if !hasParam {
			return Scheme{}, fmt.Errorf("dataset: partition scheme %q: dirichlet needs alpha, e.g. dirichlet:0.1", s)
		}
		a, err := strconv.ParseFloat(param, 64)
		if err != nil || !(a > 0) || math.IsInf(a, 1) {
			return Scheme{}, fmt.Errorf("dataset: partition scheme %q: alpha must be a finite number > 0", s)
		}
		return Scheme{Kind: SchemeDirichlet, Alpha: a}, nil
	}
	return Scheme{}, fmt.Errorf("dataset: unknown partition scheme %q, want iid, shards[:K] or dirichlet:ALPHA", s)
}

// String returns the scheme in ParseScheme's syntax.
func (sc Scheme) String() string {
	switch sc.Kind {
	case SchemeShards:
		return fmt.Sprintf("%s:%d", SchemeShards, sc.ShardsPerDevice)
	case SchemeDirichlet:
		return fmt.Sprintf("%s:%s", SchemeDirichlet, strconv.FormatFloat(sc.Alpha, 'g', -1, 64))
	}
	return sc.Kind
}

// Partition splits the samples with these labels across m devices with
// the scheme's partitioner (IID, Shards or Dirichlet) and seed.
func (sc Scheme) Partition(labels []int, m int, seed uint64) ([][]int, error) {
	switch sc.Kind {
	case SchemeIID:
		if _, err := checkLabels(labels); err != nil {
			return nil, err
		}
		return IID(len(labels), m, seed)
	case SchemeShards:
		return Shards(labels, m, sc.ShardsPerDevice, seed)
	case SchemeDirichlet:
		return Dirichlet(labels, m, sc.Alpha, seed)
	}
	return nil, fmt.Errorf("dataset: unknown partition scheme %q", sc.Kind)
}
