package loadtest

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

// TapKey is a direction ("up": edge to session, "down") and a kind.
type TapKey struct {
	dir  string
	kind byte
}

// TapCount is what a Tap counted on one subject kind: messages and bytes.
type TapCount struct{ msgs, bytes int64 }

// Tap counts the cluster's envelopes on NATS by direction and kind
// (extra subscribers: the NATS server sends them a copy of everything).
// The bus admits only the cluster's own keys, each on its own subjects:
// the tap reads the edges' side with the session's key and each edge's
// down subject with that edge's key.
type Tap struct {
	ncs []*nats.Conn
	mu  sync.Mutex
	c   map[TapKey]TapCount
}

// StartTap subscribes, on the NATS server at url, to the cluster bus
// subjects under prefix (with the keys in keysDir) of the session and of
// each edge, and counts what passes.
func StartTap(url, prefix, keysDir string, edges []string) (*Tap, error) {
	t := &Tap{c: map[TapKey]TapCount{}}
	if err := t.add(url, bus.SessionSeedFile(keysDir), prefix+".up.*"); err != nil {
		t.Close()
		return nil, err
	}
	for _, id := range edges {
		if err := t.add(url, bus.EdgeSeedFile(keysDir, id), prefix+".down."+id); err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// add subscribes to subject with the key in seed.
func (t *Tap) add(url, seed, subject string) error {
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
		k := TapKey{f[1], m.Data[1]}
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

// Snapshot returns a copy of the counts so far.
func (t *Tap) Snapshot() map[TapKey]TapCount {
	for _, nc := range t.ncs {
		nc.Flush()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[TapKey]TapCount, len(t.c))
	for k, v := range t.c {
		out[k] = v
	}
	return out
}

// Close ends the subscriptions.
func (t *Tap) Close() {
	for _, nc := range t.ncs {
		nc.Close()
	}
}

// PrintTap prints what crossed NATS between two snapshots, per round.
func PrintTap(w io.Writer, before, after map[TapKey]TapCount, rounds int) {
	keys := make([]TapKey, 0, len(after))
	for k := range after {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b TapKey) int {
		if a.dir != b.dir {
			return strings.Compare(b.dir, a.dir) // up first
		}
		return int(a.kind) - int(b.kind)
	})
	for _, k := range keys {
		d := TapCount{after[k].msgs - before[k].msgs, after[k].bytes - before[k].bytes}
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
