package web

import (
	"embed"
	"io/fs"
	"strings"
)

// files holds every file of this directory that exists at build time;
// app.wasm and wasm_exec.js are there only after `make wasm`.
//
//go:embed *
var files embed.FS

// FS returns the page's static assets to serve under /web/ (Go sources
// excluded). A build made before `make wasm` has no app.wasm; HasWasm
// reports it so a server can say so instead of serving a broken page.
func FS() fs.FS { return assets{files} }

// HasWasm reports whether the device build is embedded.
func HasWasm() bool {
	_, err := fs.Stat(files, "app.wasm")
	return err == nil
}

type assets struct{ fs.FS }

func (a assets) Open(name string) (fs.File, error) {
	if strings.HasSuffix(name, ".go") {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return a.FS.Open(name)
}
