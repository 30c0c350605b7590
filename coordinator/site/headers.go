package site

import (
	"encoding/json"
	"net/http"
)

// dashboardCSP allows nothing inline: the dashboard's script and style are
// files of the same origin.
const dashboardCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// PageCSP is the device page's policy. No inline scripts or event
// handlers; WebAssembly may compile ('wasm-unsafe-eval'), and 'unsafe-eval'
// is there because the vugu renderer installs its DOM helper with
// window.eval of a constant string. Inline styles stay allowed: the UI
// sets style attributes (progress bars). The page starts one dedicated
// worker from its own origin (worker-src 'self', /web/worker.js, which
// has its own policy: WorkerCSP). The websocket is the page's own host
// (ws: or wss:; 'self' alone does not cover ws: in every browser); the
// page opens it for its worker.
func PageCSP(r *http.Request) string {
	return "default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'unsafe-eval'; worker-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; connect-src " + connectSrc(r) + "; object-src 'none'; base-uri 'none'; form-action 'none'; " +
		"frame-ancestors 'none'"
}

// WorkerCSP is the policy of the page's dedicated worker (a worker runs
// under the policy delivered with its script): it loads the Go runtime's
// loader from the same origin (importScripts), compiles app.wasm
// ('wasm-unsafe-eval'; no 'unsafe-eval': the worker renders nothing) and
// fetches the session's API from its own origin; nothing else (the
// device's websocket is opened by the page on the worker's behalf).
func WorkerCSP(*http.Request) string {
	return "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// connectSrc is the pages' connect-src: the origin and its websocket.
func connectSrc(r *http.Request) string {
	connect := "'self'"
	if h := r.Host; h != "" && ValidHost(h) {
		connect += " ws://" + h + " wss://" + h
	}
	return connect
}

// ValidHost reports whether h is a plain host[:port] safe to put in a
// header value.
func ValidHost(h string) bool {
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == ':', r == '[', r == ']':
		default:
			return false
		}
	}
	return len(h) <= 255
}

// SecurityHeaders sets the headers every response carries: no MIME
// sniffing, no referrer, no framing (frame-ancestors in the pages' CSP,
// X-Frame-Options for older browsers) and, under TLS, HSTS.
func SecurityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		// Pages set their own policy; anything else may not be framed.
		hd.Set("Content-Security-Policy", "frame-ancestors 'none'")
		if r.TLS != nil {
			hd.Set("Strict-Transport-Security", "max-age=31536000")
		}
		h.ServeHTTP(w, r)
	})
}

// DashboardCSP is the dashboard's Content-Security-Policy (no inline
// script or style), for tests that serve its files themselves.
func DashboardCSP() string { return dashboardCSP }

// WriteJSON answers v as JSON, never cached (the API's answers change
// with every round).
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.Encode(v)
}
