// Command precompress writes the compressed forms of the page's assets
// into web/precompressed (site.Precompress), so that a coordinator built
// afterwards serves them without compressing anything at start (and the
// device build from them alone: package web does not embed app.wasm
// itself). make wasm runs it after building web/app.wasm:
//
//	go run ./scripts/precompress [web]
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"browserfl/coordinator/site"
)

func main() {
	dir := "web"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := site.Precompress(os.DirFS(dir), filepath.Join(dir, "precompressed")); err != nil {
		fmt.Fprintln(os.Stderr, "precompress:", err)
		os.Exit(1)
	}
}
