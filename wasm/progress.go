//go:build js && wasm

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
	"browserfl/wasm/jsw"
	"browserfl/wasm/ui"
)

// Progress is the session's public progress as the coordinator serves it
// at GET /api/progress?code=<join code>: the last committed round and the
// global model's accuracy after each evaluated round.
type Progress struct {
	Committed int `json:"committed"`
	Rounds    int `json:"rounds"`
	Accuracy  []struct {
		Round    int     `json:"round"`
		Accuracy float64 `json:"accuracy"`
	} `json:"accuracy"`
}

// fetchProgress reads /api/progress: the rounds committed and the
// accuracy chart. The global model itself is fetched only when "try the
// model" asks for it (model): a poll that fetched every committed model
// cost a phone d float32 (31 KB on the pixels, 159 KB on the features)
// every round of the lesson, for a button few press.
func (t *trainer) fetchProgress() error {
	a := t.a
	b, err := jsw.Fetch(t.ctx, a.base+"/api/progress?code="+url.QueryEscape(a.code))
	if err != nil {
		return err
	}
	var p Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	t.mu.Lock()
	t.committed = max(t.committed, p.Committed)
	t.mu.Unlock()
	pts := make([]ui.Point, 0, len(p.Accuracy))
	for _, e := range p.Accuracy {
		pts = append(pts, ui.Point{Round: e.Round, Accuracy: e.Accuracy})
	}
	// A trusted session's figure grows with the rounds published.
	t.mu.Lock()
	t.published = max(t.published, p.Committed)
	t.mu.Unlock()
	sp := a.params
	trusted := algo.Private(sp) && algo.Trusted(sp) && t.runtime() != nil
	var pr plan.Progress
	if trusted {
		pr, _, _ = t.figures()
	}
	a.update(func(s *ui.State) {
		s.Train.Round = max(s.Train.Round, p.Committed)
		s.Train.Accuracy = pts
		if trusted {
			showPrivacy(s, pr)
		}
	})
	return nil
}

// model returns a copy of the current global model for "try the model":
// the one fetched last, fetched again from /api/model (a wire round frame
// holding the model parameters as X) when a later round has been
// committed since; asking is called before such a fetch. It is nil
// before the first commit; when the fetch fails it is the model fetched
// before (nil if none) with the error.
func (t *trainer) model(ctx context.Context, asking func()) ([]float64, error) {
	t.mu.Lock()
	stale := t.committed > t.modelRound
	t.mu.Unlock()
	var err error
	if stale {
		asking()
		a := t.a
		var b []byte
		if b, err = jsw.Fetch(ctx, a.base+"/api/model?code="+url.QueryEscape(a.code)); err == nil {
			var r wire.RoundFrame
			if r, err = wire.DecodeRound(b, wire.Limits{Dim: a.params.Dim}); err == nil {
				t.mu.Lock()
				if r.T > t.modelRound {
					t.x, t.modelRound = r.X, r.T
				}
				t.mu.Unlock()
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]float64(nil), t.x...), err
}
