package table

import (
	"strings"
	"testing"
)

// TestEveryMutationInPlace checks the whole list against the tree (two
// directories up): every snippet occurs exactly once in its file, every
// package named is there, and no two mutations share a name. It fails as
// soon as a change moves the code a mutation points to, before `make
// mutants` runs.
func TestEveryMutationInPlace(t *testing.T) {
	names := map[string]bool{}
	for _, m := range All {
		if m.Name == "" || m.Why == "" || len(m.Pkgs) == 0 {
			t.Errorf("%q: a mutation needs a name, a why and the tests that kill it", m.Name)
		}
		if names[m.Name] {
			t.Errorf("%s: two mutations of this name", m.Name)
		}
		names[m.Name] = true
		if err := m.Check("../../.."); err != nil {
			t.Error(err)
		}
	}
	if len(All) < 250 {
		t.Errorf("%d mutations: the list lost some", len(All))
	}
}

// TestCheckRefuses plants the faults Check must find.
func TestCheckRefuses(t *testing.T) {
	ok := Mutation{Name: "x", Why: "y", File: "scripts/mutants/table/check.go", Old: "package table", New: "package tablex", Pkgs: []string{"./scripts/mutants/table/"}}
	if err := ok.Check("../../.."); err != nil {
		t.Fatalf("a good mutation: %v", err)
	}
	for _, c := range []struct {
		name string
		m    func(Mutation) Mutation
		want string
	}{
		{"twice", func(m Mutation) Mutation { m.Old = "return"; return m }, "want exactly once"},
		{"absent", func(m Mutation) Mutation { m.Old = "no such text in the file"; return m }, "occurs 0 times"},
		{"no change", func(m Mutation) Mutation { m.New = m.Old; return m }, "changes nothing"},
		{"more twice", func(m Mutation) Mutation { m.More = []Edit{{"return", "x"}}; return m }, "want exactly once"},
		{"elsewhere absent", func(m Mutation) Mutation {
			m.Elsewhere = []FileEdit{{"scripts/mutants/main.go", "no such text", "x"}}
			return m
		}, "occurs 0 times"},
		{"no file", func(m Mutation) Mutation { m.File = "no/such/file.go"; return m }, "no such file"},
		{"no package", func(m Mutation) Mutation { m.Pkgs = []string{"./no/such/pkg/", "-run", "X"}; return m }, "not a directory"},
	} {
		err := c.m(ok).Check("../../..")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
