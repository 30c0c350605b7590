//go:build js && wasm

package samples

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"browserfl/shared/dataset"
	"browserfl/shared/task"
	"browserfl/wasm/idb"
	"browserfl/wasm/local"
)

// KeyPrefix is the prefix of the library's keys in the session's store:
// data/<source>/images, data/<source>/labels, data/<source>/rows.
const KeyPrefix = "data/"

// The sources, in the order All joins them.
const (
	Demo  = "demo"  // the coordinator's demo shard (pictures or rows)
	Files = "files" // the files the student picked
	Drawn = "drawn" // the student's drawings
	// Typed holds the rows typed in a row task's form (last, so rows
	// can still be typed once some are used).
	Typed = "typed"
)

// order is the order of the sources in All.
var order = []string{Demo, Files, Drawn, Typed}

// Library is the samples of one session's device, by source.
type Library struct {
	store   *idb.Store
	task    *task.Definition // a row task's session (nil for pictures)
	changed func()           // called after every change of the sources

	mu   sync.Mutex
	sets map[string]dataset.Set // source -> samples
	// demoTotal is the size of the page's demo shard, of which the demo
	// source holds the first chunks.
	demoTotal int
	// rows are a row task's sources as typed (their encoding is in
	// sets).
	rows map[string]task.Rows

	// rowsMu is held while a source's rows are read, grown and stored.
	rowsMu sync.Mutex
}

// New returns an empty library on the session's store st, for the
// session's task d (nil for pictures); changed is called after every
// change of the sources (Load, Save, SaveDemo, AddRows, SaveRows).
func New(st *idb.Store, d *task.Definition, changed func()) *Library {
	return &Library{store: st, task: d, changed: changed,
		sets: map[string]dataset.Set{}, rows: map[string]task.Rows{}}
}

// Load reads every stored source.
func (l *Library) Load(ctx context.Context) error {
	keys, err := l.store.Keys(ctx, KeyPrefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if src, ok := strings.CutSuffix(strings.TrimPrefix(k, KeyPrefix), "/rows"); ok && l.task != nil {
			b, err := l.store.Get(ctx, k)
			if err == nil {
				err = l.loadRows(src, b)
			}
			if err != nil {
				return fmt.Errorf("%s rows: %w", src, err)
			}
			continue
		}
		if !strings.HasSuffix(k, "/images") {
			continue
		}
		src := strings.TrimSuffix(strings.TrimPrefix(k, KeyPrefix), "/images")
		im, err := l.store.Get(ctx, k)
		if err != nil {
			return err
		}
		lab, err := l.store.Get(ctx, KeyPrefix+src+"/labels")
		if err != nil {
			return fmt.Errorf("%s labels: %w", src, err)
		}
		s, err := local.Decode(src, im, lab)
		if err != nil {
			return err
		}
		l.set(src, s)
	}
	l.loadDemoTotal(ctx)
	l.changed()
	return nil
}

// Source returns the stored samples of src.
func (l *Library) Source(src string) (dataset.Set, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sets[src]
	return s, ok
}

// set records the samples of src (already stored).
func (l *Library) set(src string, s dataset.Set) {
	l.mu.Lock()
	l.sets[src] = s
	l.mu.Unlock()
}

// All returns every stored sample, sources in a fixed order (demo, files,
// drawn, typed) so the single-pass cursor means the same thing after a
// reload.
func (l *Library) All() dataset.Set {
	var parts []dataset.Set
	for _, src := range order {
		if s, ok := l.Source(src); ok {
			parts = append(parts, s)
		}
	}
	return local.Join("local", parts...)
}

// Sizes returns the number of samples of each source held.
func (l *Library) Sizes() map[string]int {
	n := map[string]int{}
	l.mu.Lock()
	for k, s := range l.sets {
		n[k] = len(s.Samples)
	}
	l.mu.Unlock()
	return n
}

// OwnData reports whether the samples include the owner's own (drawings,
// picked files), as opposed to only the demo shard.
func (l *Library) OwnData() bool {
	for _, src := range local.OwnSources {
		if s, ok := l.Source(src); ok && len(s.Samples) > 0 {
			return true
		}
	}
	return false
}

// Save stores source src (replacing what was there) and records it.
func (l *Library) Save(ctx context.Context, src string, s dataset.Set) error {
	im, lab, err := local.Encode(s)
	if err != nil {
		return err
	}
	if err := l.store.Put(ctx, map[string][]byte{
		KeyPrefix + src + "/images": im,
		KeyPrefix + src + "/labels": lab,
	}); err != nil {
		return err
	}
	l.set(src, s)
	l.changed()
	return nil
}

// Shuffle permutes a new source once, with a seed from crypto/rand,
// before it is stored (see local.Shuffle).
func Shuffle(s dataset.Set) error {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return fmt.Errorf("shuffle seed: %w", err)
	}
	local.Shuffle(s, seed)
	return nil
}

// keyDemoTotal holds the demo shard's size (decimal), so a reload knows
// whether more is to come.
const keyDemoTotal = KeyPrefix + "demo/total"

// SaveDemo stores the demo source s and the shard's size total in one
// transaction, and records them.
func (l *Library) SaveDemo(ctx context.Context, s dataset.Set, total int) error {
	im, lab, err := local.Encode(s)
	if err != nil {
		return err
	}
	if err := l.store.Put(ctx, map[string][]byte{
		KeyPrefix + "demo/images": im,
		KeyPrefix + "demo/labels": lab,
		keyDemoTotal:              []byte(strconv.Itoa(total)),
	}); err != nil {
		return err
	}
	l.mu.Lock()
	l.sets[Demo] = s
	l.demoTotal = total
	l.mu.Unlock()
	l.changed()
	return nil
}

// loadDemoTotal reads the demo shard's size after a reload; a demo
// source stored without it (whole, by an earlier page) is complete.
func (l *Library) loadDemoTotal(ctx context.Context) {
	b, err := l.store.Get(ctx, keyDemoTotal)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.demoTotal = len(l.sets[Demo].Samples)
	if n, perr := strconv.Atoi(string(b)); err == nil && perr == nil && n > l.demoTotal {
		l.demoTotal = n
	}
}

// DemoSize returns how many demo samples the library holds and the demo
// shard's size.
func (l *Library) DemoSize() (have, total int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sets[Demo].Samples), l.demoTotal
}

// DemoComplete records that the demo shard has total samples, all held
// (the coordinator has none from there), and stores it.
func (l *Library) DemoComplete(ctx context.Context, total int) error {
	l.mu.Lock()
	l.demoTotal = total
	l.mu.Unlock()
	return l.store.Put(ctx, map[string][]byte{keyDemoTotal: []byte(strconv.Itoa(total))})
}
