package site

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/bits"
	"mime"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/brotli"
)

// The device page's assets (index.html and web/) are served so that a
// student's phone downloads each once (docs/coordinator.md, "The page's
// assets"):
//
//   - every file of web/ is also served under a content-hashed name,
//     /web/app.<12 hex digits of its SHA-256>.wasm, with
//     Cache-Control: public, max-age=31536000, immutable; the page
//     (index.html, rewritten once at startup) refers to those names only,
//     so a reload takes them from the browser's cache without asking;
//   - the page itself and the plain names are revalidated (no-cache and
//     an ETag: a reload costs a 304);
//   - files that compress (wasm, js, css, html, svg, json) are compressed
//     once, in the background from startup (gzip at best compression and
//     brotli), and sent in the encoding the browser accepts (brotli first),
//     with Vary: Accept-Encoding. A request that comes before its file is
//     compressed waits for it.
//
// hashLen is how many hex digits of the SHA-256 name a file.
const hashLen = 12

// brotliQuality and brotliWindow are the brotli settings of the page's
// assets: quality 9 with a 16 MB window takes about 2 s for app.wasm on
// this project's busy two-core machine and gives 1.9 MB against gzip's
// 2.3 MB; quality 11 gives 1.7 MB but takes 30 s of a core at every
// start (docs/coordinator.md).
const (
	brotliQuality = 9
	brotliWindow  = 24
)

// staticAsset is one file as served: its bytes, their compressed forms
// (ready closes once they are made) and its names.
type staticAsset struct {
	name   string // the file's own name in web/ ("app.wasm")
	hashed string // its content-hashed name ("app.0123456789ab.wasm")
	ctype  string
	raw    []byte
	etag   string // quoted strong validator of raw

	ready  chan struct{}
	gz, br []byte // nil when not worth compressing
}

// staticSite is the page and its assets, read and hashed at startup.
type staticSite struct {
	byName map[string]*staticAsset // plain and hashed names -> asset
	index  *staticAsset            // nil without assets.Index
}

// newStaticSite reads every file of web (Go sources and directories
// excluded) and index, names the files by content, rewrites index's
// references to /web/NAME into the hashed names and starts compressing
// everything in the background.
func newStaticSite(web fs.FS, index []byte) (*staticSite, error) {
	s := &staticSite{byName: map[string]*staticAsset{}}
	var all []*staticAsset
	if web != nil {
		err := fs.WalkDir(web, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
				return err
			}
			raw, err := fs.ReadFile(web, p)
			if err != nil {
				return err
			}
			a := newStaticAsset(p, raw)
			s.byName[a.name], s.byName[a.hashed] = a, a
			all = append(all, a)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("page assets: %w", err)
		}
	}
	if index != nil {
		html := string(index)
		for _, a := range all {
			html = strings.ReplaceAll(html, `"/web/`+a.name+`"`, `"/web/`+a.hashed+`"`)
		}
		s.index = newStaticAsset("index.html", []byte(html))
		all = append(all, s.index)
	}
	go func() {
		for _, a := range all {
			a.compress()
		}
		// Compressing app.wasm takes a brotli hash table of 32 MB, garbage
		// once done: give it back to the system now, or the process keeps
		// it (and shows it in its memory) until a later collection.
		if len(all) > 0 {
			debug.FreeOSMemory()
		}
	}()
	return s, nil
}

func newStaticAsset(name string, raw []byte) *staticAsset {
	sum := sha256.Sum256(raw)
	h := hex.EncodeToString(sum[:])[:hashLen]
	ext := path.Ext(name)
	ctype := mime.TypeByExtension(ext)
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return &staticAsset{name: name, hashed: strings.TrimSuffix(name, ext) + "." + h + ext, ctype: ctype,
		raw: raw, etag: `"` + h + `"`, ready: make(chan struct{})}
}

// compress makes a's gzip and brotli forms (if its type compresses) and
// closes ready.
func (a *staticAsset) compress() {
	defer close(a.ready)
	if !compressible(a.name) {
		return
	}
	gz, err := gzipBest(a.raw)
	if err != nil {
		return // served uncompressed
	}
	br, err := brotliBytes(a.raw, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindowFor(len(a.raw))})
	if err != nil {
		return
	}
	a.gz, a.br = gz, br
}

// compressible reports whether a file of this name is worth compressing.
func compressible(name string) bool {
	switch path.Ext(name) {
	case ".wasm", ".js", ".css", ".html", ".json", ".svg":
		return true
	}
	return false
}

// brotliWindowFor returns the window (log2 of its bytes) for a file of n
// bytes: brotliWindow, or the smallest window that holds the whole file
// (2^w - 16 bytes, at least 2^16), which finds every match brotliWindow
// would and, at 16, lets the encoder use a hash table of kilobytes
// instead of 32 MB.
func brotliWindowFor(n int) int {
	return min(brotliWindow, max(16, bits.Len(uint(n+16))))
}

func gzipBest(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func brotliBytes(raw []byte, o brotli.WriterOptions) ([]byte, error) {
	var buf bytes.Buffer
	bw := brotli.NewWriterOptions(&buf, o)
	if _, err := bw.Write(raw); err != nil {
		return nil, err
	}
	if err := bw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// acceptedEncoding returns the encoding of a response to r: "br" or
// "gzip" if r accepts it (brotli first; q=0 refuses) and the body exists,
// else "".
func acceptedEncoding(r *http.Request, br, gz []byte) string {
	var okBr, okGz bool
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if refused(params) {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(enc)) {
		case "br":
			okBr = true
		case "gzip":
			okGz = true
		}
	}
	switch {
	case okBr && br != nil:
		return "br"
	case okGz && gz != nil:
		return "gzip"
	}
	return ""
}

// refused reports whether an Accept-Encoding entry's parameters give it
// q=0.
func refused(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.TrimSpace(k) == "q" {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err != nil || q <= 0
		}
	}
	return false
}

// serve answers r with a: compressed when accepted, immutable under its
// hashed name, revalidated (ETag, 304) under its plain name.
func (a *staticAsset) serve(w http.ResponseWriter, r *http.Request, immutable bool) {
	body, etag := a.raw, a.etag
	if compressible(a.name) {
		select {
		case <-a.ready:
		case <-r.Context().Done():
			return
		}
		h := w.Header()
		h.Add("Vary", "Accept-Encoding")
		switch enc := acceptedEncoding(r, a.br, a.gz); enc {
		case "br":
			body, etag = a.br, strings.TrimSuffix(a.etag, `"`)+`-br"`
			h.Set("Content-Encoding", enc)
		case "gzip":
			body, etag = a.gz, strings.TrimSuffix(a.etag, `"`)+`-gz"`
			h.Set("Content-Encoding", enc)
		}
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", etag)
	// The page's loader shows the download's progress in bytes of the
	// file (the compressed length is what Content-Length says).
	h.Set("X-Decoded-Length", strconv.Itoa(len(a.raw)))
	if immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// Prepared returns a with its page and assets read, hashed and (in the
// background) compressed, once: every handler made with the result shares
// them (a Host makes one per session).
func (a Assets) Prepared() (Assets, error) {
	if a.site != nil {
		return a, nil
	}
	site, err := newStaticSite(a.Web, a.Index)
	a.site = site
	return a, err
}

// registerWeb serves the page at / and its assets under /web/ (plain and
// hashed names; the worker script with its own policy).
func registerWeb(mux *http.ServeMux, assets Assets) error {
	assets, err := assets.Prepared()
	if err != nil {
		return err
	}
	site := assets.site
	if assets.Web != nil {
		mux.HandleFunc("GET /web/{name...}", func(w http.ResponseWriter, r *http.Request) {
			name := r.PathValue("name")
			a, ok := site.byName[name]
			if !ok {
				http.NotFound(w, r)
				return
			}
			if a.name == "worker.js" {
				// The page's worker runs under its own policy,
				// delivered with its script.
				w.Header().Set("Content-Security-Policy", WorkerCSP(r))
			}
			a.serve(w, r, name == a.hashed && name != a.name)
		})
	}
	if site.index != nil {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", PageCSP(r))
			site.index.serve(w, r, false)
		})
	}
	return nil
}

// EncodedBodies keeps compressed forms of large generated bodies (the
// demo shards' IDX files), made on first request in the encoding asked.
type EncodedBodies struct {
	mu    sync.Mutex
	cache map[encodedKey][]byte
	order []encodedKey
}

type encodedKey struct {
	id  string
	enc string
}

// maxEncodedBodies bounds the compressed bodies kept.
const maxEncodedBodies = 16

// Serve answers r with body (identified by id: same id, same bytes),
// compressed if r accepts it: brotli at quality 5 or gzip at its default
// level (fast enough to make for each new page: about 1 s for a 5 MB
// shard of pictures).
func (e *EncodedBodies) Serve(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	w.Header().Add("Vary", "Accept-Encoding")
	enc := acceptedEncoding(r, body, body)
	if enc == "" {
		w.Write(body)
		return
	}
	out, err := e.get(encodedKey{id, enc}, body)
	if err != nil {
		w.Write(body)
		return
	}
	w.Header().Set("Content-Encoding", enc)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
}

func (e *EncodedBodies) get(k encodedKey, body []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.cache[k]; ok {
		return b, nil
	}
	var out []byte
	var err error
	if k.enc == "br" {
		out, err = brotliBytes(body, brotli.WriterOptions{Quality: 5, LGWin: 22})
	} else {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err = zw.Write(body); err == nil {
			err = zw.Close()
		}
		out = buf.Bytes()
	}
	if err != nil {
		return nil, err
	}
	if e.cache == nil {
		e.cache = map[encodedKey][]byte{}
	}
	if len(e.order) >= maxEncodedBodies {
		delete(e.cache, e.order[0])
		e.order = e.order[1:]
	}
	e.cache[k] = out
	e.order = append(e.order, k)
	return out, nil
}
