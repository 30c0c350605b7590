package web

import (
	"embed"
	"io/fs"
	"strings"
)

// files holds every file of this directory that exists at build time
// but the device build app.wasm, whose name ends in "m" (the pattern
// below: every name that does not): a coordinator serves the program
// from its compressed forms in precompressed/ (`make wasm` writes them),
// so that its 10 MB are neither in the binary nor in the coordinator's
// memory. wasm_exec.js and precompressed/ are there only after `make
// wasm`; TestEmbedded checks that every other file is embedded.
//
//go:embed *[^m]
var files embed.FS

// FS returns the page's static assets to serve under /web/ (Go sources
// excluded). A build made before `make wasm` has no app.wasm; HasWasm
// reports it so a server can say so instead of serving a broken page.
func FS() fs.FS { return assets{files} }

// HasWasm reports whether the device build is embedded: its two
// compressed forms, of one file (one content hash), and no other.
func HasWasm() bool { return hasWasm(files) }

func hasWasm(fsys fs.FS) bool {
	br, _ := fs.Glob(fsys, "precompressed/app.*.wasm.br")
	gz, _ := fs.Glob(fsys, "precompressed/app.*.wasm.gz")
	return len(br) == 1 && len(gz) == 1 && strings.TrimSuffix(br[0], ".br") == strings.TrimSuffix(gz[0], ".gz")
}

type assets struct{ fs.FS }

func (a assets) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".go") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return a.FS.Open(name)
}
