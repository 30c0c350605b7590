package connlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
)

// serve starts a server with l's hook on loopback; the handler of /hold
// waits on release. It returns the address.
func serve(t *testing.T, l *Limit, release <-chan struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ConnState: l.ConnState, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
		io.WriteString(w, "ok")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// client is one keep-alive connection.
type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

// get asks path on the connection and reports whether an answer came.
func (cl *client) get(path string) error {
	cl.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(cl.c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return err
	}
	resp, err := http.ReadResponse(cl.r, nil)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return err
}

// waitOpen waits until l counts total connections.
func waitOpen(t *testing.T, l *Limit, addr string, total int) {
	t.Helper()
	waitFor(t, func() bool { n, _ := l.Open(addr); return n == total })
}

// TestPerAddress: a fourth connection from one address, with three open,
// is closed before its request is read; once one of the three closes, a
// new one is served.
func TestPerAddress(t *testing.T) {
	l := &Limit{PerAddr: 3}
	addr := serve(t, l, nil)
	var cls []*client
	for range 3 {
		cl := dial(t, addr)
		if err := cl.get("/"); err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
	}
	if err := dial(t, addr).get("/"); err == nil {
		t.Fatal("a fourth connection from the address was served")
	}
	cls[0].c.Close()
	waitOpen(t, l, addr, 2)
	if err := dial(t, addr).get("/"); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
}

// TestTotalEvictsIdle: at the total bound (from a trusted proxy's
// address, which the per-address bound leaves alone) a new connection
// closes the one idle the longest and is served; when every connection is
// busy in a request, the new one is closed instead.
func TestTotalEvictsIdle(t *testing.T) {
	l := &Limit{PerAddr: 1, Total: 3, Trusted: func(a netip.Addr) bool { return a.IsLoopback() }}
	release := make(chan struct{})
	addr := serve(t, l, release)
	var cls []*client
	for range 3 {
		cl := dial(t, addr)
		if err := cl.get("/"); err != nil {
			t.Fatal(err)
		}
		cls = append(cls, cl)
		// An order of idleness: each idle before the next is asked.
		waitFor(t, func() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.idle) == len(cls) })
		time.Sleep(time.Millisecond)
	}
	fresh := dial(t, addr)
	if err := fresh.get("/"); err != nil {
		t.Fatalf("a new connection at the bound with idle ones open: %v", err)
	}
	if err := cls[0].get("/"); err == nil {
		t.Fatal("the connection idle the longest was not closed")
	}
	for _, cl := range cls[1:] {
		if err := cl.get("/"); err != nil {
			t.Fatalf("a connection idle for less time was closed: %v", err)
		}
	}
	// Every counted connection busy in a request: no room.
	busy := []*client{fresh, cls[1], cls[2]}
	for _, cl := range busy {
		cl.c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(cl.c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	end := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		n := len(l.idle)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the held requests never started")
		}
		time.Sleep(time.Millisecond)
	}
	if err := dial(t, addr).get("/"); err == nil {
		t.Fatal("a connection past the bound was served while every other was busy")
	}
	close(release)
	for _, cl := range busy {
		resp, err := http.ReadResponse(cl.r, nil)
		if err != nil {
			t.Fatalf("a held request: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "ok") {
			t.Fatalf("a held request answered %q", body)
		}
	}
}

// waitFor waits until cond holds (10 s at most).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTotalEvictsSilent: at the total bound with no connection idle, one
// that has sent nothing for StaleNew is closed for a new client (holding
// connections open without asking does not lock a class out); one that
// has sent nothing for less is not.
func TestTotalEvictsSilent(t *testing.T) {
	l := &Limit{Total: 2}
	addr := serve(t, l, nil)
	silent := []*client{dial(t, addr)}
	waitOpen(t, l, addr, 1)
	time.Sleep(StaleNew + 100*time.Millisecond)
	silent = append(silent, dial(t, addr))
	waitOpen(t, l, addr, 2)
	if err := dial(t, addr).get("/"); err != nil {
		t.Fatalf("a new client at the bound, with a connection silent for %v: %v", StaleNew, err)
	}
	// The oldest silent one was closed: a read ends at once.
	silent[0].c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := silent[0].r.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection silent the longest is still open (%v)", err)
	}
	// Now the bound holds the younger silent one and the new client's
	// (idle) one: the next new client closes the idle one, not the young
	// silent one.
	if err := dial(t, addr).get("/"); err != nil {
		t.Fatalf("a second new client: %v", err)
	}
	if err := silent[1].get("/"); err != nil {
		t.Fatalf("the connection silent for less than %v was closed: %v", StaleNew, err)
	}
}
