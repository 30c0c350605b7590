package bus_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"browserfl/coordinator/bus"
)

// TestBusKeyFiles: the session process's key files are its own (0600 in
// a 0700 directory), kept across restarts (an edge's file stays valid),
// one per named edge; a key file others can read, or a bad edge id, is
// refused.
func TestBusKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	k1, err := bus.EnsureKeys(dir, []string{"e1", "e2"})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("key directory: %v, mode %v, want 0700", err, fi.Mode().Perm())
	}
	files := []string{bus.SessionSeedFile(dir), bus.EdgeSeedFile(dir, "e1"), bus.EdgeSeedFile(dir, "e2")}
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, mode %v, want 0600", f, err, fi.Mode().Perm())
		}
	}
	if k1.Edges["e1"] == k1.Edges["e2"] || k1.Edges["e1"] == k1.Session {
		t.Fatal("two components share a key")
	}
	if pub, err := bus.SeedPublicKey(bus.EdgeSeedFile(dir, "e1")); err != nil || pub != k1.Edges["e1"] {
		t.Fatalf("e1's file holds %q (%v), want %q", pub, err, k1.Edges["e1"])
	}
	k2, err := bus.EnsureKeys(dir, []string{"e1", "e3"})
	if err != nil {
		t.Fatal(err)
	}
	if k2.Session != k1.Session || k2.Edges["e1"] != k1.Edges["e1"] {
		t.Fatal("a restart replaced existing keys")
	}
	if _, ok := k2.Edges["e2"]; ok || k2.Edges["e3"] == "" {
		t.Fatalf("edges after the restart: %v, want e1 and e3", k2.Edges)
	}
	if err := os.Chmod(bus.EdgeSeedFile(dir, "e1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, edges := range map[string][]string{
		"a key file others can read":          {"e1"},
		"an edge id that is no subject token": {"e.*"},
		"an edge named twice":                 {"e3", "e3"},
	} {
		if _, err := bus.EnsureKeys(dir, edges); !errors.Is(err, bus.ErrKeys) {
			t.Errorf("%s: %v, want ErrKeys", name, err)
		}
	}
	if _, err := bus.SeedPublicKey(bus.EdgeSeedFile(dir, "e1")); !errors.Is(err, bus.ErrKeys) {
		t.Errorf("a readable key file was loaded: %v", err)
	}
}
