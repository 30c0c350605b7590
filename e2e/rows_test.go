package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"browserfl/coordinator/api"
	"browserfl/internal/loopback"
	"browserfl/shared/task"
)

// deviceBin builds cmd/device once per test binary.
var deviceBin struct {
	once sync.Once
	path string
	err  error
}

func deviceBinary(t *testing.T) string {
	t.Helper()
	deviceBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "browserfl-e2e-bin-")
		if err != nil {
			deviceBin.err = err
			return
		}
		deviceBin.path = filepath.Join(dir, "device")
		if err := goBuild(nil, nil, "./cmd/device", deviceBin.path); err != nil {
			deviceBin.err = fmt.Errorf("building cmd/device: %w", err)
		}
	})
	if deviceBin.err != nil {
		t.Fatal(deviceBin.err)
	}
	return deviceBin.path
}

// rowTaskCoordinator starts the real coordinator (its own process) on
// the built-in row task name for devices devices, with demo rows; it is
// killed when the test ends.
func rowTaskCoordinator(t *testing.T, name, code string, devices int, extra ...string) *process {
	t.Helper()
	b, err := task.LookupBuiltin(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repoRoot(), b.DefaultDir)
	if filepath.IsAbs(b.DefaultDir) {
		dir = b.DefaultDir
	}
	logf, err := os.CreateTemp("", "browserfl-e2e-coordinator-*.log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	coord := &process{t: t, bin: coordinatorBinary(t), addr: loopback.Addr(t), dataDir: t.TempDir(), log: logf, args: append([]string{
		"-join-code", code, "-task", name, "-dataset", dir, "-eval-every", "1", "-eval-samples", "1000",
		"-demo-shards", "20", "-deadline", "20s", "-round-gap", "300ms", "-seed", "7",
		"-min-devices", fmt.Sprint(devices), "-algorithm", "nc",
		"-M", fmt.Sprint(devices), "-m", fmt.Sprint(devices), "-T", "6", "-b", "16", "-rho", "1", "-clip", "1", "-eta", "1",
	}, extra...)}
	coord.start()
	t.Cleanup(func() {
		if coord.cmd.ProcessState == nil {
			coord.kill()
		}
	})
	return coord
}

// waitCommitted waits until the coordinator at base has committed round
// r (failing after within, with why()).
func waitCommitted(t *testing.T, base, code string, r int, within time.Duration, why func() string) api.Progress {
	t.Helper()
	deadline := time.Now().Add(within)
	var pr api.Progress
	for time.Now().Before(deadline) {
		if err := getJSON(base+"/api/progress?code="+code, &pr); err == nil && pr.Committed >= r {
			return pr
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("round %d not committed (at %d after %v)\n%s", r, pr.Committed, within, why())
	return pr
}

// TestNativeRowsDevice: native devices (cmd/device) take part in a
// session of the built-in tabular task: two read their own rows from a
// CSV file (-rows; one file has bad lines, which are reported with their
// line numbers and left out), the third fetches the coordinator's demo
// rows. The session commits every round with all three and its model is
// evaluated on the task's test rows.
func TestNativeRowsDevice(t *testing.T) {
	const code = "ROWS3"
	const devices = 3
	coord := rowTaskCoordinator(t, "tabular", code, devices)
	base := "http://" + coord.addr
	bin := deviceBinary(t)

	b, _ := task.LookupBuiltin("tabular")
	train, _, err := b.LoadRows(filepath.Join(repoRoot(), b.DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	// Each file holds 200 rows of the real data (6 rounds of 16 need 96).
	files := make([]string, 2)
	for i := range files {
		part := task.Rows{Values: train.Values[i*200 : (i+1)*200], Labels: train.Labels[i*200 : (i+1)*200]}
		var buf bytes.Buffer
		if err := b.Def.WriteCSV(&buf, part); err != nil {
			t.Fatal(err)
		}
		text := buf.String()
		if i == 1 {
			// Line 3 has a carat out of range, line 5 an unknown cut,
			// line 7 a value too few.
			lines := strings.Split(text, "\n")
			lines[2] = "9,Ideal,E,VS1,61,57,under $1000"
			lines[4] = "1.1,Superb,E,VS1,61,57,under $1000"
			lines[6] = "1.1,Ideal,E,VS1,61,under $1000"
			text = strings.Join(lines, "\n")
		}
		files[i] = filepath.Join(t.TempDir(), "rows.csv")
		if err := os.WriteFile(files[i], []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	devs, logs := startRowDevices(t, bin, coord, code, devices, files)
	pr := waitCommitted(t, base, code, 6, 3*time.Minute, logs)
	if len(pr.Accuracy) == 0 {
		t.Errorf("no accuracy measured on the task's test rows")
	}
	for _, d := range devs {
		d.cmd.Wait() // the session is over: each device leaves
	}
	for i, d := range devs {
		out := d.out.String()
		if !strings.Contains(out, "local data") {
			t.Errorf("device %d never read its data:\n%s", i, out)
		}
		if !strings.Contains(out, "included") {
			t.Errorf("device %d was never included:\n%s", i, out)
		}
	}
	refused := devs[1].out.String()
	for _, line := range []string{"line=3", "line=5", "line=7"} {
		if !strings.Contains(refused, "row refused") || !strings.Contains(refused, line) {
			t.Errorf("device 1 did not report the bad %s:\n%s", line, refused)
		}
	}
	if strings.Contains(devs[0].out.String(), "row refused") {
		t.Errorf("device 0 refused rows of a good file:\n%s", devs[0].out.String())
	}
	t.Logf("accuracy after round %d: %.3f", pr.Committed, pr.Accuracy[len(pr.Accuracy)-1].Accuracy)
}

// rowDevice is a native device process of a row-task session.
type rowDevice struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

// startRowDevices starts n native devices against coord, the first
// len(files) with -rows files[i], the others on the demo rows; they are
// killed when the test ends. logs returns every device's output and the
// coordinator log's name.
func startRowDevices(t *testing.T, bin string, coord *process, code string, n int, files []string) (devs []rowDevice, logs func() string) {
	t.Helper()
	for i := 0; i < n; i++ {
		args := []string{"-url", "ws://" + coord.addr + "/ws", "-code", code, "-dir", t.TempDir()}
		if i < len(files) {
			args = append(args, "-rows", files[i])
		}
		out := &bytes.Buffer{}
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		devs = append(devs, rowDevice{cmd, out})
	}
	t.Cleanup(func() {
		for _, d := range devs {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	return devs, func() string {
		var s []string
		for i, d := range devs {
			s = append(s, fmt.Sprintf("device %d:\n%s", i, d.out.String()))
		}
		return strings.Join(s, "\n") + "\ncoordinator log " + coord.log.Name()
	}
}

// TestNativeTextDevices: the text task live with native devices: one
// reads its words from a -rows file (a word over the task's length is
// refused with its line number), one takes the demo rows; every round
// commits and the class model is tested on the task's test words.
func TestNativeTextDevices(t *testing.T) {
	const code = "WORDS2"
	coord := rowTaskCoordinator(t, "text", code, 2)
	b, _ := task.LookupBuiltin("text")
	train, _, err := b.LoadRows(b.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := b.Def.WriteCSV(&buf, task.Rows{Values: train.Values[:200], Labels: train.Labels[:200]}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	lines[2] = strings.Repeat("x", 41) + "," + b.Def.Label.Values[0]
	file := filepath.Join(t.TempDir(), "words.csv")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	devs, logs := startRowDevices(t, deviceBinary(t), coord, code, 2, []string{file})
	pr := waitCommitted(t, "http://"+coord.addr, code, 6, 3*time.Minute, logs)
	if len(pr.Accuracy) == 0 {
		t.Errorf("no accuracy measured on the task's test words")
	}
	for _, d := range devs {
		d.cmd.Wait()
	}
	for i, d := range devs {
		if out := d.out.String(); !strings.Contains(out, "included") {
			t.Errorf("device %d was never included:\n%s", i, out)
		}
	}
	if out := devs[0].out.String(); !strings.Contains(out, "row refused") || !strings.Contains(out, "line=3") {
		t.Errorf("the word over 40 letters on line 3 was not reported:\n%s", out)
	}
}
