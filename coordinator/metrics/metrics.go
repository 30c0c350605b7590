package metrics

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

// Metrics are the coordinator's counters, exported in the Prometheus text
// format by WriteMetrics through a prometheus registry
// (github.com/prometheus/client_golang). The counters stay atomics that
// the hot paths add to; each scrape reads them (rowCollector). Round
// latency is a prometheus histogram.
type Metrics struct {
	Connected        atomic.Int64
	Connects         atomic.Int64
	NewDevices       atomic.Int64
	AuthFailures     atomic.Int64
	BadFrames        atomic.Int64
	RateLimited      atomic.Int64
	RejectedUpgrades atomic.Int64
	SlowConsumers    atomic.Int64
	LateUpdates      atomic.Int64
	RejectedUpdates  atomic.Int64 // failed validation (norm bound)
	DiscardedRounds  atomic.Int64 // results that could not be served, or secure aggregations below their threshold
	SecAggRefused    atomic.Int64 // secure aggregation messages refused (out of place, or failing shared/secagg's checks)
	RejectedSums     atomic.Int64 // shared-noise rounds whose sum failed its tests (engine.CheckSum): discarded
	Leaves           atomic.Int64 // devices that said they leave
	GraceDrops       atomic.Int64 // cohort members dropped after the disconnect grace
	OverSelected     atomic.Int64 // members asked beyond a round's target (replacements and probes)
	ClosedAtTarget   atomic.Int64 // rounds closed when their target of updates arrived, members still out
	Updates          atomic.Int64
	FramesIn         atomic.Int64
	FramesOut        atomic.Int64
	Pings            atomic.Int64
	BytesIn          atomic.Int64
	BytesOut         atomic.Int64
	Evicted          atomic.Int64
	Rejections       [NumRejections]atomic.Int64

	mu        sync.Mutex
	rounds    int64
	included  int64
	latencies []time.Duration // of committed rounds, most recent last (bounded)

	// RoundLatency is the histogram of committed rounds' latency (start
	// to commit), in seconds.
	RoundLatency prometheus.Histogram

	// The registry /metrics is gathered from, with its collectors
	// registered once, at the first scrape (metrics.write).
	regOnce sync.Once
	reg     *prometheus.Registry
	regErr  error
}

const keepLatencies = 4096

// Rejection kinds: the label of browserfl_rejections_total.
const (
	RejNone              = iota // not a rejection (no label)
	RejJoinCode                 // wrong join code (websocket or HTTP)
	RejJoinThrottled            // join attempt refused by the backoff, unchecked
	RejRegisterThrottled        // new device id refused by the registration rate
	RejAuth                     // unknown device id or wrong secret
	RejFull                     // over -max-devices (pre-hello connections count)
	RejPreHello                 // too many connections without hello from one address
	RejHelloTimeout             // no hello within the hello timeout
	RejOrigin                   // websocket upgrade refused (origin, handshake)
	RejBadFrame                 // frame failed to decode
	RejOversized                // frame over the read limit
	RejVersion                  // hello with another protocol version
	RejProtocol                 // valid frame at the wrong time
	RejRate                     // per-connection message rate
	RejSlowConsumer             // outbox full or write timed out
	RejPingTimeout              // no pong: the client does not read
	RejMetricsToken             // /metrics without the token
	RejTeacherSecret            // teacher endpoint without the teacher secret, or a wrong one
	RejTeacherThrottled         // teacher secret refused by the backoff, unchecked
	RejNickname                 // nickname too close to a present one (or invalid after NFKC)
	RejRemoved                  // hello of a device the teacher removed from the session
	RejTask                     // a teacher's task definition or way of learning that is malformed or cannot make a session
	RejDemoRange                // a demo shard chunk with malformed parameters, or past the shard's end
	RejAPIRate                  // a status read or a new demo shard over the address's rate
	NumRejections
)

var rejectionNames = [NumRejections]string{"", "join_code", "join_throttled", "register_throttled", "auth", "full",
	"prehello_per_address", "hello_timeout", "origin", "bad_frame", "oversized", "version", "protocol", "rate",
	"slow_consumer", "ping_timeout", "metrics_token", "teacher_secret",
	"teacher_throttled", "nickname", "removed", "task", "demo_range", "api_rate"}

func (m *Metrics) Reject(kind int) {
	if kind != RejNone {
		m.Rejections[kind].Add(1)
	}
}

func New() *Metrics {
	return &Metrics{RoundLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "browserfl_round_latency_seconds",
		Help: "Round latency, from the round's start to its commit.",
		// 10 ms to about 80 s, doubling.
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	})}
}

func (m *Metrics) RoundCommitted(latency time.Duration, included, cohort int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rounds++
	m.included += int64(included)
	m.RoundLatency.Observe(latency.Seconds())
	m.latencies = append(m.latencies, latency)
	if len(m.latencies) > keepLatencies {
		m.latencies = slices.Delete(m.latencies, 0, len(m.latencies)-keepLatencies)
	}
}

// Totals returns the committed rounds and the updates included in them.
func (m *Metrics) Totals() (rounds, included int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rounds, m.included
}

// Quantile returns the q-quantile (nearest rank) of the kept round
// latencies, 0 if none.
func (m *Metrics) Quantile(q float64) time.Duration {
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

// Row is one metric read at scrape time.
type Row struct {
	Name, Help, Type string // typ: "counter" or "gauge"
	Value            float64
}

// rowCollector is a prometheus.Collector of rows read when the registry
// is gathered: values kept elsewhere (atomics, the coordinator's state)
// exported as constant metrics, the client library's way for values it
// does not own, and m's rejections by kind. It is unchecked (Describe
// sends nothing); Gather still refuses two metrics of one name. Each
// row's description is made once, at its first scrape.
type rowCollector struct {
	rows func() []Row
	m    *Metrics

	mu       sync.Mutex
	descs    map[string]*prometheus.Desc
	rejected *prometheus.Desc
}

func newRowCollector(rows func() []Row, m *Metrics) *rowCollector {
	return &rowCollector{rows: rows, m: m, descs: map[string]*prometheus.Desc{},
		rejected: prometheus.NewDesc("browserfl_rejections_total", "Refused or dropped connections and requests by kind.", []string{"kind"}, nil)}
}

func (*rowCollector) Describe(chan<- *prometheus.Desc) {}

func (rc *rowCollector) Collect(ch chan<- prometheus.Metric) {
	for _, r := range rc.rows() {
		t := prometheus.GaugeValue
		if r.Type == "counter" {
			t = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(rc.desc(r), t, r.Value)
	}
	for k, name := range rejectionNames {
		if k == RejNone {
			continue
		}
		ch <- prometheus.MustNewConstMetric(rc.rejected, prometheus.CounterValue, float64(rc.m.Rejections[k].Load()), name)
	}
}

// desc returns r's description, made at its first use.
func (rc *rowCollector) desc(r Row) *prometheus.Desc {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	d := rc.descs[r.Name]
	if d == nil {
		d = prometheus.NewDesc(r.Name, r.Help, nil, nil)
		rc.descs[r.Name] = d
	}
	return d
}

// Write gathers m's registry and writes its Prometheus text exposition
// to w. The registry is made at the first call, with the rows (read at
// every gather), m's rejections and the collectors extra registered
// once; later calls gather the same registry.
func (m *Metrics) Write(w io.Writer, rows func() []Row, extra ...prometheus.Collector) error {
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
