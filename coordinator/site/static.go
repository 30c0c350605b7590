package site

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
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
//     once (gzip at best compression and brotli): by make wasm into
//     web/precompressed (Precompress), or else in the background from
//     startup; they are sent in the encoding the browser accepts (brotli
//     first), with Vary: Accept-Encoding. A request that comes before its
//     file is compressed waits for it;
//   - a file web/ holds only as its two compressed forms (app.wasm: the
//     coordinator's binary embeds nothing else of it) is named by the
//     hash in their names and sent to a client that accepts neither
//     encoding decompressed from its gzip form (formsOnly): nothing of it
//     is read at start but the gzip trailer (its size).
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
	raw    body
	etag   string // quoted strong validator of raw

	ready  chan struct{}
	gz, br body // empty when not worth compressing
}

// body is bytes as served: in memory, or a file of an fs.FS read at each
// request (the embedded web/: its bytes are in the binary, and a copy on
// the heap would only add to the process's memory), or, with gunzip, the
// decompressed bytes of such a gzip file, size long.
type body struct {
	mem    []byte
	fsys   fs.FS // with path, when not in mem
	path   string
	size   int64
	gunzip bool
}

func memBody(b []byte) body { return body{mem: b, size: int64(len(b))} }

func (b body) empty() bool { return b.mem == nil && b.fsys == nil }

// open returns a reader of b's bytes and what to close after it.
func (b body) open() (io.ReadSeeker, io.Closer, error) {
	if b.fsys == nil {
		return bytes.NewReader(b.mem), io.NopCloser(nil), nil
	}
	if b.gunzip {
		g := &gunzipReader{fsys: b.fsys, path: b.path, size: b.size}
		return g, g, nil
	}
	f, err := b.fsys.Open(b.path)
	if err != nil {
		return nil, nil, err
	}
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not seekable", b.path)
	}
	return rs, f, nil
}

// fileBody returns p of fsys as a body read at each request when the
// file can seek (embed.FS, os.DirFS, fstest.MapFS), else read into
// memory now.
func fileBody(fsys fs.FS, p string) (body, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return body{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return body{}, fmt.Errorf("%s: %w", p, err)
	}
	if _, ok := f.(io.ReadSeeker); ok {
		return body{fsys: fsys, path: p, size: st.Size()}, nil
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return body{}, fmt.Errorf("%s: %w", p, err)
	}
	return memBody(b), nil
}

// precompressedDir is the folder of web/ that holds compressed forms of
// its files made when the page is built (Precompress, run by make wasm),
// named <hashed name>.br and <hashed name>.gz: a file whose forms are
// there for its content is not compressed at start, and a file that is
// not in web/ itself but whose two forms are there (app.wasm: package web
// embeds it only compressed) is served from them alone (formsOnly). It
// is not served.
const precompressedDir = "precompressed"

// staticSite is the page and its assets, read and hashed at startup.
type staticSite struct {
	byName map[string]*staticAsset // plain and hashed names -> asset
	index  *staticAsset            // nil without assets.Index
}

// newStaticSite reads every file of web (Go sources, directories and
// precompressedDir excluded) and index, names the files by content,
// rewrites index's references to /web/NAME into the hashed names, and
// takes each compressible file's compressed forms from precompressedDir
// when they are there for its content; the others are compressed in the
// background, one at a time.
func newStaticSite(web fs.FS, index []byte) (*staticSite, error) {
	s := &staticSite{byName: map[string]*staticAsset{}}
	var all, todo []*staticAsset
	if web != nil {
		err := fs.WalkDir(web, ".", func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && p == precompressedDir:
				return fs.SkipDir
			case d.IsDir() || strings.HasSuffix(p, ".go"):
				return nil
			}
			raw, err := fileBody(web, p)
			if err != nil {
				return err
			}
			a, err := newStaticAsset(p, raw)
			if err != nil {
				return err
			}
			s.byName[a.name], s.byName[a.hashed] = a, a
			all = append(all, a)
			if !a.precompressed(web) {
				todo = append(todo, a)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("page assets: %w", err)
		}
		only, err := formsOnly(web, s.byName)
		if err != nil {
			return nil, fmt.Errorf("page assets: %w", err)
		}
		for _, a := range only {
			s.byName[a.name], s.byName[a.hashed] = a, a
			all = append(all, a)
		}
	}
	if index != nil {
		html := string(index)
		for _, a := range all {
			html = strings.ReplaceAll(html, `"/web/`+a.name+`"`, `"/web/`+a.hashed+`"`)
		}
		var err error
		if s.index, err = newStaticAsset("index.html", memBody([]byte(html))); err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		todo = append(todo, s.index)
	}
	go func() {
		large := false
		for _, a := range todo {
			a.compress()
			large = large || a.raw.size > 1<<16
		}
		// Compressing a large file takes tens of MB of encoder state,
		// garbage once done: give it back to the system now, or the
		// process keeps it (and shows it in its memory) until a later
		// collection.
		if large {
			debug.FreeOSMemory()
		}
	}()
	return s, nil
}

// newStaticAsset hashes raw (streaming it from its file) and names it.
func newStaticAsset(name string, raw body) (*staticAsset, error) {
	r, c, err := raw.open()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, r); err != nil {
		return nil, fmt.Errorf("hashing %s: %w", name, err)
	}
	return namedAsset(name, hex.EncodeToString(sum.Sum(nil))[:hashLen], raw), nil
}

// namedAsset returns the asset name with bytes raw whose content hash
// (hashLen hex digits) is h.
func namedAsset(name, h string, raw body) *staticAsset {
	ext := path.Ext(name)
	ctype := mime.TypeByExtension(ext)
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	return &staticAsset{name: name, hashed: strings.TrimSuffix(name, ext) + "." + h + ext, ctype: ctype,
		raw: raw, etag: `"` + h + `"`, ready: make(chan struct{})}
}

// formsOnly returns an asset for each file whose two compressed forms
// are in web's precompressedDir but which is not in have (web's own
// files): package web embeds app.wasm only compressed, so that its 10
// MB are neither in the binary nor read at start to be hashed. Such an
// asset is named by the hash in its forms' names (Precompress hashed its
// content), its size is the gzip form's trailer (ISIZE: the length
// modulo 2^32), and a client that accepts neither encoding gets the gzip
// form decompressed as it is sent. Nothing of the forms but that trailer
// is read here. Two sets of forms for one file are an error.
func formsOnly(web fs.FS, have map[string]*staticAsset) ([]*staticAsset, error) {
	entries, err := fs.ReadDir(web, precompressedDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var out []*staticAsset
	found := map[string]string{} // plain name -> hashed name
	for _, e := range entries {
		hashed, ok := strings.CutSuffix(e.Name(), ".gz")
		if !ok || e.IsDir() {
			continue
		}
		name, h, ok := unhashedName(hashed)
		if !ok || have[name] != nil {
			continue
		}
		if prev, dup := found[name]; dup {
			return nil, fmt.Errorf("%s: two compressed forms of %s (%s and %s): run make wasm", precompressedDir, name, prev, hashed)
		}
		gz, err1 := fileBody(web, precompressedDir+"/"+hashed+".gz")
		br, err2 := fileBody(web, precompressedDir+"/"+hashed+".br")
		if err1 != nil || err2 != nil {
			continue // not both forms: not served
		}
		size, err := gzipSize(gz)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", hashed, err)
		}
		raw := gz
		raw.gunzip, raw.size = true, size
		a := namedAsset(name, h, raw)
		a.gz, a.br = gz, br
		close(a.ready)
		found[name] = hashed
		out = append(out, a)
	}
	return out, nil
}

// unhashedName splits a content-hashed name ("app.0123456789ab.wasm")
// into the file's own name ("app.wasm") and its hash.
func unhashedName(hashed string) (name, h string, ok bool) {
	ext := path.Ext(hashed)
	stem := strings.TrimSuffix(hashed, ext)
	i := strings.LastIndexByte(stem, '.')
	if i <= 0 || len(stem)-i-1 != hashLen {
		return "", "", false
	}
	h = stem[i+1:]
	if _, err := hex.DecodeString(h); err != nil || strings.ToLower(h) != h {
		return "", "", false
	}
	return stem[:i] + ext, h, true
}

// gzipSize returns the length of gz's decompressed bytes as its trailer
// gives it (the last 4 bytes, little-endian, modulo 2^32), reading only
// those.
func gzipSize(gz body) (int64, error) {
	r, c, err := gz.open()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := r.Seek(-4, io.SeekEnd); err != nil {
		return 0, fmt.Errorf("gzip trailer: %w", err)
	}
	var t [4]byte
	if _, err := io.ReadFull(r, t[:]); err != nil {
		return 0, fmt.Errorf("gzip trailer: %w", err)
	}
	return int64(binary.LittleEndian.Uint32(t[:])), nil
}

// gunzipReader reads a gzip file of fsys decompressed, as an
// io.ReadSeeker of its decompressed size (http.ServeContent seeks to the
// end for the size, which costs nothing, and to a range's start, which
// decompresses up to it; seeking backwards starts again). It holds one
// decompressor (about 40 KB) while it is read.
type gunzipReader struct {
	fsys fs.FS
	path string
	size int64
	pos  int64 // where Read continues

	f  fs.File
	zr *gzip.Reader
	at int64 // decompressed bytes read from zr
}

func (g *gunzipReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += g.pos
	case io.SeekEnd:
		off += g.size
	}
	if off < 0 {
		return 0, fmt.Errorf("%s: seek to %d", g.path, off)
	}
	g.pos = off
	return off, nil
}

func (g *gunzipReader) Read(p []byte) (int, error) {
	if g.pos >= g.size {
		return 0, io.EOF
	}
	if g.zr == nil || g.at > g.pos {
		g.Close()
		f, err := g.fsys.Open(g.path)
		if err != nil {
			return 0, err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return 0, fmt.Errorf("%s: %w", g.path, err)
		}
		g.f, g.zr, g.at = f, zr, 0
	}
	if g.at < g.pos {
		n, err := io.CopyN(io.Discard, g.zr, g.pos-g.at)
		g.at += n
		if err != nil {
			return 0, fmt.Errorf("%s: %w", g.path, noEOF(err))
		}
	}
	n, err := g.zr.Read(p[:min(int64(len(p)), g.size-g.pos)])
	g.at += int64(n)
	g.pos += int64(n)
	if err == io.EOF && g.pos < g.size {
		err = fmt.Errorf("%s: %w", g.path, io.ErrUnexpectedEOF)
	}
	if err == io.EOF {
		err = nil // the next Read says EOF at size
	}
	return n, err
}

// Close releases the file and its decompressor.
func (g *gunzipReader) Close() error {
	if g.f == nil {
		return nil
	}
	err := g.f.Close()
	g.f, g.zr = nil, nil
	return err
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// precompressed reports whether a needs no compressing at start: it does
// not compress, or its forms are in web's precompressedDir for this
// content (the names hold its hash), which it then takes, marking a
// ready.
func (a *staticAsset) precompressed(web fs.FS) bool {
	if !compressible(a.name) {
		close(a.ready)
		return true
	}
	br, err1 := fileBody(web, precompressedDir+"/"+a.hashed+".br")
	gz, err2 := fileBody(web, precompressedDir+"/"+a.hashed+".gz")
	if err1 != nil || err2 != nil {
		return false
	}
	a.br, a.gz = br, gz
	close(a.ready)
	return true
}

// compress makes a's gzip and brotli forms (if its type compresses) and
// closes ready.
func (a *staticAsset) compress() {
	defer close(a.ready)
	if !compressible(a.name) {
		return
	}
	var gz, br bytes.Buffer
	if err := a.encode(&gz, &br); err != nil {
		return // served uncompressed
	}
	a.gz, a.br = memBody(gz.Bytes()), memBody(br.Bytes())
}

// encode writes a's gzip form (best compression) to gz and its brotli
// form (brotliQuality, brotliWindowFor its size) to br, side by side (each
// encoder uses one core), each reading a's bytes as a stream. The
// coordinator at start and Precompress make the same bytes with it.
func (a *staticAsset) encode(gz, br io.Writer) error {
	zw, err := gzip.NewWriterLevel(gz, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := brotli.NewWriterOptions(br, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindowFor(int(a.raw.size))})
	gzErr := make(chan error, 1)
	go func() { gzErr <- a.copyTo(zw) }()
	err = errors.Join(a.copyTo(bw), <-gzErr)
	if err != nil {
		return fmt.Errorf("compressing %s: %w", a.name, err)
	}
	return nil
}

// copyTo writes a's bytes to w and closes it.
func (a *staticAsset) copyTo(w io.WriteCloser) error {
	r, c, err := a.raw.open()
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := io.Copy(w, r); err != nil {
		return err
	}
	return w.Close()
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
// "gzip" if r accepts it (brotli first) and that form exists (haveBr,
// haveGz), else "" (the file itself). An entry with q=0 refuses its
// coding; "*" accepts every coding the request does not name, and
// refuses them with q=0 (RFC 9110, 12.5.3). When the file itself is
// refused too ("identity;q=0", or "*;q=0" without identity) and no form
// is acceptable, gzip is sent, the coding every client decodes.
func acceptedEncoding(r *http.Request, haveBr, haveGz bool) string {
	named := map[string]bool{} // coding -> accepted, for the codings r names
	star, starNamed := false, false
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		enc = strings.ToLower(strings.TrimSpace(enc))
		if enc == "" {
			continue
		}
		ok := !refused(params)
		if enc == "*" {
			star, starNamed = ok, true
			continue
		}
		named[enc] = ok
	}
	accepts := func(enc string) bool {
		if ok, in := named[enc]; in {
			return ok
		}
		return star
	}
	identityRefused := false
	if ok, in := named["identity"]; in {
		identityRefused = !ok
	} else if starNamed {
		identityRefused = !star
	}
	switch {
	case accepts("br") && haveBr:
		return "br"
	case accepts("gzip") && haveGz:
		return "gzip"
	case identityRefused && haveGz:
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
	b, etag := a.raw, a.etag
	if compressible(a.name) {
		select {
		case <-a.ready:
		case <-r.Context().Done():
			return
		}
		h := w.Header()
		h.Add("Vary", "Accept-Encoding")
		switch enc := acceptedEncoding(r, !a.br.empty(), !a.gz.empty()); enc {
		case "br":
			b, etag = a.br, strings.TrimSuffix(a.etag, `"`)+`-br"`
			h.Set("Content-Encoding", enc)
		case "gzip":
			b, etag = a.gz, strings.TrimSuffix(a.etag, `"`)+`-gz"`
			h.Set("Content-Encoding", enc)
		}
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", etag)
	// The page's loader shows the download's progress in bytes of the
	// file (the compressed length is what Content-Length says).
	h.Set("X-Decoded-Length", strconv.FormatInt(a.raw.size, 10))
	if immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if b.gunzip {
		// Decompressed as it is sent, a range costs the decompression of
		// everything before it, and a header of thousands of ranges
		// would decompress the file thousands of times (and ServeContent
		// reads a multi-range body in a goroutine of its own): the whole
		// file is sent instead, as HTTP lets a server do.
		r.Header.Del("Range")
	}
	rs, c, err := b.open()
	if err != nil {
		http.Error(w, "asset unavailable", http.StatusInternalServerError)
		return
	}
	defer c.Close()
	http.ServeContent(w, r, "", time.Time{}, rs)
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
// Its handlers make a body and its form one request at a time (Hold):
// a class whose pages all ask at once would otherwise hold a 5 MB body
// per page while each waits for the encoder.
type EncodedBodies struct {
	mu    sync.Mutex
	cache map[encodedKey][]byte
	order []encodedKey
	bytes int // of the cached bodies

	holdOnce sync.Once
	turn     chan struct{} // full while a request makes a body (Hold)
}

// Hold waits for r's turn to make a body and its encoded form (one
// request at a time) and returns the function that ends it (safe to call
// more than once); ok is false if r ended first. A handler calls it
// before making its body, and ends its turn after Encode, before writing
// the response (to a slow page), so that no body waits in memory for
// the encoder.
func (e *EncodedBodies) Hold(r *http.Request) (release func(), ok bool) {
	e.holdOnce.Do(func() { e.turn = make(chan struct{}, 1) })
	select {
	case e.turn <- struct{}{}:
		return sync.OnceFunc(func() { <-e.turn }), true
	case <-r.Context().Done():
		return func() {}, false
	}
}

type encodedKey struct {
	id  string
	enc string
}

// maxEncodedBodies and maxEncodedBytes bound the compressed bodies kept
// (a demo shard's is about 2.5 MB): the most recent, and always the last.
const (
	maxEncodedBodies = 16
	maxEncodedBytes  = 8 << 20
)

// bodyBrotli returns the brotli setting of a generated body of n bytes.
// Up to 1 MiB (the page's chunks of its demo shard: 512 or 1,024
// pictures, 0.4 or 0.8 MB) quality 5 with a window that holds the body
// (brotliWindowFor, at most 2^22): 5 to 8 MB allocated for a chunk.
// Above (a whole shard of 6,400 pictures, 5 MB, which native devices
// fetch) quality 4 with a 256 KiB window: 14 MB allocated and 2.56 MB
// sent, where quality 5 with a 4 MiB window allocated 99 MB (most of it
// the block splitter's histograms, garbage that grew the heap by as
// much) for 2.46 MB (measured on Fashion-MNIST shards drawn by
// dataset.ShardStream, alpha 0.5, seed 1).
func bodyBrotli(n int) brotli.WriterOptions {
	if n > 1<<20 {
		return brotli.WriterOptions{Quality: 4, LGWin: 18}
	}
	return brotli.WriterOptions{Quality: 5, LGWin: min(22, brotliWindowFor(n))}
}

// Serve answers r with body (identified by id: same id, same bytes),
// compressed if r accepts it: brotli (bodyBrotli) or gzip at its default
// level (fast enough to make for each new page: about 0.3 s for a 5 MB
// shard of pictures).
func (e *EncodedBodies) Serve(w http.ResponseWriter, r *http.Request, id string, body []byte) {
	out, enc := e.Encode(r, id, body)
	WriteEncoded(w, out, enc)
}

// Encode returns the form of body (identified by id) that r accepts and
// its encoding: brotli, gzip, or body itself with "" (not accepted, or
// the encoder failed).
func (e *EncodedBodies) Encode(r *http.Request, id string, body []byte) (out []byte, enc string) {
	enc = acceptedEncoding(r, true, true)
	if enc == "" {
		return body, ""
	}
	out, err := e.get(encodedKey{id, enc}, body)
	if err != nil {
		return body, ""
	}
	return out, enc
}

// WriteEncoded writes a body Encode returned, in its encoding enc.
func WriteEncoded(w http.ResponseWriter, out []byte, enc string) {
	w.Header().Add("Vary", "Accept-Encoding")
	if enc != "" {
		w.Header().Set("Content-Encoding", enc)
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	}
	w.Write(out)
}

func (e *EncodedBodies) get(k encodedKey, body []byte) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.cache[k]; ok {
		return b, nil
	}
	// The buffer starts at half the body (what a shard of pictures
	// compresses to), and the body kept is a copy of its exact size, not
	// the buffer with its spare capacity.
	buf := bytes.NewBuffer(make([]byte, 0, len(body)/2+512))
	var zw io.WriteCloser
	if k.enc == "br" {
		zw = brotli.NewWriterOptions(buf, bodyBrotli(len(body)))
	} else {
		zw = gzip.NewWriter(buf)
	}
	_, err := zw.Write(body)
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, buf.Len())
	copy(out, buf.Bytes())
	if e.cache == nil {
		e.cache = map[encodedKey][]byte{}
	}
	for len(e.order) > 0 && (len(e.order) >= maxEncodedBodies || e.bytes+len(out) > maxEncodedBytes) {
		e.bytes -= len(e.cache[e.order[0]])
		delete(e.cache, e.order[0])
		e.order = e.order[1:]
	}
	e.cache[k] = out
	e.order = append(e.order, k)
	e.bytes += len(out)
	return out, nil
}

// Precompress writes the compressed forms of web's compressible files
// (as newStaticSite finds them) into dir, web's precompressedDir on disk,
// as the coordinator would make them at start, byte for byte, one file at
// a time; forms already there for a file's content are kept and any
// other file of dir is removed. make wasm runs it (scripts/precompress),
// so that a coordinator built afterwards compresses nothing at start
// (brotli at quality 9 takes about 100 MB of encoder state for app.wasm)
// and serves app.wasm from its forms alone (formsOnly).
func Precompress(web fs.FS, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("precompress: %w", err)
	}
	keep := map[string]bool{}
	err := fs.WalkDir(web, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p == precompressedDir:
			return fs.SkipDir
		case d.IsDir() || strings.HasSuffix(p, ".go") || !compressible(p):
			return nil
		}
		raw, err := fileBody(web, p)
		if err != nil {
			return err
		}
		a, err := newStaticAsset(p, raw)
		if err != nil {
			return err
		}
		if strings.Contains(a.hashed, "/") {
			return fmt.Errorf("%s: only the files at web/'s top are precompressed", p)
		}
		br, gz := filepath.Join(dir, a.hashed+".br"), filepath.Join(dir, a.hashed+".gz")
		keep[filepath.Base(br)], keep[filepath.Base(gz)] = true, true
		if exists(br) && exists(gz) {
			return nil
		}
		return writeForms(a, gz, br)
	})
	if err != nil {
		return fmt.Errorf("precompress: %w", err)
	}
	old, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("precompress: %w", err)
	}
	for _, e := range old {
		if !keep[e.Name()] {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("precompress: %w", err)
			}
		}
	}
	return nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// writeForms writes a's gzip and brotli forms to the files gz and br,
// each through a temporary file renamed once complete.
func writeForms(a *staticAsset, gz, br string) error {
	gzTmp, err := os.CreateTemp(filepath.Dir(gz), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(gzTmp.Name())
	defer gzTmp.Close()
	brTmp, err := os.CreateTemp(filepath.Dir(br), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(brTmp.Name())
	defer brTmp.Close()
	for _, f := range []*os.File{gzTmp, brTmp} {
		if err := f.Chmod(0o644); err != nil {
			return err
		}
	}
	if err := a.encode(gzTmp, brTmp); err != nil {
		return err
	}
	for _, f := range []*os.File{gzTmp, brTmp} {
		if err := f.Close(); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
	}
	if err := os.Rename(gzTmp.Name(), gz); err != nil {
		return err
	}
	return os.Rename(brTmp.Name(), br)
}
