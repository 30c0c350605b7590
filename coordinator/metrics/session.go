package metrics

// SessionGauges is what the session core reads of its state at scrape
// time for its rows of /metrics.
type SessionGauges struct {
	Committed int // last committed round
	Known     int // devices with a record in this process
	Eligible  int // connected devices not in a round
	Inactive  int // devices with a record and no connection
}

// SessionRows returns the session process's rows of /metrics: m's
// counters and totals, and g.
func (m *Metrics) SessionRows(g SessionGauges) []Row {
	rounds, included := m.Totals()
	rows := []Row{
		{"browserfl_devices_connected", "Device websocket connections open (with or without hello).", "gauge", float64(m.Connected.Load())},
		{"browserfl_devices_known", "Devices seen by this process.", "gauge", float64(g.Known)},
		{"browserfl_devices_eligible", "Connected devices not in a round.", "gauge", float64(g.Eligible)},
		{"browserfl_connects_total", "Accepted hellos.", "counter", float64(m.Connects.Load())},
		{"browserfl_devices_registered_total", "Device ids issued.", "counter", float64(m.NewDevices.Load())},
		{"browserfl_auth_failures_total", "Hellos refused for join code or secret.", "counter", float64(m.AuthFailures.Load())},
		{"browserfl_devices_inactive", "Registered devices in memory without a connection.", "gauge", float64(g.Inactive)},
		{"browserfl_devices_evicted_total", "Inactive devices forgotten over the cap (their store record stays).", "counter", float64(m.Evicted.Load())},
		{"browserfl_bad_frames_total", "Connections closed for a frame that failed to decode, was over the size limit or had another protocol version.", "counter", float64(m.BadFrames.Load())},
		{"browserfl_rate_limited_total", "Connections closed by the message rate limit.", "counter", float64(m.RateLimited.Load())},
		{"browserfl_rejected_upgrades_total", "Websocket upgrades refused (origin, handshake).", "counter", float64(m.RejectedUpgrades.Load())},
		{"browserfl_slow_consumers_total", "Connections dropped for a full outbox, a write timeout or a missing pong.", "counter", float64(m.SlowConsumers.Load())},
		{"browserfl_updates_total", "Updates admitted to a round.", "counter", float64(m.Updates.Load())},
		{"browserfl_late_updates_total", "Updates dropped because their round had closed.", "counter", float64(m.LateUpdates.Load())},
		{"browserfl_rejected_updates_total", "Updates rejected by validation (norm above the session's bound); treated as excluded.", "counter", float64(m.RejectedUpdates.Load())},
		{"browserfl_discarded_rounds_total", "Rounds discarded because their result could not be served, or their secure aggregation fell below its threshold (state before them kept).", "counter", float64(m.DiscardedRounds.Load())},
		{"browserfl_rejected_sums_total", "Shared-noise rounds whose sum secure aggregation unmasked failed its tests (outside the honest range, wrapped, not finite, norm over the bound); each discarded, also counted in browserfl_discarded_rounds_total.", "counter", float64(m.RejectedSums.Load())},
		{"browserfl_secagg_refused_total", "Secure aggregation messages refused (out of place, speaking for another device, or failing their checks); the sender's connection is closed.", "counter", float64(m.SecAggRefused.Load())},
		{"browserfl_leaves_total", "Leave messages received (the device stopped taking part).", "counter", float64(m.Leaves.Load())},
		{"browserfl_overselected_total", "Cohort members asked beyond a round's target: replacements for members not yet trusted, and probes of devices no longer sampled.", "counter", float64(m.OverSelected.Load())},
		{"browserfl_rounds_closed_at_target_total", "Rounds closed as soon as their target of updates arrived while members were still out (those are excluded).", "counter", float64(m.ClosedAtTarget.Load())},
		{"browserfl_grace_drops_total", "Cohort members dropped from a round after disconnecting for longer than the grace.", "counter", float64(m.GraceDrops.Load())},
		{"browserfl_frames_in_total", "Frames read after hello.", "counter", float64(m.FramesIn.Load())},
		{"browserfl_frames_out_total", "Frames written.", "counter", float64(m.FramesOut.Load())},
		{"browserfl_pings_total", "Heartbeat pings sent (a device that sent an update less than an interval ago is not pinged).", "counter", float64(m.Pings.Load())},
		{"browserfl_bytes_in_total", "Websocket payload bytes read.", "counter", float64(m.BytesIn.Load())},
		{"browserfl_bytes_out_total", "Round assignment bytes queued.", "counter", float64(m.BytesOut.Load())},
		{"browserfl_rounds_committed_total", "Rounds committed by this process.", "counter", float64(rounds)},
		{"browserfl_round_committed", "Last committed round of the session.", "gauge", float64(g.Committed)},
		{"browserfl_updates_included_total", "Updates included in committed rounds.", "counter", float64(included)},
		{"browserfl_round_latency_p50_seconds", "Median round latency (start to commit).", "gauge", m.Quantile(0.5).Seconds()},
		{"browserfl_round_latency_p99_seconds", "99th percentile round latency.", "gauge", m.Quantile(0.99).Seconds()},
	}
	return rows
}
