package wsconn

import (
	"browserfl/coordinator/metrics"
	"bytes"
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"
)

// recConn records what reaches the network: each call, and whether it
// was one writev.
type recConn struct {
	net.Conn
	calls []string // "write N" or "writev N+M"
	out   bytes.Buffer
}

func (r *recConn) Write(b []byte) (int, error) {
	r.calls = append(r.calls, "write "+strconv.Itoa(len(b)))
	return r.out.Write(b)
}

func newRecFrameConn() (*FrameConn, *recConn) {
	rc := &recConn{}
	fc := newFrameConn(rc)
	fc.writev = func(c net.Conn, bufs *net.Buffers) (int64, error) {
		desc := "writev"
		var n int64
		for i, b := range *bufs {
			if i > 0 {
				desc += "+"
			} else {
				desc += " "
			}
			desc += strconv.Itoa(len(b))
			rc.out.Write(b)
			n += int64(len(b))
		}
		rc.calls = append(rc.calls, desc)
		return n, nil
	}
	return fc, rc
}

// TestFrameConn: while armed, a write of the buffer's size is held and
// goes out with the next write in one writev; unarmed, or of another
// size, a write passes through; disarm sends a write still held. In
// every case the bytes arrive in the order written.
func TestFrameConn(t *testing.T) {
	full := bytes.Repeat([]byte{'a'}, wsBufferSize)
	rest := bytes.Repeat([]byte{'b'}, 3000)
	small := []byte("pong")
	cases := []struct {
		name   string
		armed  bool
		writes [][]byte
		want   []string // calls before disarm
		after  []string // calls after disarm
	}{
		{"unarmed: two writes", false, [][]byte{full, rest}, []string{"write 512", "write 3000"}, nil},
		{"armed: one writev", true, [][]byte{full, rest}, []string{"writev 512+3000"}, nil},
		{"armed, small write first", true, [][]byte{small, full, rest}, []string{"write 4", "writev 512+3000"}, nil},
		{"armed, frame ends on the boundary", true, [][]byte{full}, nil, []string{"write 512"}},
		{"armed, a small write after the held one", true, [][]byte{full, small}, []string{"writev 512+4"}, nil},
	}
	for _, tc := range cases {
		fc, rc := newRecFrameConn()
		if tc.armed {
			fc.arm()
		}
		var want bytes.Buffer
		for _, w := range tc.writes {
			n, err := fc.Write(w)
			if err != nil || n != len(w) {
				t.Fatalf("%s: Write = %d, %v; want %d, nil", tc.name, n, err, len(w))
			}
			want.Write(w)
		}
		if !slices.Equal(rc.calls, tc.want) {
			t.Errorf("%s: calls %q, want %q", tc.name, rc.calls, tc.want)
		}
		rc.calls = nil
		if err := fc.disarm(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rc.calls, tc.after) {
			t.Errorf("%s: disarm sent %q, want %q", tc.name, rc.calls, tc.after)
		}
		if !bytes.Equal(rc.out.Bytes(), want.Bytes()) {
			t.Errorf("%s: %d bytes arrived, not the %d written in order", tc.name, rc.out.Len(), want.Len())
		}
		// Disarmed: a full-buffer write passes through.
		rc.calls = nil
		fc.Write(full)
		if !slices.Equal(rc.calls, []string{"write 512"}) {
			t.Errorf("%s: after disarm, calls %q", tc.name, rc.calls)
		}
	}
}

// TestLongFrameOneWritev: through the real websocket library and a real
// loopback connection, a round-sized frame written by conn.write leaves
// in one writev and arrives intact, and so does a small frame after it
// (which passes straight through).
func TestLongFrameOneWritev(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cws, ws, fc := loopbackWS(ctx, t, nil)
	cws.SetReadLimit(1 << 20)
	var calls []string
	inner := fc.writev
	fc.writev = func(c net.Conn, bufs *net.Buffers) (int64, error) {
		calls = append(calls, "writev")
		return inner(c, bufs)
	}
	f := &Front{Lim: Limits{WriteTimeout: 10 * time.Second}, Met: metrics.New()}
	cn := &Conn{F: f, ws: ws, fc: fc, outbox: make(chan OutFrame, 4), Done: make(chan struct{}), manual: true}
	cn.ctx, cn.stop = context.WithCancel(context.Background())
	defer cn.stop()

	long := make([]byte, 62817) // a round frame at d = 7,850
	for i := range long {
		long[i] = byte(i * 7)
	}
	for _, f := range []OutFrame{{Binary: true, Data: long}, {Data: []byte(`{"type":"decision"}`)}} {
		if !cn.write(f) {
			t.Fatal("write failed")
		}
		_, b, err := cws.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, f.Data) {
			t.Fatalf("a frame of %d bytes arrived as %d different bytes", len(f.Data), len(b))
		}
	}
	if len(calls) != 1 {
		t.Errorf("%d writev calls for one long and one short frame, want 1", len(calls))
	}
}
