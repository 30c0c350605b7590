//go:build !race

package coordinator_test

// scaleOutDevices is TestScaleOut's device count (race_on_test.go: fewer
// under the race detector).
const scaleOutDevices = 300
