//go:build js && wasm

package main

import (
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

// fetchProgress reads /api/progress and, when a new round was committed,
// the current global model from /api/model (a wire round frame holding
// the model parameters as X), used by "try the model".
func (t *trainer) fetchProgress() error {
	a := t.a
	q := "?code=" + url.QueryEscape(a.code)
	b, err := jsw.Fetch(t.ctx, a.base+"/api/progress"+q)
	if err != nil {
		return err
	}
	var p Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	t.mu.Lock()
	have := t.modelRound
	t.mu.Unlock()
	if p.Committed > have {
		mb, err := jsw.Fetch(t.ctx, a.base+"/api/model"+q)
		if err == nil {
			r, derr := wire.DecodeRound(mb, wire.Limits{Dim: a.params.Dim})
			if derr == nil {
				t.mu.Lock()
				t.x, t.modelRound = r.X, r.T
				t.mu.Unlock()
			}
		}
	}
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
