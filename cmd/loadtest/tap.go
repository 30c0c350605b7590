package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"browserfl/coordinator/bus"
)

// busKinds names the cluster envelopes' kinds (byte 1 of an envelope;
// the list is coordinator/bus/bus.go's).
var busKinds = map[byte]string{
	1: "hello", 2: "aggregate", 3: "reject", 4: "status", 5: "leave", 6: "disconnect", 7: "roster", 8: "edge-beat",
	20: "control", 21: "close", 22: "round", 23: "session-beat",
}

// tapKey is a direction ("up": edge to session, "down") and a kind.
type tapKey struct {
	dir  string
	kind byte
}

type tapCount struct{ msgs, bytes int64 }

// natsTap counts the cluster's envelopes on NATS by direction and kind
// (extra subscribers: the NATS server sends them a copy of everything).
// The bus admits only the cluster's own keys, each on its own subjects:
// the tap reads the edges' side with the session's key and each edge's
// down subject with that edge's key.
type natsTap struct {
	ncs []*nats.Conn
	mu  sync.Mutex
	c   map[tapKey]tapCount
}

func startTap(url, prefix, keysDir string, edges []string) (*natsTap, error) {
	t := &natsTap{c: map[tapKey]tapCount{}}
	if err := t.add(url, bus.SessionSeedFile(keysDir), prefix+".up.*"); err != nil {
		t.close()
		return nil, err
	}
	for _, id := range edges {
		if err := t.add(url, bus.EdgeSeedFile(keysDir, id), prefix+".down."+id); err != nil {
			t.close()
			return nil, err
		}
	}
	return t, nil
}

// add subscribes to subject with the key in seed.
func (t *natsTap) add(url, seed, subject string) error {
	key, err := nats.NkeyOptionFromSeed(seed)
	if err != nil {
		return fmt.Errorf("nats tap: %w", err)
	}
	nc, err := nats.Connect(url, nats.Name("browserfl-loadtest-tap"), key)
	if err != nil {
		return fmt.Errorf("nats tap: %w", err)
	}
	t.ncs = append(t.ncs, nc)
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		f := strings.Split(m.Subject, ".")
		if len(f) != 3 || len(m.Data) < 2 {
			return
		}
		k := tapKey{f[1], m.Data[1]}
		t.mu.Lock()
		c := t.c[k]
		c.msgs++
		c.bytes += int64(len(m.Data))
		t.c[k] = c
		t.mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("nats tap: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("nats tap: %w", err)
	}
	return nil
}

func (t *natsTap) snapshot() map[tapKey]tapCount {
	for _, nc := range t.ncs {
		nc.Flush()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[tapKey]tapCount, len(t.c))
	for k, v := range t.c {
		out[k] = v
	}
	return out
}

func (t *natsTap) close() {
	for _, nc := range t.ncs {
		nc.Close()
	}
}

// printTap prints what crossed NATS between two snapshots, per round.
func printTap(w io.Writer, before, after map[tapKey]tapCount, rounds int) {
	keys := make([]tapKey, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tapKey) int {
		if a.dir != b.dir {
			return strings.Compare(b.dir, a.dir) // up first
		}
		return int(a.kind) - int(b.kind)
	})
	for _, k := range keys {
		d := tapCount{after[k].msgs - before[k].msgs, after[k].bytes - before[k].bytes}
		if d.msgs == 0 {
			continue
		}
		name := busKinds[k.kind]
		if name == "" {
			name = fmt.Sprintf("kind %d", k.kind)
		}
		fmt.Fprintf(w, "NATS tap, %s %s: %.1f messages, %.0f B per round\n", k.dir, name,
			float64(d.msgs)/float64(rounds), float64(d.bytes)/float64(rounds))
	}
}
