//go:build race

package coordinator_test

// scaleOutDevices is TestScaleOut's device count: under the race
// detector (5-10x slower and 5-10x the memory) the same test runs with
// fewer devices; without it, with the 300 the scale-out issue asks for.
const scaleOutDevices = 60
