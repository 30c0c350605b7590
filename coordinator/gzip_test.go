package coordinator

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
)

func TestGzipAssets(t *testing.T) {
	wasm := bytes.Repeat([]byte("\x00asm fake module body "), 5000)
	h := newGzipAssets(fstest.MapFS{
		"app.wasm": {Data: wasm},
		"pic.png":  {Data: []byte("png bytes")},
	})
	get := func(name, accept string) *http.Response {
		r := httptest.NewRequest("GET", "/"+name, nil)
		if accept != "" {
			r.Header.Set("Accept-Encoding", accept)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	// A client that accepts gzip gets a smaller body that decompresses to
	// the file, with the wasm content type (needed for streaming compile).
	resp := get("app.wasm", "deflate, gzip")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Type") != "application/wasm" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	body, _ := io.ReadAll(resp.Body)
	if len(body) >= len(wasm)/10 {
		t.Errorf("compressed %d bytes of %d", len(body), len(wasm))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(plain, wasm) {
		t.Fatalf("decompressed body differs (err %v)", err)
	}
	// Without gzip, or with gzip refused, the file is sent as is.
	for _, accept := range []string{"", "gzip;q=0", "br"} {
		resp = get("app.wasm", accept)
		body, _ = io.ReadAll(resp.Body)
		if resp.Header.Get("Content-Encoding") != "" || !bytes.Equal(body, wasm) {
			t.Errorf("accept %q: encoding %q, %d bytes", accept, resp.Header.Get("Content-Encoding"), len(body))
		}
	}
	// Images are not recompressed; missing files are 404s.
	if resp = get("pic.png", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Error("png was gzipped")
	}
	if resp = get("missing.js", "gzip"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing file: status %d", resp.StatusCode)
	}
}
