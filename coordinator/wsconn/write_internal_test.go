package wsconn

import (
	"browserfl/coordinator/metrics"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWriteTimeoutDropsSlowConsumer: a client that stops reading while
// a frame is being written is dropped as a slow consumer once the write
// timeout passes. The timeout is a deadline on the network connection
// (write), so the test sends a frame far larger than both ends' socket
// buffers (made small) to a client that never reads, and waits for the
// connection to end. Without the deadline the write would block until
// the guard below fails the test; without the deadline's error counted
// as a timeout, the connection would end without a slow consumer.
func TestWriteTimeoutDropsSlowConsumer(t *testing.T) {
	// The guard: 50 times the write timeout, so a loaded machine does not
	// fail the test; a write without the deadline never ends.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dialer := &net.Dialer{}
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(4096)
		}
		return c, err
	}}}
	_, ws, fc := loopbackWS(ctx, t, &websocket.DialOptions{HTTPClient: client}) // the client never reads
	if tc, ok := fc.Conn.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}

	f := &Front{Lim: Limits{WriteTimeout: 200 * time.Millisecond}, Met: metrics.New()}
	cn := &Conn{F: f, ws: ws, fc: fc, outbox: make(chan OutFrame, 4), Done: make(chan struct{})}
	cn.ctx, cn.stop = context.WithCancel(context.Background())
	defer cn.stop()
	if !cn.Send(OutFrame{Binary: true, Data: make([]byte, 16<<20)}) {
		t.Fatal("the frame was not queued")
	}
	select {
	case <-cn.Done:
	case <-ctx.Done():
		t.Fatal("a client that does not read was not dropped: the write never timed out")
	}
	if n := f.Met.SlowConsumers.Load(); n != 1 {
		t.Errorf("slow consumers = %d, want 1", n)
	}
	if n := f.Met.Rejections[metrics.RejSlowConsumer].Load(); n != 1 {
		t.Errorf("slow-consumer rejections = %d, want 1", n)
	}
}

// loopbackWS starts a server that accepts a websocket as ServeWS does
// (through smallBuffers) and holds it until the test ends, dials it with
// opts, and returns the client's connection and the server's, with the
// FrameConn under the latter.
func loopbackWS(ctx context.Context, t *testing.T, opts *websocket.DialOptions) (client, server *websocket.Conn, fc *FrameConn) {
	t.Helper()
	type accepted struct {
		ws *websocket.Conn
		fc *FrameConn
	}
	got := make(chan accepted, 1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sb := &smallBuffers{ResponseWriter: w}
		ws, err := websocket.Accept(sb, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		got <- accepted{ws, sb.fc}
		<-done
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.CloseNow() })
	select {
	case a := <-got:
		if a.fc == nil {
			t.Fatal("Hijack did not keep the network connection")
		}
		return client, a.ws, a.fc
	case <-ctx.Done():
		t.Fatal("no connection accepted")
	}
	return nil, nil, nil
}
