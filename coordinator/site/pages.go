package site

import (
	_ "embed"
	"io/fs"
	"net/http"
)

//go:embed dashboard.html
var dashboardHTML []byte

//go:embed dashboard.js
var dashboardJS []byte

//go:embed dashboard.css
var dashboardCSS []byte

// RegisterDashboard serves the projector dashboard: /dashboard (its
// page, under dashboardCSP) and its script and style at /dashboard.js
// and /dashboard.css, all revalidated on every load (no-cache).
func RegisterDashboard(mux *http.ServeMux) {
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", dashboardCSP)
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(dashboardHTML)
	})
	mux.HandleFunc("GET /dashboard.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(dashboardJS)
	})
	mux.HandleFunc("GET /dashboard.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(dashboardCSS)
	})
}

// favicon is the pages' icon (devices joined to a centre: the sum of a
// class's updates), served at /favicon.ico as SVG, which every engine
// we support takes for an icon.
//
//go:embed favicon.svg
var favicon []byte

// RegisterAssets serves the device page: index.html at / and web/ under
// /web/ (registerWeb, static.go: content-hashed names, compressed once,
// cached), and the icon.
func RegisterAssets(mux *http.ServeMux, assets Assets) {
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Write(favicon)
	})
	if err := registerWeb(mux, assets); err != nil {
		// The embedded files could not be read: say so rather than
		// serve a broken page.
		mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		})
	}
}

// Assets are the page the coordinator serves: index.html at / and the
// web/ directory (style, loader, app.wasm) under /web/.
type Assets struct {
	Index []byte
	Web   fs.FS
	// Join is where devices join (JoinURLs); empty: the address the
	// dashboard was opened at.
	Join JoinInfo

	site *staticSite // Index and Web read, hashed and compressed (Prepared)
}
