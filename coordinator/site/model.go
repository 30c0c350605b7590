package site

import (
	"errors"
	"fmt"
	"math"

	"browserfl/shared/wire"
)

// ModelSchema names the layout of /api/model.json.
const ModelSchema = "browserfl.model/v1"

// ModelJSON is the document of /api/model.json: the global model after
// round Round with what is needed to use it (docs/coordinator.md, "The
// model as JSON").
type ModelJSON struct {
	Schema   string             `json:"schema"`
	Session  wire.SessionParams `json:"session"`
	Round    int                `json:"round"`
	Finished bool               `json:"finished"`
	Model    string             `json:"model"`
	Features int                `json:"features"`
	Classes  int                `json:"classes"`
	// Hidden is the MLP's hidden width (0 for logreg).
	Hidden int      `json:"hidden,omitempty"`
	Labels []string `json:"labels"`
	// Accuracy is the last test-set evaluation (round AccuracyRound).
	Accuracy      *float64 `json:"accuracy,omitempty"`
	AccuracyRound int      `json:"accuracy_round,omitempty"`
	// AccuracySamples is the number of test samples it was measured on.
	AccuracySamples int       `json:"accuracy_samples,omitempty"`
	Weights         []float64 `json:"weights"`
}

// ValidateModelJSON checks a decoded /api/model.json document against its
// own session: schema, model name, dimensions and finite weights.
func ValidateModelJSON(m ModelJSON) error {
	if m.Schema != ModelSchema {
		return fmt.Errorf("schema %q, want %q", m.Schema, ModelSchema)
	}
	if m.Model != m.Session.Model || m.Features != m.Session.Features || m.Classes != m.Session.Classes {
		return errors.New("model, features or classes differ from the session")
	}
	if len(m.Weights) != m.Session.Dim {
		return fmt.Errorf("%d weights, the session's d is %d", len(m.Weights), m.Session.Dim)
	}
	switch m.Model {
	case "logreg", "logreg-unit":
		if m.Session.Dim != m.Classes*(m.Features+1) {
			return fmt.Errorf("%s: d != classes*(features+1)", m.Model)
		}
	case "mlp":
		h := m.Hidden
		if h < 1 || m.Session.Dim != h*m.Features+h+m.Classes*h+m.Classes {
			return errors.New("mlp: d != H*F + H + C*H + C")
		}
	}
	if len(m.Labels) != m.Classes {
		return fmt.Errorf("%d labels for %d classes", len(m.Labels), m.Classes)
	}
	for i, v := range m.Weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("weight %d is %v", i, v)
		}
	}
	return nil
}
