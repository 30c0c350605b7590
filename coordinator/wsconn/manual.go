package wsconn

// NewManual returns a connection for f over ws (not yet admitted) without a
// writer goroutine: the caller drains its outbox itself (Outbox), frame by
// frame. The server fuzz test drives a session this way; ServeWS never
// does.
func NewManual(f *Front, ws wsConn) *Conn {
	return &Conn{F: f, ws: ws, outbox: make(chan OutFrame, f.Lim.Outbox), Done: make(chan struct{}), manual: true,
		msgs: f.Lim.MsgLimiter()}
}

// Queued is the outbox of a connection made by NewManual, for its caller
// to drain.
func (cn *Conn) Queued() <-chan OutFrame { return cn.outbox }
