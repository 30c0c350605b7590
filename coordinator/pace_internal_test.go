package coordinator

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"browserfl/coordinator/metrics"
	"browserfl/coordinator/roster"
	"browserfl/coordinator/view"
	"browserfl/coordinator/wsconn"
	"browserfl/shared/wire"
)

// rateRelay is a session node whose edges hold connections to rate
// messages a second.
type rateRelay struct{ rate float64 }

func (rateRelay) SendRounds(int, wire.SessionParams, float64) {}
func (rateRelay) Holds(Link) bool                             { return false }
func (rateRelay) Edges() []view.EdgeStatus                    { return nil }
func (rateRelay) MetricRows() []metrics.Row                   { return nil }
func (r rateRelay) MsgRate() float64                          { return r.rate }

// TestPaceForTheSlowestEdge: the shortest round period follows the lowest
// message rate a device is held to, this process's or an edge's. Four
// connected devices, a cohort of 2 (share 1), one update frame a round:
// the period is 1/rate.
func TestPaceForTheSlowestEdge(t *testing.T) {
	sess := wire.SessionParams{Name: "pace", Dim: 4, DeadlineMillis: 5000, Algorithm: "nc", Model: "logreg",
		Features: 1, Classes: 2, M: 4, Cohort: 2, Rounds: 3, Batch: 1, Clip: 1, Eta: 1, Rho: 1}
	for _, tc := range []struct {
		name  string
		own   float64
		relay Relay
		want  time.Duration
	}{
		{"no edges", 20, nil, 50 * time.Millisecond},
		{"an edge that did not say", 20, rateRelay{0}, 50 * time.Millisecond},
		{"a slower edge", 20, rateRelay{4}, 250 * time.Millisecond},
		{"a faster edge", 5, rateRelay{40}, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, st := ncServerAndStore(t, sess)
			c, err := New(Config{Session: sess, JoinCode: "join-me", Server: srv, Store: st,
				Limits: wsconn.Limits{MsgRate: tc.own}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if tc.relay != nil {
				if err := c.AttachNode(tc.relay); err != nil {
					t.Fatal(err)
				}
			}
			c.mu.Lock()
			for _, id := range []string{"a", "b", "c", "d"} {
				c.roster.Add(&roster.Device{ID: id, Conn: &recLink{id: id}})
			}
			c.mu.Unlock()
			if got := c.minRoundPeriod(); got != tc.want {
				t.Fatalf("period %v, want %v", got, tc.want)
			}
		})
	}
}
