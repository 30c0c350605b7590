package metrics

import (
	"strings"
	"testing"
)

// TestMetricsRegisteredOnce: the registry behind /metrics and its
// collectors are made at the first scrape and gathered again at every
// later one, which reads the rows and the counters afresh; two rows of
// one name are refused at every scrape.
func TestMetricsRegisteredOnce(t *testing.T) {
	tests := []struct {
		name  string
		rows  func(v float64) []Row
		want  []string // in the second scrape's text, after the values changed
		fails bool
	}{
		{"values read at each scrape", func(v float64) []Row {
			return []Row{{"browserfl_test_total", "A counter.", "counter", v}, {"browserfl_test_gauge", "A gauge.", "gauge", 2 * v}}
		}, []string{"browserfl_test_total 2\n", "browserfl_test_gauge 4\n", `browserfl_rejections_total{kind="full"} 1`, "# TYPE browserfl_test_total counter"}, false},
		{"two rows of one name", func(v float64) []Row {
			return []Row{{"browserfl_test_total", "A counter.", "counter", v}, {"browserfl_test_total", "A counter.", "counter", v}}
		}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			v := 1.0
			rows := func() []Row { return tc.rows(v) }
			var first, second strings.Builder
			err1 := m.Write(&first, rows, m.RoundLatency)
			reg := m.reg
			v = 2
			m.Reject(RejFull)
			err2 := m.Write(&second, rows, m.RoundLatency)
			if tc.fails {
				if err1 == nil || err2 == nil {
					t.Fatalf("duplicate rows accepted: %v, %v", err1, err2)
				}
				return
			}
			if err1 != nil || err2 != nil {
				t.Fatalf("write: %v, %v", err1, err2)
			}
			if m.reg != reg || reg == nil {
				t.Errorf("the registry was made again at the second scrape")
			}
			if !strings.Contains(first.String(), "browserfl_test_total 1\n") {
				t.Errorf("first scrape:\n%s", first.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(second.String(), w) {
					t.Errorf("second scrape lacks %q:\n%s", w, second.String())
				}
			}
		})
	}
}
