package wsconn

import "time"

// Limits are per-connection and global limits.
type Limits struct {
	MaxDevices    int           // connected devices (default 20000)
	MaxFrameBytes int           // largest frame read (default: 2 x dense float64 payload of d + 1 KiB)
	MsgRate       float64       // messages per second per connection (default 20)
	MsgBurst      int           // token bucket burst (default 40)
	HelloTimeout  time.Duration // time to send hello (default 10s)
	MaxMisses     int           // consecutive assigned rounds without an update before a device is no longer sampled but only probed (default 2)
	WriteTimeout  time.Duration // per-frame write timeout (default 30s)
	Outbox        int           // queued frames per connection before it is dropped (default 16)
}

func (l Limits) WithDefaults(dim int) Limits {
	if l.MaxDevices <= 0 {
		l.MaxDevices = 20000
	}
	if l.MaxFrameBytes <= 0 {
		l.MaxFrameBytes = 16*dim + 1024
	}
	if l.MsgRate <= 0 {
		l.MsgRate = 20
	}
	if l.MsgBurst <= 0 {
		l.MsgBurst = 40
	}
	if l.HelloTimeout <= 0 {
		l.HelloTimeout = 10 * time.Second
	}
	if l.MaxMisses <= 0 {
		l.MaxMisses = 2
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = 30 * time.Second
	}
	if l.Outbox <= 0 {
		l.Outbox = 16
	}
	return l
}
