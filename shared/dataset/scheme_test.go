package dataset

import (
	"slices"
	"strings"
	"testing"
)

func TestParseScheme(t *testing.T) {
	tests := []struct {
		in   string
		want Scheme
		str  string
	}{
		{"iid", Scheme{Kind: SchemeIID}, "iid"},
		{" iid ", Scheme{Kind: SchemeIID}, "iid"},
		{"shards", Scheme{Kind: SchemeShards, ShardsPerDevice: 2}, "shards:2"},
		{"shards:5", Scheme{Kind: SchemeShards, ShardsPerDevice: 5}, "shards:5"},
		{"dirichlet:0.1", Scheme{Kind: SchemeDirichlet, Alpha: 0.1}, "dirichlet:0.1"},
		{"dirichlet:1e-3", Scheme{Kind: SchemeDirichlet, Alpha: 0.001}, "dirichlet:0.001"},
	}
	for _, tc := range tests {
		got, err := ParseScheme(tc.in)
		if err != nil || got != tc.want || got.String() != tc.str {
			t.Errorf("ParseScheme(%q) = %+v (%q), %v; want %+v (%q)", tc.in, got, got.String(), err, tc.want, tc.str)
		}
		again, err := ParseScheme(got.String())
		if err != nil || again != got {
			t.Errorf("ParseScheme(%q) = %+v, %v; want %+v", got.String(), again, err, got)
		}
	}
	for _, bad := range []string{"", "IID", "iid:1", "shards:0", "shards:x", "shards:-1", "dirichlet", "dirichlet:0", "dirichlet:-1", "dirichlet:NaN", "dirichlet:+Inf", "dirichlet:abc", "uniform"} {
		if s, err := ParseScheme(bad); err == nil {
			t.Errorf("ParseScheme(%q) = %+v, want an error", bad, s)
		}
	}
}

func TestSchemePartition(t *testing.T) {
	labels := balancedLabels(300, 10)
	for _, name := range []string{"iid", "shards:3", "dirichlet:0.5"} {
		sc, err := ParseScheme(name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sc.Partition(labels, 7, 9)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, got, len(labels), 7)
		var direct [][]int
		switch sc.Kind {
		case SchemeIID:
			direct, err = IID(len(labels), 7, 9)
		case SchemeShards:
			direct, err = Shards(labels, 7, 3, 9)
		case SchemeDirichlet:
			direct, err = Dirichlet(labels, 7, 0.5, 9)
		}
		if err != nil || !slices.EqualFunc(got, direct, slices.Equal) {
			t.Errorf("%s: Scheme.Partition differs from the direct call (%v)", name, err)
		}
	}
	if _, err := (Scheme{Kind: "nope"}).Partition(labels, 2, 1); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown kind: err = %v", err)
	}
	if _, err := (Scheme{Kind: SchemeIID}).Partition([]int{0, -1}, 1, 1); err == nil {
		t.Error("iid with a negative label: no error")
	}
}
