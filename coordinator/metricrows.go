package coordinator

import (
	"io"

	"browserfl/coordinator/metrics"
)

// WriteMetrics writes the Prometheus text exposition of c's metrics: the
// session's rows (metrics.SessionRows) and, in the cluster shape, the
// session node's.
func (c *Coordinator) WriteMetrics(w io.Writer) error {
	rows := func() []metrics.Row {
		c.mu.Lock()
		g := metrics.SessionGauges{Committed: c.loop.committed, Known: c.roster.Len(), Eligible: c.roster.CountEligible(),
			Inactive: c.roster.Len() - c.roster.Connected()}
		node := c.node
		c.mu.Unlock()
		rows := c.front.Met.SessionRows(g)
		if node != nil {
			rows = append(rows, node.MetricRows()...)
		}
		return rows
	}
	return c.front.Met.Write(w, rows, c.front.Met.RoundLatency)
}
