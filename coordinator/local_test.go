package coordinator_test

import (
	"math"
	"testing"
)

// TestRealLocalOverWire runs "local" (private local training: K = b = 8
// hidden local steps per round) through the coordinator and real
// websockets with native devices, undisturbed and with faults (aborted
// and re-asked rounds). Same acceptance as TestRealAlgorithmOverWire.
func TestRealLocalOverWire(t *testing.T) {
	calm := realRun(t, "local", "", 0)
	faulty := realRun(t, "local", "", 0.1)
	t.Logf("held-out accuracy: undisturbed %.3f, with faults %.3f", calm, faulty)
	if calm < 0.9 || faulty < 0.9 || math.Abs(calm-faulty) > 0.05 {
		t.Errorf("accuracy undisturbed %.3f, with faults %.3f: want both >= 0.9 and within 0.05", calm, faulty)
	}
}
