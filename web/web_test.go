package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// TestEmbedded: every file of this directory on disk is embedded but the
// device build (*.wasm at the top, served from its compressed forms),
// and nothing else is; HasWasm says whether those forms are.
func TestEmbedded(t *testing.T) {
	onDisk := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !strings.HasPrefix(d.Name(), ".") { // hidden files of precompressed/ are not embedded, as go:embed says
			onDisk[filepath.ToSlash(p)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]bool{}
	if err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded[p] = true
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for p := range onDisk {
		isBuild := path.Ext(p) == ".wasm" && !strings.Contains(p, "/")
		if embedded[p] == isBuild {
			t.Errorf("%s: embedded %v, want %v", p, embedded[p], !isBuild)
		}
	}
	for p := range embedded {
		if !onDisk[p] {
			t.Errorf("%s embedded but not on disk", p)
		}
	}
	// A device build on disk is served only through its forms: they
	// must be its own, named by its hash (a build made without make
	// wasm's precompress step would leave the old program served).
	if raw, err := os.ReadFile("app.wasm"); err == nil {
		sum := sha256.Sum256(raw)
		name := "precompressed/app." + hex.EncodeToString(sum[:])[:12] + ".wasm"
		for _, enc := range []string{".br", ".gz"} {
			if _, err := os.Stat(name + enc); err != nil {
				t.Errorf("app.wasm's %s form %s: %v (run make wasm)", enc, name+enc, err)
			}
		}
	}
	br, _ := filepath.Glob("precompressed/app.*.wasm.br")
	gz, _ := filepath.Glob("precompressed/app.*.wasm.gz")
	if want := len(br) == 1 && len(gz) == 1; HasWasm() != want {
		t.Errorf("HasWasm() = %v, forms on disk %v %v", HasWasm(), br, gz)
	}
}

// TestHasWasm: the device build counts as embedded only as the two
// forms of one file.
func TestHasWasm(t *testing.T) {
	const a, b = "precompressed/app.0123456789ab.wasm", "precompressed/app.ba9876543210.wasm"
	for _, c := range []struct {
		name  string
		files []string
		want  bool
	}{
		{"both forms of one file", []string{a + ".br", a + ".gz"}, true},
		{"none", nil, false},
		{"brotli only", []string{a + ".br"}, false},
		{"gzip only", []string{a + ".gz"}, false},
		{"forms of two files", []string{a + ".br", b + ".gz"}, false},
		{"two sets", []string{a + ".br", a + ".gz", b + ".br", b + ".gz"}, false},
	} {
		fsys := fstest.MapFS{"app.js": {Data: []byte("boot()")}}
		for _, f := range c.files {
			fsys[f] = &fstest.MapFile{Data: []byte("x")}
		}
		if got := hasWasm(fsys); got != c.want {
			t.Errorf("%s: hasWasm = %v, want %v", c.name, got, c.want)
		}
	}
}
