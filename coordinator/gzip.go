package coordinator

import (
	"bytes"
	"compress/gzip"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// gzipAssets serves the files of fsys, gzip-compressed for clients that
// accept it when the file type compresses well (app.wasm shrinks from about
// 7.6 MB to 2.1 MB). Each file is compressed once, on first request, and
// kept in memory: the embedded assets never change while the process runs.
// Other requests fall through to plain.
type gzipAssets struct {
	fsys  fs.FS
	plain http.Handler
	mu    sync.Mutex
	cache map[string][]byte
}

func newGzipAssets(fsys fs.FS) *gzipAssets {
	return &gzipAssets{fsys: fsys, plain: http.FileServerFS(FilesOnly(fsys)), cache: map[string][]byte{}}
}

// FilesOnly returns fsys without its directories: opening one fails with
// fs.ErrNotExist, so a file server over it answers 404 for /web/ or any
// folder instead of listing the files in it (nor does it serve a
// folder's index.html in its place).
func FilesOnly(fsys fs.FS) fs.FS { return filesOnly{fsys} }

type filesOnly struct{ fsys fs.FS }

func (f filesOnly) Open(name string) (fs.File, error) {
	file, err := f.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return file, nil
}

// compressible reports whether a file of this name is worth compressing.
func compressible(name string) bool {
	switch path.Ext(name) {
	case ".wasm", ".js", ".css", ".html", ".json", ".svg":
		return true
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func (g *gzipAssets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" || !compressible(name) || !acceptsGzip(r) {
		g.plain.ServeHTTP(w, r)
		return
	}
	body, err := g.compressed(name)
	if err != nil { // missing file, directory: the plain server says so
		g.plain.ServeHTTP(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Encoding", "gzip")
	h.Add("Vary", "Accept-Encoding")
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		h.Set("Content-Type", ct)
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(body))
}

// compressed returns the gzip encoding of file name, compressing it once.
func (g *gzipAssets) compressed(name string) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b, ok := g.cache[name]; ok {
		return b, nil
	}
	raw, err := fs.ReadFile(g.fsys, name)
	if err != nil {
		return nil, err
	}
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
	g.cache[name] = buf.Bytes()
	return buf.Bytes(), nil
}
