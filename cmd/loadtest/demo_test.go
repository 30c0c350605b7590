package main

import (
	"strings"
	"testing"
)

// TestPrintDemo: the demo report ends with the line a regression check
// reads, "coordinator peak RSS: X MiB".
func TestPrintDemo(t *testing.T) {
	var b strings.Builder
	printDemo(&b, demoResult{devices: 10, samples: 6400, rounds: 200, rssIdle: 20 << 20, hwm: 150<<20 + 512<<10})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if last := lines[len(lines)-1]; last != "coordinator peak RSS: 150.5 MiB" {
		t.Errorf("last line %q", last)
	}
	if !strings.Contains(b.String(), "coordinator RSS before any device: 20.0 MiB") {
		t.Errorf("report:\n%s", b.String())
	}
}
