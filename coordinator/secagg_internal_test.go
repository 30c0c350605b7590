package coordinator

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"browserfl/coordinator/store"
	"browserfl/shared/mechanism"
	"browserfl/shared/optim"
	"browserfl/shared/wire"
)

// edgeRelay stands for a session node: the refusals below must come
// before the core calls it.
type edgeRelay struct{ Relay }

// TestSharedNoiseRefusesEdges: edges do not carry secure aggregation, so
// the session side refuses to run a shared-noise session with edges
// attached, wrapping ErrSecAggEdges: AttachNode on a shared-noise
// session, and the session's secure aggregation set up with a node
// attached (a lobby started into shared noise after AttachNode).
func TestSharedNoiseRefusesEdges(t *testing.T) {
	sess := wire.SessionParams{Name: "shared", Dim: 10, DeadlineMillis: 3000, Algorithm: wire.SharedNoiseAlgorithm, Model: "logreg",
		Features: 4, Classes: 2, M: 10, Cohort: 10, Rounds: 2, Batch: 8, Clip: 1, Eta: 0.05, Rho: 50, Compressor: "f64", Threshold: 7}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	server, err := optim.NewServer(sess, make([]float64, sess.Dim), mechanism.NewStream(mechanism.Seed{1}, 0))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c, err := New(Config{Session: sess, JoinCode: "join-me", Server: server, Store: st, MinDevices: 10, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AttachNode(edgeRelay{}); !errors.Is(err, ErrSecAggEdges) {
		t.Errorf("AttachNode on a shared-noise session: %v, want %v", err, ErrSecAggEdges)
	}
	if c.node != nil {
		t.Error("AttachNode refused a shared-noise session but attached the node")
	}
	if sa, err := newSecAgg(sess, edgeRelay{}, log); !errors.Is(err, ErrSecAggEdges) || sa != nil {
		t.Errorf("secure aggregation with a node attached: %v, want %v", err, ErrSecAggEdges)
	}
	if sa, err := newSecAgg(sess, nil, log); err != nil || sa == nil {
		t.Errorf("secure aggregation without a node: %v, want one", err)
	}
}
