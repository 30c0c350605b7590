package coordinator

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// metrics are the coordinator's counters, exported in the Prometheus text
// format by WriteMetrics through a prometheus registry
// (github.com/prometheus/client_golang). The counters stay atomics that
// the hot paths add to; each scrape reads them (rowCollector). Round
// latency is a prometheus histogram.
type metrics struct {
	connected        atomic.Int64
	connects         atomic.Int64
	newDevices       atomic.Int64
	authFailures     atomic.Int64
	badFrames        atomic.Int64
	rateLimited      atomic.Int64
	rejectedUpgrades atomic.Int64
	slowConsumers    atomic.Int64
	lateUpdates      atomic.Int64
	rejectedUpdates  atomic.Int64 // failed validation (norm bound)
	discardedRounds  atomic.Int64 // results that could not be served
	leaves           atomic.Int64 // devices that said they leave
	graceDrops       atomic.Int64 // cohort members dropped after the disconnect grace
	overSelected     atomic.Int64 // members asked beyond a round's target (replacements and probes)
	closedAtTarget   atomic.Int64 // rounds closed when their target of updates arrived, members still out
	updates          atomic.Int64
	framesIn         atomic.Int64
	framesOut        atomic.Int64
	pings            atomic.Int64
	bytesIn          atomic.Int64
	bytesOut         atomic.Int64
	evicted          atomic.Int64
	rejections       [numRejections]atomic.Int64

	mu        sync.Mutex
	rounds    int64
	included  int64
	latencies []time.Duration // of committed rounds, most recent last (bounded)

	// roundLatency is the histogram of committed rounds' latency (start
	// to commit), in seconds.
	roundLatency prometheus.Histogram

	// The registry /metrics is gathered from, with its collectors
	// registered once, at the first scrape (metrics.write).
	regOnce sync.Once
	reg     *prometheus.Registry
	regErr  error
}

const keepLatencies = 4096

// Rejection kinds: the label of browserfl_rejections_total.
const (
	rejNone              = iota // not a rejection (no label)
	rejJoinCode                 // wrong join code (websocket or HTTP)
	rejJoinThrottled            // join attempt refused by the backoff, unchecked
	rejRegisterThrottled        // new device id refused by the registration rate
	rejAuth                     // unknown device id or wrong secret
	rejFull                     // over -max-devices (pre-hello connections count)
	rejPreHello                 // too many connections without hello from one address
	rejHelloTimeout             // no hello within the hello timeout
	rejOrigin                   // websocket upgrade refused (origin, handshake)
	rejBadFrame                 // frame failed to decode
	rejOversized                // frame over the read limit
	rejVersion                  // hello with another protocol version
	rejProtocol                 // valid frame at the wrong time
	rejRate                     // per-connection message rate
	rejSlowConsumer             // outbox full or write timed out
	rejPingTimeout              // no pong: the client does not read
	rejMetricsToken             // /metrics without the token
	rejTeacherSecret            // teacher endpoint without the teacher secret, or a wrong one
	rejTeacherThrottled         // teacher secret refused by the backoff, unchecked
	rejNickname                 // nickname too close to a present one (or invalid after NFKC)
	rejRemoved                  // hello of a device the teacher removed from the session
	numRejections
)

var rejectionNames = [numRejections]string{"", "join_code", "join_throttled", "register_throttled", "auth", "full",
	"prehello_per_address", "hello_timeout", "origin", "bad_frame", "oversized", "version", "protocol", "rate",
	"slow_consumer", "ping_timeout", "metrics_token", "teacher_secret",
	"teacher_throttled", "nickname", "removed"}

func (m *metrics) reject(kind int) {
	if kind != rejNone {
		m.rejections[kind].Add(1)
	}
}

func newMetrics() *metrics {
	return &metrics{roundLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "browserfl_round_latency_seconds",
		Help: "Round latency, from the round's start to its commit.",
		// 10 ms to about 80 s, doubling.
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	})}
}

func (m *metrics) roundCommitted(latency time.Duration, included, cohort int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rounds++
	m.included += int64(included)
	m.roundLatency.Observe(latency.Seconds())
	m.latencies = append(m.latencies, latency)
	if len(m.latencies) > keepLatencies {
		m.latencies = slices.Delete(m.latencies, 0, len(m.latencies)-keepLatencies)
	}
}

// quantile returns the q-quantile (nearest rank) of the kept round
// latencies, 0 if none.
func (m *metrics) quantile(q float64) time.Duration {
	m.mu.Lock()
	l := slices.Clone(m.latencies)
	m.mu.Unlock()
	if len(l) == 0 {
		return 0
	}
	slices.Sort(l)
	i := int(q*float64(len(l))+0.5) - 1
	return l[min(max(i, 0), len(l)-1)]
}

// WriteMetrics writes the Prometheus text exposition of c's metrics.
func (c *Coordinator) WriteMetrics(w io.Writer) error {
	return c.met.write(w, c.metricRows, c.met.roundLatency)
}

// metricRows reads c's rows of /metrics.
func (c *Coordinator) metricRows() []metricRow {
	m := c.met
	c.mu.Lock()
	committed, devices, eligible := c.committed, len(c.devices), c.countEligibleLocked()
	inactive := len(c.devices) - c.nconn
	node := c.node
	c.mu.Unlock()
	m.mu.Lock()
	rounds, included := m.rounds, m.included
	m.mu.Unlock()
	rows := []metricRow{
		{"browserfl_devices_connected", "Device websocket connections open (with or without hello).", "gauge", float64(m.connected.Load())},
		{"browserfl_devices_known", "Devices seen by this process.", "gauge", float64(devices)},
		{"browserfl_devices_eligible", "Connected devices not in a round.", "gauge", float64(eligible)},
		{"browserfl_connects_total", "Accepted hellos.", "counter", float64(m.connects.Load())},
		{"browserfl_devices_registered_total", "Device ids issued.", "counter", float64(m.newDevices.Load())},
		{"browserfl_auth_failures_total", "Hellos refused for join code or secret.", "counter", float64(m.authFailures.Load())},
		{"browserfl_devices_inactive", "Registered devices in memory without a connection.", "gauge", float64(inactive)},
		{"browserfl_devices_evicted_total", "Inactive devices forgotten over the cap (their store record stays).", "counter", float64(m.evicted.Load())},
		{"browserfl_bad_frames_total", "Connections closed for a frame that failed to decode, was over the size limit or had another protocol version.", "counter", float64(m.badFrames.Load())},
		{"browserfl_rate_limited_total", "Connections closed by the message rate limit.", "counter", float64(m.rateLimited.Load())},
		{"browserfl_rejected_upgrades_total", "Websocket upgrades refused (origin, handshake).", "counter", float64(m.rejectedUpgrades.Load())},
		{"browserfl_slow_consumers_total", "Connections dropped for a full outbox, a write timeout or a missing pong.", "counter", float64(m.slowConsumers.Load())},
		{"browserfl_updates_total", "Updates admitted to a round.", "counter", float64(m.updates.Load())},
		{"browserfl_late_updates_total", "Updates dropped because their round had closed.", "counter", float64(m.lateUpdates.Load())},
		{"browserfl_rejected_updates_total", "Updates rejected by validation (norm above the session's bound); treated as excluded.", "counter", float64(m.rejectedUpdates.Load())},
		{"browserfl_discarded_rounds_total", "Rounds discarded because their result could not be served (state before them kept).", "counter", float64(m.discardedRounds.Load())},
		{"browserfl_leaves_total", "Leave messages received (the device stopped taking part).", "counter", float64(m.leaves.Load())},
		{"browserfl_overselected_total", "Cohort members asked beyond a round's target: replacements for members not yet trusted, and probes of devices no longer sampled.", "counter", float64(m.overSelected.Load())},
		{"browserfl_rounds_closed_at_target_total", "Rounds closed as soon as their target of updates arrived while members were still out (those are excluded).", "counter", float64(m.closedAtTarget.Load())},
		{"browserfl_grace_drops_total", "Cohort members dropped from a round after disconnecting for longer than the grace.", "counter", float64(m.graceDrops.Load())},
		{"browserfl_frames_in_total", "Frames read after hello.", "counter", float64(m.framesIn.Load())},
		{"browserfl_frames_out_total", "Frames written.", "counter", float64(m.framesOut.Load())},
		{"browserfl_pings_total", "Heartbeat pings sent (a device that sent an update less than an interval ago is not pinged).", "counter", float64(m.pings.Load())},
		{"browserfl_bytes_in_total", "Websocket payload bytes read.", "counter", float64(m.bytesIn.Load())},
		{"browserfl_bytes_out_total", "Round assignment bytes queued.", "counter", float64(m.bytesOut.Load())},
		{"browserfl_rounds_committed_total", "Rounds committed by this process.", "counter", float64(rounds)},
		{"browserfl_round_committed", "Last committed round of the session.", "gauge", float64(committed)},
		{"browserfl_updates_included_total", "Updates included in committed rounds.", "counter", float64(included)},
		{"browserfl_round_latency_p50_seconds", "Median round latency (start to commit).", "gauge", m.quantile(0.5).Seconds()},
		{"browserfl_round_latency_p99_seconds", "99th percentile round latency.", "gauge", m.quantile(0.99).Seconds()},
	}
	if n := node; n != nil {
		rows = append(rows, n.metricRows()...)
	}
	return rows
}

// metricRow is one metric read at scrape time.
type metricRow struct {
	name, help, typ string // typ: "counter" or "gauge"
	v               float64
}

// rowCollector is a prometheus.Collector of rows read when the registry
// is gathered: values kept elsewhere (atomics, the coordinator's state)
// exported as constant metrics, the client library's way for values it
// does not own, and m's rejections by kind. It is unchecked (Describe
// sends nothing); Gather still refuses two metrics of one name. Each
// row's description is made once, at its first scrape.
type rowCollector struct {
	rows func() []metricRow
	m    *metrics

	mu       sync.Mutex
	descs    map[string]*prometheus.Desc
	rejected *prometheus.Desc
}

func newRowCollector(rows func() []metricRow, m *metrics) *rowCollector {
	return &rowCollector{rows: rows, m: m, descs: map[string]*prometheus.Desc{},
		rejected: prometheus.NewDesc("browserfl_rejections_total", "Refused or dropped connections and requests by kind.", []string{"kind"}, nil)}
}

func (*rowCollector) Describe(chan<- *prometheus.Desc) {}

func (rc *rowCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range rc.rows() {
		t := prometheus.GaugeValue
		if r.typ == "counter" {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(rc.desc(r), t, r.v)
	}
	for k, name := range rejectionNames {
		if k == rejNone {
			continue
		}
		ch <- prometheus.MustNewConstMetric(rc.rejected, prometheus.CounterValue, float64(rc.m.rejections[k].Load()), name)
	}
}

// desc returns r's description, made at its first use.
func (rc *rowCollector) desc(r metricRow) *prometheus.Desc {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d := rc.descs[r.name]
	if d == nil {
		d = prometheus.NewDesc(r.name, r.help, nil, nil)
		rc.descs[r.name] = d
	}
	return d
}

// write gathers m's registry and writes its Prometheus text exposition
// to w. The registry is made at the first call, with the rows (read at
// every gather), m's rejections and the collectors extra registered
// once; later calls gather the same registry.
func (m *metrics) write(w io.Writer, rows func() []metricRow, extra ...prometheus.Collector) error {
	m.regOnce.Do(func() {
		reg := prometheus.NewRegistry()
		for _, c := range append([]prometheus.Collector{newRowCollector(rows, m)}, extra...) {
			if err := reg.Register(c); err != nil {
				m.regErr = fmt.Errorf("metrics: %w", err)
				return
			}
		}
		m.reg = reg
	})
	if m.regErr != nil {
		return m.regErr
	}
	families, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}
