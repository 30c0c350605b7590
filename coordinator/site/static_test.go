package site

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/andybalholm/brotli"
)

func decodeBody(t *testing.T, enc string, body []byte) []byte {
	t.Helper()
	var r io.Reader
	switch enc {
	case "":
		return body
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	default:
		t.Fatalf("unknown encoding %q", enc)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStaticSite: the page refers to its assets by content-hashed names;
// those are immutable, the page and plain names are revalidated (304);
// compressible files come in the encoding asked for (brotli first), and
// decode to the file; a refused or absent encoding gets the file as is.
func TestStaticSite(t *testing.T) {
	wasm := bytes.Repeat([]byte("\x00asm fake module body "), 5000)
	index := []byte(`<script src="/web/wasm_exec.js"></script><script src="/web/app.js"></script>`)
	mux := http.NewServeMux()
	if err := registerWeb(mux, Assets{Index: index, Web: fstest.MapFS{
		"app.wasm":     {Data: wasm},
		"app.js":       {Data: []byte("boot()")},
		"wasm_exec.js": {Data: []byte("go()")},
		"worker.js":    {Data: []byte("work()")},
		"pic.png":      {Data: []byte("png bytes")},
		"web.go":       {Data: []byte("package web")},
	}}); err != nil {
		t.Fatal(err)
	}
	get := func(path, accept, etag string) (*http.Response, []byte) {
		r := httptest.NewRequest("GET", path, nil)
		if accept != "" {
			r.Header.Set("Accept-Encoding", accept)
		}
		if etag != "" {
			r.Header.Set("If-None-Match", etag)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w.Result(), w.Body.Bytes()
	}

	// The page names its scripts by content.
	resp, body := get("/", "", "")
	page := string(body)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("ETag") == "" {
		t.Fatalf("page: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	names := regexp.MustCompile(`/web/[a-z_]+\.[0-9a-f]{12}\.js`).FindAllString(page, -1)
	if len(names) != 2 || strings.Contains(page, `"/web/app.js"`) {
		t.Fatalf("page does not use hashed names: %s", page)
	}
	if resp, _ = get("/", "", resp.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("page revalidation: status %d, want 304", resp.StatusCode)
	}

	// The hashed wasm name: immutable, brotli or gzip as accepted.
	wasmName := "/web/" + hashedName(t, "app.wasm", wasm)
	for _, c := range []struct{ accept, enc string }{
		{"gzip, deflate, br", "br"}, {"gzip, deflate", "gzip"}, {"br;q=0, gzip", "gzip"},
		{"", ""}, {"gzip;q=0", ""}, {"identity", ""}, {"BR", "br"},
		{"*", "br"}, {"*;q=0.5", "br"}, {"br;q=0, *", "gzip"}, {"*;q=0, identity", ""},
		{"identity;q=0", "gzip"}, {"*;q=0", "gzip"}, {"deflate, identity;q=0", "gzip"},
	} {
		resp, body = get(wasmName, c.accept, "")
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Encoding") != c.enc || h.Get("Content-Type") != "application/wasm" ||
			h.Get("Cache-Control") != "public, max-age=31536000, immutable" || h.Get("Vary") != "Accept-Encoding" {
			t.Errorf("accept %q: status %d, headers %v", c.accept, resp.StatusCode, h)
			continue
		}
		if c.enc != "" && len(body) >= len(wasm)/10 {
			t.Errorf("accept %q: %d bytes of %d", c.accept, len(body), len(wasm))
		}
		if !bytes.Equal(decodeBody(t, c.enc, body), wasm) {
			t.Errorf("accept %q: body does not decode to the file", c.accept)
		}
		if h.Get("X-Decoded-Length") != "110000" {
			t.Errorf("X-Decoded-Length %q", h.Get("X-Decoded-Length"))
		}
	}
	// The plain name is revalidated, per encoding.
	resp, _ = get("/web/app.wasm", "gzip", "")
	if resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("plain name: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	if r2, _ := get("/web/app.wasm", "gzip", resp.Header.Get("ETag")); r2.StatusCode != http.StatusNotModified {
		t.Errorf("plain name revalidation: status %d", r2.StatusCode)
	}
	if r2, _ := get("/web/app.wasm", "br", resp.Header.Get("ETag")); r2.StatusCode != 200 {
		t.Errorf("a gzip ETag validated a brotli request: status %d", r2.StatusCode)
	}

	// The worker keeps its policy under either name.
	for _, n := range []string{"/web/worker.js", "/web/" + hashedName(t, "worker.js", []byte("work()"))} {
		if resp, _ = get(n, "gzip", ""); !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: CSP %q", n, resp.Header.Get("Content-Security-Policy"))
		}
	}
	// Images are not recompressed; sources, wrong hashes and missing
	// files are 404s.
	if resp, _ = get("/web/pic.png", "gzip", ""); resp.Header.Get("Content-Encoding") != "" {
		t.Error("png was compressed")
	}
	for _, n := range []string{"/web/web.go", "/web/app.0123456789ab.wasm", "/web/missing.js", "/web/", "/web/a/app.js"} {
		if resp, _ = get(n, "gzip", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", n, resp.StatusCode)
		}
	}
}

// TestEncodedBodies: a generated body (a demo shard) travels in the
// encoding asked for and decodes to itself.
func TestEncodedBodies(t *testing.T) {
	body := bytes.Repeat([]byte{0, 0, 7, 200, 0, 3}, 20000)
	var e EncodedBodies
	for _, c := range []struct{ accept, enc string }{{"gzip, br", "br"}, {"gzip", "gzip"}, {"", ""}, {"br;q=0", ""}} {
		r := httptest.NewRequest("GET", "/api/demo/images", nil)
		r.Header.Set("Accept-Encoding", c.accept)
		w := httptest.NewRecorder()
		e.Serve(w, r, "images/0", body)
		if got := w.Result().Header.Get("Content-Encoding"); got != c.enc {
			t.Errorf("accept %q: encoding %q, want %q", c.accept, got, c.enc)
		}
		if c.enc != "" && w.Body.Len() > len(body)/4 {
			t.Errorf("accept %q: %d bytes of %d", c.accept, w.Body.Len(), len(body))
		}
		if !bytes.Equal(decodeBody(t, c.enc, w.Body.Bytes()), body) {
			t.Errorf("accept %q: body does not decode to itself", c.accept)
		}
	}
	// The bodies kept hold no spare capacity (a buffer grown by doubling
	// would keep up to twice its bytes).
	for k, b := range e.cache {
		if cap(b) != len(b) {
			t.Errorf("%v: kept %d bytes in a slice of capacity %d", k, len(b), cap(b))
		}
	}
}

// TestBodyBrotli: a page's chunk (up to 1 MiB) gets quality 5 with a
// window that holds it, a whole shard quality 4 with a 256 KiB window.
func TestBodyBrotli(t *testing.T) {
	for _, tc := range []struct{ n, q, w int }{
		{100, 5, 16}, {401948, 5, 19}, {803868, 5, 20}, {1 << 20, 5, 21}, {1<<20 + 1, 4, 18}, {5024028, 4, 18},
	} {
		o := bodyBrotli(tc.n)
		if o.Quality != tc.q || o.LGWin != tc.w {
			t.Errorf("bodyBrotli(%d) = quality %d window %d, want %d and %d", tc.n, o.Quality, o.LGWin, tc.q, tc.w)
		}
	}
}

// TestEncodedBodiesHold: one request at a time makes a body: while one
// holds the turn, another waits and, if it ends first, gets none; ending
// a turn twice ends it once.
func TestEncodedBodiesHold(t *testing.T) {
	var e EncodedBodies
	r := httptest.NewRequest("GET", "/api/demo/shard", nil)
	held := func() bool { // whether a request that gives up after 20 ms finds the turn taken
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		rel, ok := e.Hold(r.WithContext(ctx))
		rel()
		return !ok
	}
	first, ok := e.Hold(r)
	if !ok {
		t.Fatal("first request: no turn")
	}
	if !held() {
		t.Fatal("two requests hold the turn at once")
	}
	first()
	first()
	second, ok := e.Hold(r)
	if !ok {
		t.Fatal("second request: no turn")
	}
	if !held() {
		t.Fatal("the first request's second release ended the second request's turn")
	}
	second()
	if held() {
		t.Fatal("the turn is still taken after every request ended it")
	}
}

// TestAssetsPreparedOnce: assets prepared once are not read and
// compressed again by each handler made with them (a Host makes one per
// session).
func TestAssetsPreparedOnce(t *testing.T) {
	a, err := Assets{Index: []byte(`<script src="/web/app.js"></script>`), Web: fstest.MapFS{"app.js": {Data: []byte("x")}}}.Prepared()
	if err != nil || a.site == nil {
		t.Fatalf("prepared: %v", err)
	}
	b, err := a.Prepared()
	if err != nil || b.site != a.site {
		t.Fatalf("prepared again: %v; same site %v", err, b.site == a.site)
	}
	if !strings.Contains(string(a.site.index.raw.mem), `"/web/`+a.site.byName["app.js"].hashed+`"`) {
		t.Errorf("page %s", a.site.index.raw.mem)
	}
}

// TestBrotliWindowFor: the window holds the whole file (2^w - 16 bytes)
// up to brotliWindow, never below 16; and a file compressed with its
// window decodes to itself and is no larger than with the full window
// (the smaller window loses no match, since none reaches past the file).
func TestBrotliWindowFor(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 16}, {100, 16}, {1<<16 - 17, 16}, {1<<16 - 16, 17}, {1 << 20, 21}, {1<<24 - 16, 24}, {1 << 24, 24}, {1 << 30, 24},
	} {
		if got := brotliWindowFor(tc.n); got != tc.want {
			t.Errorf("brotliWindowFor(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if w := brotliWindowFor(tc.n); w < brotliWindow && tc.n > 1<<w-16 {
			t.Errorf("window %d does not hold a file of %d bytes", w, tc.n)
		}
	}
	for _, raw := range [][]byte{
		[]byte(strings.Repeat("<div class=\"card\">hello, class</div>\n", 800)), // 30 KB of page
		bytes.Repeat([]byte("\x00asm module body with some words "), 9000),      // 300 KB
	} {
		small, err := brotliBytes(raw, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindowFor(len(raw))})
		if err != nil {
			t.Fatal(err)
		}
		full, err := brotliBytes(raw, brotli.WriterOptions{Quality: brotliQuality, LGWin: brotliWindow})
		if err != nil {
			t.Fatal(err)
		}
		if got := decodeBody(t, "br", small); !bytes.Equal(got, raw) {
			t.Errorf("%d bytes: the smaller window's output decodes to %d other bytes", len(raw), len(got))
		}
		if len(small) > len(full)+len(full)/100 {
			t.Errorf("%d bytes: %d compressed with window %d against %d with %d", len(raw), len(small), brotliWindowFor(len(raw)), len(full), brotliWindow)
		}
	}
}

// hashedName is the content-hashed name of a file name with bytes b.
func hashedName(t *testing.T, name string, b []byte) string {
	t.Helper()
	a, err := newStaticAsset(name, memBody(b))
	if err != nil {
		t.Fatal(err)
	}
	return a.hashed
}

// TestPrecompressed: the forms Precompress writes are served byte for
// byte as the ones made at start, for every encoding, and taken from
// the files (nothing compressed at start); forms of other content are
// ignored by the site and removed by Precompress; the folder itself is
// not served.
func TestPrecompressed(t *testing.T) {
	web := fstest.MapFS{
		"app.wasm": {Data: bytes.Repeat([]byte("\x00asm fake module body "), 5000)},
		"app.js":   {Data: []byte("boot(); boot(); boot(); boot()")},
		"pic.png":  {Data: []byte("png bytes")},
		"web.go":   {Data: []byte("package web")},
	}
	dir := t.TempDir()
	stale := filepath.Join(dir, "app.0123456789ab.wasm.br")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Precompress(web, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a stale form was kept: %v", err)
	}
	files, err := os.ReadDir(dir)
	if err != nil || len(files) != 4 {
		t.Fatalf("%d files written (%v), want 4 (two forms of app.wasm and app.js)", len(files), err)
	}
	pre := fstest.MapFS{}
	for k, v := range web {
		pre[k] = v
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pre[precompressedDir+"/"+f.Name()] = &fstest.MapFile{Data: b}
	}
	pre[precompressedDir+"/app.0123456789ab.js.gz"] = &fstest.MapFile{Data: []byte("stale")}
	index := []byte(`<script src="/web/app.js"></script>`)
	serve := func(fsys fs.FS) (*staticSite, func(path, accept string) []byte) {
		mux := http.NewServeMux()
		a, err := Assets{Index: index, Web: fsys}.Prepared()
		if err != nil {
			t.Fatal(err)
		}
		if err := registerWeb(mux, a); err != nil {
			t.Fatal(err)
		}
		return a.site, func(path, accept string) []byte {
			r := httptest.NewRequest("GET", path, nil)
			r.Header.Set("Accept-Encoding", accept)
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			if w.Code != 200 {
				t.Fatalf("%s: status %d", path, w.Code)
			}
			return w.Body.Bytes()
		}
	}
	atStart, getStart := serve(web)
	fromFiles, getFiles := serve(pre)
	for _, name := range []string{"app.wasm", "app.js"} {
		if a := fromFiles.byName[name]; a.br.fsys == nil || a.gz.fsys == nil {
			t.Errorf("%s: compressed at start, not taken from %s", name, precompressedDir)
		}
		for _, accept := range []string{"br", "gzip", ""} {
			p := "/web/" + atStart.byName[name].hashed
			want, got := getStart(p, accept), getFiles(p, accept)
			if !bytes.Equal(got, want) {
				t.Errorf("%s, accept %q: %d bytes from the files, %d made at start", name, accept, len(got), len(want))
			}
		}
	}
	r := httptest.NewRequest("GET", "/web/"+precompressedDir+"/"+files[0].Name(), nil)
	w := httptest.NewRecorder()
	mux := http.NewServeMux()
	a, _ := Assets{Index: index, Web: pre}.Prepared()
	registerWeb(mux, a)
	if mux.ServeHTTP(w, r); w.Code != http.StatusNotFound {
		t.Errorf("%s served: status %d", r.URL.Path, w.Code)
	}
}

// readCounter is an fs.FS that counts the bytes read from each file.
type readCounter struct {
	fs.FS
	mu   sync.Mutex
	read map[string]int
}

func (c *readCounter) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countedFile{File: f, c: c, name: name}, nil
}

// bytesRead is how many bytes of name were read so far (the site may be
// compressing other files meanwhile).
func (c *readCounter) bytesRead(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read[name]
}

func (c *readCounter) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(c.FS, name) }

type countedFile struct {
	fs.File
	c    *readCounter
	name string
}

func (f *countedFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.c.mu.Lock()
	f.c.read[f.name] += n
	f.c.mu.Unlock()
	return n, err
}

func (f *countedFile) Seek(off int64, whence int) (int64, error) {
	return f.File.(io.Seeker).Seek(off, whence)
}

// TestFormsOnly: a file that web holds only as its two precompressed
// forms (app.wasm, as package web embeds it) is served under the name
// its content hash gives, the page refers to it, its forms go out byte
// for byte, and a client that accepts neither gets the file itself,
// decompressed as it is sent (whole, by range, revalidated by ETag);
// preparing the site reads nothing of it but the gzip trailer. Two sets
// of forms for one file are an error.
func TestFormsOnly(t *testing.T) {
	wasm := make([]byte, 300_000)
	for i := range wasm {
		wasm[i] = byte(i*i>>7) ^ byte(i>>11)
	}
	dir := t.TempDir()
	if err := Precompress(fstest.MapFS{"app.wasm": {Data: wasm}}, dir); err != nil {
		t.Fatal(err)
	}
	hashed := hashedName(t, "app.wasm", wasm)
	forms := map[string][]byte{}
	web := fstest.MapFS{"app.js": {Data: []byte("boot()")}}
	for _, enc := range []string{"br", "gz"} {
		b, err := os.ReadFile(filepath.Join(dir, hashed+"."+enc))
		if err != nil {
			t.Fatal(err)
		}
		forms[enc] = b
		web[precompressedDir+"/"+hashed+"."+enc] = &fstest.MapFile{Data: b}
	}
	counter := &readCounter{FS: web, read: map[string]int{}}
	index := []byte(`<script src="/web/app.wasm"></script>`)
	a, err := Assets{Index: index, Web: counter}.Prepared()
	if err != nil {
		t.Fatal(err)
	}
	if n := counter.bytesRead(precompressedDir+"/"+hashed+".gz") + counter.bytesRead(precompressedDir+"/"+hashed+".br"); n != 4 {
		t.Errorf("preparing the site read %d bytes of app.wasm's forms, want its gzip trailer (4)", n)
	}
	mux := http.NewServeMux()
	if err := registerWeb(mux, a); err != nil {
		t.Fatal(err)
	}
	get := func(path, accept string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Accept-Encoding", accept)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w
	}
	if page := get("/", "").Body.String(); !strings.Contains(page, `"/web/`+hashed+`"`) {
		t.Errorf("the page does not refer to %s: %s", hashed, page)
	}
	for _, tc := range []struct {
		accept, enc string
		want        []byte
	}{{"br, gzip", "br", forms["br"]}, {"gzip", "gzip", forms["gz"]}, {"", "", wasm}, {"br;q=0, gzip;q=0", "", wasm}} {
		for _, p := range []string{"/web/" + hashed, "/web/app.wasm"} {
			w := get(p, tc.accept)
			if w.Code != 200 || w.Header().Get("Content-Encoding") != tc.enc || !bytes.Equal(w.Body.Bytes(), tc.want) {
				t.Errorf("%s, accept %q: status %d, encoding %q, %d bytes; want 200, %q, %d bytes",
					p, tc.accept, w.Code, w.Header().Get("Content-Encoding"), w.Body.Len(), tc.enc, len(tc.want))
			}
			if got := w.Header().Get("X-Decoded-Length"); got != strconv.Itoa(len(wasm)) {
				t.Errorf("%s, accept %q: X-Decoded-Length %s, want %d", p, tc.accept, got, len(wasm))
			}
		}
	}
	// Decompressed as it is sent, the file is sent whole whatever the
	// range asked: thousands of ranges would decompress it thousands of
	// times.
	many := "bytes=" + strings.Repeat("-1,0-0,", 2000) + "-1"
	for _, rng := range []string{"bytes=123456-123999", "bytes=-10", many} {
		w := get("/web/app.wasm", "", "Range", rng)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), wasm) {
			t.Errorf("range %.40q of the decompressed file: status %d, %d bytes; want 200, the whole %d",
				rng, w.Code, w.Body.Len(), len(wasm))
		}
	}
	// Its compressed forms are files like any other: ranges are served.
	if w := get("/web/app.wasm", "gzip", "Range", "bytes=-10"); w.Code != http.StatusPartialContent || !bytes.Equal(w.Body.Bytes(), forms["gz"][len(forms["gz"])-10:]) {
		t.Errorf("last 10 bytes of the gzip form: status %d, %q", w.Code, w.Body.Bytes())
	}
	etag := get("/web/app.wasm", "").Header().Get("ETag")
	if w := get("/web/app.wasm", "", "If-None-Match", etag); w.Code != http.StatusNotModified {
		t.Errorf("revalidating %s: status %d, want 304", etag, w.Code)
	}

	two := fstest.MapFS{}
	for k, v := range web {
		two[k] = v
	}
	for _, enc := range []string{"br", "gz"} {
		two[precompressedDir+"/app.0123456789ab.wasm."+enc] = web[precompressedDir+"/"+hashed+"."+enc]
	}
	if _, err := (Assets{Web: two}).Prepared(); err == nil || !strings.Contains(err.Error(), "two compressed forms") {
		t.Errorf("two sets of forms of app.wasm: %v", err)
	}
}

// TestGunzipReader: reading the decompressed bytes in any order of
// seeks gives the file's bytes; a gzip file shorter than its stated size
// is an error, not a short body.
func TestGunzipReader(t *testing.T) {
	raw := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	fsys := fstest.MapFS{"f.gz": {Data: gz.Bytes()}}
	g := &gunzipReader{fsys: fsys, path: "f.gz", size: int64(len(raw))}
	defer g.Close()
	for _, off := range []int64{0, 5000, 100, 65300, 65535, 3} {
		if _, err := g.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(io.LimitReader(g, 700))
		if want := raw[off:min(off+700, int64(len(raw)))]; err != nil || !bytes.Equal(b, want) {
			t.Errorf("700 bytes at %d: %d bytes, %v", off, len(b), err)
		}
	}
	long := &gunzipReader{fsys: fsys, path: "f.gz", size: int64(len(raw)) + 10}
	defer long.Close()
	if _, err := io.ReadAll(long); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a gzip file shorter than its size: %v, want unexpected EOF", err)
	}
}
