package wsconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/time/rate"

	"browserfl/coordinator/bus"
	"browserfl/coordinator/metrics"
	"browserfl/shared/wire"
)

// CloseError closes a connection with an error code sent to the device.
type CloseError struct {
	Code, Reason string
	Kind         int  // rejection kind for /metrics (rejNone: by code)
	Quiet        bool // not logged one by one (the gate logs a summary)
}

func (e *CloseError) Error() string { return e.Code + ": " + e.Reason }

type OutFrame struct {
	Binary bool
	Data   []byte
	Round  int         // the round of a round frame (what an edge needs to know of it)
	Mark   bus.Mark    // on a round frame: where the device's history stands (an edge checks its own with it)
	Short  []byte      // a round frame without x_{t-1} (wire.ShortRound), for a device that holds it
	Close  *CloseError // set on the last frame: send error message, then close
}

// wsConn is what a connection needs of its websocket: *websocket.Conn in
// the product, an in-memory fake in the server fuzz test.
type wsConn interface {
	Read(ctx context.Context) (websocket.MessageType, []byte, error)
	Reader(ctx context.Context) (websocket.MessageType, io.Reader, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
	Ping(ctx context.Context) error
}

// Conn is one device connection. Frames go out in order through a bounded
// outbox, drained by a writer goroutine that runs only while there is
// something to write; a device that does not drain it is dropped rather
// than allowed to stall a round. An idle connection holds one goroutine
// (its reader) and a timer for its pings.
type Conn struct {
	ws wsConn
	// fc is the network connection under ws (nil for a fake): writes
	// set their timeout on it and send a long frame in one system call
	// (write).
	fc *FrameConn
	F  *Front
	// ctx is the connection's lifetime (its writes and pings use it);
	// stop cancels it when the reader returns.
	ctx    context.Context
	stop   context.CancelFunc
	ID     string
	Seq    uint64 // the connection's number on an edge (coordinator/edge)
	outbox chan OutFrame
	// writing is set while a writer goroutine drains the outbox.
	writing atomic.Bool
	// manual: no writer goroutine is started; the caller drains the
	// outbox itself (the server fuzz test).
	manual bool
	once   sync.Once
	Done   chan struct{}
	// msgs is the message rate limit: MsgRate per second up to
	// MsgBurst (golang.org/x/time/rate; only the reader takes from it).
	msgs *rate.Limiter
	Addr string // client address the gate keys on
	// prehello is set while the connection counts against its
	// address's pre-hello limit (guarded by the serving goroutine).
	prehello bool
	pingMu   sync.Mutex
	ping     *time.Timer // the next heartbeat ping (guarded by pingMu)
	// keepsX: the device said in its hello that it keeps the X of the
	// last round frame it received (wire.Hello.KeepsX). lastRound is the
	// round of the last round frame queued here (0: none, or one that
	// could not be queued); round frames are queued by one goroutine at a
	// time (under the coordinator's or the edge's lock).
	keepsX    bool
	lastRound atomic.Int64
	// born is when the connection was accepted (its monotonic clock
	// reading is what heard counts from); heard is 1 + the nanoseconds
	// from born to the device's last update frame, 0 before the first.
	// An update answers a round frame, so it shows the device reads:
	// the heartbeat skips its ping for an interval after one (skipPing).
	born  time.Time
	heard atomic.Int64
}

// SendRound queues round f.round's frame: f.short, the frame without
// x_{t-1}, when the device keeps the last round's X and round t-1's frame
// was the last one queued here (the device then holds x_{t-1} as that
// frame's X: frames arrive in order and a device that cannot use one
// ends the connection), f.data otherwise. It returns the bytes queued,
// 0 if the connection could not take the frame.
func (cn *Conn) SendRound(f OutFrame) int {
	if cn == nil {
		return 0
	}
	t := int64(f.Round)
	if f.Short != nil && cn.keepsX && t > 1 && cn.lastRound.Load() == t-1 {
		f.Data = f.Short
	}
	f.Short = nil
	if !cn.Send(f) {
		cn.lastRound.Store(0)
		return 0
	}
	cn.lastRound.Store(t)
	return len(f.Data)
}

// Send queues f; it reports false if the connection is closing or its
// outbox is full (the connection is then closed). Safe on a nil conn.
func (cn *Conn) Send(f OutFrame) bool {
	if cn == nil {
		return false
	}
	select {
	case <-cn.Done:
		return false
	default:
	}
	select {
	case cn.outbox <- f:
		cn.kick()
		return true
	default:
		cn.slow(metrics.RejSlowConsumer)
		return false
	}
}

// kick starts a writer goroutine unless one is running.
func (cn *Conn) kick() {
	if !cn.manual && cn.writing.CompareAndSwap(false, true) {
		go cn.writer()
	}
}

// slow drops a connection whose client does not keep up.
func (cn *Conn) slow(kind int) {
	select {
	case <-cn.Done:
		return
	default:
	}
	cn.F.Met.SlowConsumers.Add(1)
	cn.F.Met.Reject(kind)
	cn.Shut()
}

// SendWait queues f, waiting up to the write timeout for room: the
// connection's own reader uses it, so a client that floods requests is
// slowed down by its own replies instead of being dropped.
func (cn *Conn) SendWait(m wire.Message) bool {
	b, err := wire.EncodeControl(m)
	if err != nil {
		return false
	}
	t := time.NewTimer(cn.F.Lim.WriteTimeout)
	defer t.Stop()
	select {
	case cn.outbox <- OutFrame{Data: b}:
		cn.kick()
		return true
	case <-cn.Done:
		return false
	case <-t.C:
		cn.slow(metrics.RejSlowConsumer)
		return false
	}
}

func (cn *Conn) SendControl(m wire.Message) bool {
	b, err := wire.EncodeControl(m)
	if err != nil {
		return false
	}
	return cn.Send(OutFrame{Data: b})
}

func (cn *Conn) DeviceID() string { return cn.ID }

// RaiseReadLimit lets cn read frames of n bytes (Front.FrameMax once the
// session's secure aggregation is known): safe to call while its reader
// runs; the next frame read has the new limit.
func (cn *Conn) RaiseReadLimit(n int) {
	if ws, ok := cn.ws.(interface{ SetReadLimit(int64) }); ok {
		ws.SetReadLimit(int64(n))
	}
}
func (cn *Conn) SetDeviceID(id string) { cn.ID = id }

// CloseWith sends an error message and closes the connection.
func (cn *Conn) CloseWith(code, reason string) {
	if cn == nil {
		return
	}
	select {
	case cn.outbox <- OutFrame{Close: &CloseError{Code: code, Reason: reason}}:
		cn.kick()
	default:
		// The outbox is full: say why directly (writes are safe
		// concurrently with the writer goroutine), then close.
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if b, err := wire.EncodeControl(wire.Error{Code: code, Reason: reason}); err == nil {
				cn.ws.Write(ctx, websocket.MessageText, b)
			}
			cn.ws.Close(closeStatus(code), truncate(code+": "+reason, 120))
			cn.Shut()
		}()
	}
}

func (cn *Conn) Shut() {
	cn.once.Do(func() {
		close(cn.Done)
		cn.ws.CloseNow()
		cn.pingMu.Lock()
		if cn.ping != nil {
			cn.ping.Stop()
		}
		cn.pingMu.Unlock()
	})
}

func (cn *Conn) closed() bool {
	select {
	case <-cn.Done:
		return true
	default:
		return false
	}
}

// writer writes the queued frames in order and returns when the outbox
// is empty (kick starts it again) or the connection ends.
func (cn *Conn) writer() {
	for {
		select {
		case <-cn.Done:
			return
		case f := <-cn.outbox:
			if !cn.write(f) {
				cn.Shut()
				return
			}
			continue
		default:
		}
		// Empty: stop, unless a frame was queued after the look above
		// and its kick found this writer still running.
		cn.writing.Store(false)
		if len(cn.outbox) == 0 || !cn.writing.CompareAndSwap(false, true) {
			return
		}
	}
}

// write sends f; it reports false when the connection is to end (f was
// the closing frame, or the write failed).
//
// The write timeout is a deadline on the network connection, set before
// the frame and cleared after it, not a context with a timeout: such a
// context allocates a timer for every frame and the websocket library
// hangs a callback on it, about 3 µs of CPU a frame (docs/coordinator.md,
// "CPU against a plain websocket server"). Without a network connection
// (the server fuzz test's fake) the context carries the timeout.
func (cn *Conn) write(f OutFrame) bool {
	wctx := cn.ctx
	if cn.fc != nil {
		cn.fc.SetWriteDeadline(time.Now().Add(cn.F.Lim.WriteTimeout))
		// Cleared after the frame: the library's own control frames
		// (pongs, close) must not inherit an expired deadline.
		defer cn.fc.SetWriteDeadline(time.Time{})
	} else {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(cn.ctx, cn.F.Lim.WriteTimeout)
		defer cancel()
	}
	if f.Close != nil {
		if b, e := wire.EncodeControl(wire.Error{Code: f.Close.Code, Reason: f.Close.Reason}); e == nil {
			cn.ws.Write(wctx, websocket.MessageText, b)
		}
		cn.ws.Close(closeStatus(f.Close.Code), truncate(f.Close.Code+": "+f.Close.Reason, 120))
		return false
	}
	typ := websocket.MessageText
	if f.Binary {
		typ = websocket.MessageBinary
	}
	long := cn.fc != nil && len(f.Data) > 2*wsBufferSize
	if long {
		cn.fc.arm()
	}
	err := cn.ws.Write(wctx, typ, f.Data)
	if long {
		if e := cn.fc.disarm(); err == nil {
			err = e
		}
	}
	if err != nil {
		timedOut := errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(wctx.Err(), context.DeadlineExceeded)
		if timedOut && cn.ctx.Err() == nil {
			cn.slow(metrics.RejSlowConsumer)
		}
		return false
	}
	cn.F.Met.FramesOut.Add(1)
	return true
}

// startPings arms the heartbeat: every PingInterval (after the last
// pong) a websocket ping; a client that stops reading never answers and
// is dropped after PingTimeout instead of holding a place.
func (cn *Conn) startPings() {
	if iv := cn.F.Gate.Config().PingInterval; iv > 0 {
		cn.pingMu.Lock()
		cn.ping = time.AfterFunc(pingDelay(time.Now(), iv), cn.heartbeat)
		cn.pingMu.Unlock()
	}
}

func (cn *Conn) heartbeat() {
	if cn.closed() {
		return
	}
	if wait := skipPing(time.Now(), cn.lastUpdate(), cn.F.Gate.Config().PingInterval); wait > 0 {
		cn.pingMu.Lock()
		if !cn.closed() {
			cn.ping.Reset(wait)
		}
		cn.pingMu.Unlock()
		return
	}
	cn.F.Met.Pings.Add(1)
	pctx, cancel := context.WithTimeout(cn.ctx, cn.F.Gate.Config().PingTimeout)
	err := cn.ws.Ping(pctx)
	timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded) && cn.ctx.Err() == nil
	cancel()
	if err != nil {
		if timedOut {
			cn.slow(metrics.RejPingTimeout)
		}
		return
	}
	cn.pingMu.Lock()
	if !cn.closed() {
		cn.ping.Reset(pingDelay(time.Now(), cn.F.Gate.Config().PingInterval))
	}
	cn.pingMu.Unlock()
}

// skipPing returns 0 when the heartbeat is to ping now, and otherwise how
// long to wait before looking again: an update frame answers a round
// frame, so a device whose last update (at last; zero: none) is less
// than an interval iv old has shown it reads, and its next ping is due an
// interval after that update (on the grid, as pingDelay places it). A
// device that dies right after an update is noticed as soon as a pinged
// one, counted from its last sign of life; one that sends other frames but
// stops reading is still pinged. At n = 3,000, m = 300 every device sends
// an update every few seconds, so the rounds run without pings.
func skipPing(now, last time.Time, iv time.Duration) time.Duration {
	if last.IsZero() || iv <= 0 || now.Sub(last) >= iv {
		return 0
	}
	return pingDelay(last, iv) - now.Sub(last)
}

// lastUpdate is when cn's device last sent an update (zero: never).
func (cn *Conn) lastUpdate() time.Time {
	h := cn.heard.Load()
	if h == 0 {
		return time.Time{}
	}
	return cn.born.Add(time.Duration(h - 1))
}

// pingGrid is the grid heartbeats are aligned to: every connection's
// next ping is due on a multiple of it, so the pings of thousands of
// idle connections go out (and their pongs come back) in one burst per
// grid step instead of one wake-up of the process each. Waking the
// runtime for a lone ping and its pong cost about 400 µs of CPU at
// 3,000 idle devices (docs/coordinator.md, "CPU against a plain
// websocket server"); in a burst the wake-ups are shared.
const pingGrid = time.Second

// pingDelay returns how long after now the next ping is due: at least
// iv, rounded up to the next multiple of pingGrid (for iv of a
// grid step or more).
func pingDelay(now time.Time, iv time.Duration) time.Duration {
	if iv < pingGrid {
		return iv
	}
	due := now.Add(iv)
	if r := due.Sub(due.Truncate(pingGrid)); r > 0 {
		due = due.Add(pingGrid - r)
	}
	return due.Sub(now)
}

func closeStatus(code string) websocket.StatusCode {
	switch code {
	case wire.CodeBadFrame, wire.CodeProtocol, wire.CodeVersion:
		return websocket.StatusPolicyViolation
	case wire.CodeShutdown:
		return websocket.StatusGoingAway
	case wire.CodeSessionEnd:
		return websocket.StatusNormalClosure
	case wire.CodeRate:
		return websocket.StatusPolicyViolation
	}
	return websocket.StatusPolicyViolation
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// allow takes a message token at now: MsgRate tokens per second up to
// MsgBurst.
func (cn *Conn) allow(now time.Time) bool { return cn.msgs.AllowN(now, 1) }

// MsgLimiter returns a connection's message rate limit, full.
func (l Limits) MsgLimiter() *rate.Limiter { return rate.NewLimiter(rate.Limit(l.MsgRate), l.MsgBurst) }

// ServeWS upgrades a device connection and reads its hello; once the
// device is admitted, a fresh goroutine reads its frames until the
// connection closes and the handler returns, so the HTTP server's
// per-request state (request, response, buffers, and the handler's
// deep stack) is not held for the connection's lifetime.
//
// Every open connection, with or without its hello, counts against
// Limits.MaxDevices; one address may hold Gate.PreHelloPerAddress
// connections that have not said hello.
func (c *Front) ServeWS(w http.ResponseWriter, r *http.Request) {
	if n := c.Met.Connected.Add(1); n > int64(c.Lim.MaxDevices) {
		c.Met.Connected.Add(-1)
		c.Met.Reject(metrics.RejFull)
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many devices", http.StatusServiceUnavailable)
		return
	}
	addr := c.Gate.ClientAddr(r)
	if !c.Gate.OpenPreHello(addr) {
		c.Met.Connected.Add(-1)
		c.Met.Reject(metrics.RejPreHello)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many connections without hello from this address", http.StatusTooManyRequests)
		return
	}
	cn := &Conn{F: c, outbox: make(chan OutFrame, c.Lim.Outbox), Done: make(chan struct{}),
		msgs: c.Lim.MsgLimiter(), Addr: addr, prehello: true}
	cn.born = time.Now()
	sb := &smallBuffers{ResponseWriter: w}
	ws, err := websocket.Accept(sb, r, &websocket.AcceptOptions{
		OriginPatterns:  c.Origins,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		cn.helloDone()
		c.Met.Connected.Add(-1)
		c.Met.RejectedUpgrades.Add(1)
		c.Met.Reject(metrics.RejOrigin)
		c.Log.Debug("websocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(int64(c.FrameMax()))
	cn.ws, cn.fc = ws, sb.fc
	cn.ctx, cn.stop = context.WithCancel(context.Background())
	cn.startPings()
	if err := c.hello(cn); err != nil {
		c.end(cn, err)
		return
	}
	go func() { c.end(cn, c.frames(cn)) }()
}

// end handles the error that ended cn's reader, then unbinds cn.
func (c *Front) end(cn *Conn, err error) {
	defer c.Met.Connected.Add(-1)
	defer cn.helloDone()
	defer cn.stop()
	var ce *CloseError
	switch {
	case errors.As(err, &ce):
		kind := ce.Kind
		switch ce.Code {
		case wire.CodeBadFrame, wire.CodeVersion:
			c.Met.BadFrames.Add(1)
		case wire.CodeRate:
			if kind == metrics.RejNone {
				c.Met.RateLimited.Add(1)
			}
		}
		if kind == metrics.RejNone {
			kind = codeRejection(ce.Code)
		}
		if ce.Code == wire.CodeAuth {
			// Secrets are not guessable, but each try costs a store
			// read: the same backoff as a wrong join code.
			c.Gate.AuthFailed(cn.Addr)
			ce.Quiet = true
		}
		c.Met.Reject(kind)
		if !ce.Quiet {
			c.Log.Info("closing device connection", "device", ShortID(cn.ID), "code", ce.Code, "reason", ce.Reason)
		}
		cn.CloseWith(ce.Code, ce.Reason)
		t := time.NewTimer(2 * time.Second)
		select {
		case <-cn.Done:
		case <-t.C:
		}
		t.Stop()
	default: // hello and frames only return with an error
		if isReadLimit(err) {
			// The websocket library closes with 1009 (message too big) itself.
			c.Met.BadFrames.Add(1)
			c.Met.Reject(metrics.RejOversized)
		}
		c.Log.Debug("device connection ended", "device", ShortID(cn.ID), "err", err)
	}
	cn.Shut()
	if cn.ID != "" {
		c.H.Disconnected(cn)
		c.Gate.MarkInactive(cn.ID)
		c.H.EvictInactive()
	}
}

// wsBufferSize is the size of a websocket connection's read and write
// buffers. Frames larger than a buffer bypass it (the round and update
// frames), so it only batches frame headers and small control frames;
// the HTTP server's own 4 KiB buffers would stay allocated for as long
// as the connection lives.
const wsBufferSize = 512

// smallBuffers is the ResponseWriter handed to websocket.Accept: its
// Hijack gives the websocket library buffers of wsBufferSize bytes and
// has it write through a frameConn, kept in fc.
type smallBuffers struct {
	http.ResponseWriter
	fc *FrameConn
}

func (s *smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := s.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("coordinator: the response writer cannot be hijacked")
	}
	nc, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	// Response bytes the HTTP server has not written yet go out first.
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("coordinator: flush the upgrade response: %w", err)
	}
	// Bytes the HTTP server read past the request (a client may send its
	// first frame before the upgrade response arrives) are buffered in
	// the new reader too: the websocket library takes over whatever the
	// reader it is given holds buffered.
	n := brw.Reader.Buffered()
	b, _ := brw.Reader.Peek(n)
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(b)), nc), max(wsBufferSize, n))
	if n > 0 {
		if _, err := br.Peek(n); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("coordinator: carry over buffered bytes: %w", err)
		}
	}
	s.fc = newFrameConn(nc)
	return nc, bufio.NewReadWriter(br, bufio.NewWriterSize(s.fc, wsBufferSize)), nil
}

// helloDone releases the connection's place among its address's
// connections without hello (once).
func (cn *Conn) helloDone() {
	if cn.prehello {
		cn.prehello = false
		cn.F.Gate.ClosePreHello(cn.Addr)
	}
}

// isReadLimit reports whether err is a read over the websocket's read
// limit (websocket.ErrMessageTooBig).
func isReadLimit(err error) bool {
	return errors.Is(err, websocket.ErrMessageTooBig)
}

// codeRejection is the rejection kind of a close code.
func codeRejection(code string) int {
	switch code {
	case wire.CodeBadFrame:
		return metrics.RejBadFrame
	case wire.CodeVersion:
		return metrics.RejVersion
	case wire.CodeProtocol:
		return metrics.RejProtocol
	case wire.CodeRate:
		return metrics.RejRate
	case wire.CodeAuth:
		return metrics.RejAuth
	case wire.CodeJoinCode:
		return metrics.RejJoinCode
	case wire.CodeFull:
		return metrics.RejFull
	case wire.CodeRemoved:
		return metrics.RejRemoved
	}
	return metrics.RejNone
}

// ShortID is a device id prefix for logs.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func BadFrame(err error) error {
	return &CloseError{Code: wire.CodeBadFrame, Reason: err.Error()}
}

// refused is what closes a connection whose frame the handler refused: a
// malformed frame (wire.ErrBadFrame) or a valid one at the wrong time. A
// nil error (accepted) stays nil.
func refused(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, wire.ErrBadFrame) {
		return BadFrame(err)
	}
	return &CloseError{Code: wire.CodeProtocol, Reason: err.Error()}
}

// hello reads and checks cn's hello and admits the device.
func (c *Front) hello(cn *Conn) error {
	ctx := cn.ctx
	hctx, cancel := context.WithTimeout(ctx, c.Lim.HelloTimeout)
	typ, b, err := cn.ws.Read(hctx)
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	cn.helloDone()
	if err != nil {
		if timedOut {
			c.Met.Reject(metrics.RejHelloTimeout)
		}
		return err
	}
	c.Met.BytesIn.Add(int64(len(b)))
	if typ != websocket.MessageText {
		return BadFrame(errors.New("first frame must be a hello text frame"))
	}
	m, err := wire.DecodeControl(b)
	if err != nil {
		return BadFrame(err)
	}
	h, ok := m.(wire.Hello)
	if !ok {
		return &CloseError{Code: wire.CodeProtocol, Reason: "first message must be hello"}
	}
	if err := c.H.CheckHello(cn, h); err != nil {
		return err
	}
	cn.keepsX = h.KeepsX
	if err := c.H.Admit(cn, h); err != nil {
		return err
	}
	c.Gate.MarkActive(cn.ID)
	return nil
}

// frames reads and handles cn's frames after its hello until an error.
func (c *Front) frames(cn *Conn) error {
	// A connection upgraded before the session's secure aggregation was
	// known (SetSecAggMax at Start) and admitted after the Start raised
	// the others' limits.
	cn.RaiseReadLimit(c.FrameMax())
	for {
		typ, buf, err := c.readFrame(cn.ctx, cn.ws)
		if err != nil {
			return err
		}
		err = c.HandleFrame(cn, typ, buf.Bytes(), wire.Limits{MaxBytes: c.FrameMax()})
		c.Bufs.Put(buf)
		if err != nil {
			return err
		}
	}
}

// readFrame reads cn's next frame into a buffer from the front's free
// list (only an admitted update's payload is copied out of it); the
// caller returns the buffer with c.bufs.put.
func (c *Front) readFrame(ctx context.Context, ws wsConn) (websocket.MessageType, *bytes.Buffer, error) {
	typ, r, err := ws.Reader(ctx)
	if err != nil {
		return 0, nil, err
	}
	buf, ok := c.Bufs.Get()
	if !ok {
		buf = new(bytes.Buffer)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		c.Bufs.Put(buf)
		return 0, nil, err
	}
	return typ, buf, nil
}

func (c *Front) HandleFrame(cn *Conn, typ websocket.MessageType, b []byte, lim wire.Limits) error {
	{
		c.Met.BytesIn.Add(int64(len(b)))
		c.Met.FramesIn.Add(1)
		now := time.Now()
		if !cn.allow(now) {
			return &CloseError{Code: wire.CodeRate, Reason: fmt.Sprintf("more than %g messages per second", c.Lim.MsgRate)}
		}
		if typ == websocket.MessageBinary {
			if kind, _, err := wire.PeekKind(b); err == nil && kind == wire.KindSecAgg {
				f, err := wire.DecodeSecAggToCoordinator(b, lim)
				if err != nil {
					return BadFrame(err)
				}
				cn.heard.Store(int64(now.Sub(cn.born)) + 1)
				return refused(c.H.AcceptSecAgg(cn, f, len(b)))
			}
			u, err := wire.DecodeUpdate(b, lim)
			if err != nil {
				return BadFrame(err)
			}
			cn.heard.Store(int64(now.Sub(cn.born)) + 1)
			return refused(c.H.AcceptUpdate(cn, u, len(b)))
		}
		m, err := wire.DecodeControl(b)
		if err != nil {
			return BadFrame(err)
		}
		switch m := m.(type) {
		case wire.Status:
			return c.H.Status(cn, m.T)
		case wire.Leave:
			c.H.Leave(cn, m)
			return nil
		default:
			return &CloseError{Code: wire.CodeProtocol, Reason: fmt.Sprintf("unexpected %T after hello", m)}
		}
	}
}
