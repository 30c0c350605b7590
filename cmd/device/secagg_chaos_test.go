//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"browserfl/coordinator/store"
	"browserfl/device"
	"browserfl/internal/loopback"
	"browserfl/shared/optim"
	"browserfl/shared/secagg"
	"browserfl/shared/wire"
)

// The chaos test of the native device under shared noise: the real
// coordinator (cmd/coordinator -algorithm shared) and six real device
// processes (cmd/device, each with its own state directory and rows),
// every device's websocket through a relay of the test's that reads the
// secure aggregation frames. A device process is SIGKILLed inside each
// step, placed by those frames (never by a timer): right before it would
// send its message of the step (the relay holds it back and kills the
// process), right after it (the relay passes it on, then kills), or, in
// the masking step, while it writes its pending release to its state
// file (inotify sees it start writing, device.WriteAtomic's temporary
// file appear, after the share delivery reached it; the relay holds its
// masked input back until then). Each killed device is started
// again from its directory once its connection is closed at the
// coordinator, as the kernel closes a killed process's socket.

// nativeKill is where a device process dies.
type nativeKill byte

const (
	killBefore  nativeKill = 1 + iota // instead of sending its message of the step
	killAfter                         // right after sending it
	killWriting                       // while it writes its state after the share delivery
)

// nativeFault kills device dev in round (any attempt) at step: a device
// step (wire.StepAdvertise, ...), or wire.StepDelivery for killWriting.
type nativeFault struct {
	dev, round int
	step       byte
	what       nativeKill
	hit        bool
	// killWriting: whether the pending release's state had landed
	// (renamed into place) when the process died, and whether a
	// temporary file was left.
	landed, leftTemp bool
}

// nativeChaos is the relays' shared view: the faults, and what the
// devices wrote.
type nativeChaos struct {
	t      *testing.T
	ctx    context.Context
	coord  string // the coordinator's websocket URL
	mu     sync.Mutex
	faults []*nativeFault
	// masked counts the masked inputs each device wrote (passed on or
	// held back by a kill); sent holds, by secagg header, the devices
	// whose masked input went on to the coordinator, and last the last
	// secagg round (T<<32 | attempt) of each round.
	masked  []int
	wrote   map[[2]int]bool       // {device, round}: it wrote a masked input of the round
	watches map[int]chan struct{} // by device: its state write is watched until closed
	sent    map[secagg.Header][]int
	last    map[int]secagg.Header
	closers []func()
}

// fault returns device dev's fault of round t at step, if it has not
// been hit yet, marking it hit.
func (x *nativeChaos) fault(dev, t int, step byte) *nativeFault {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range x.faults {
		if f.dev == dev && f.round == t && f.step == step && !f.hit {
			f.hit = true
			return f
		}
	}
	return nil
}

// devProc is one device across its processes: started again from its
// directory each time the test kills it, until a run ends by itself.
type devProc struct {
	i        int
	bin, dir string
	args     []string
	logs     []string // one log file per run
	mu       sync.Mutex
	cond     *sync.Cond
	cmd      *exec.Cmd
	exited   chan struct{}
	killed   bool // the running process was killed by the test
	stopped  bool // the test gives up: no restart
	holds    int  // relays and inspections that must end before a restart
	kills    int
	final    error // the exit of the run that ended by itself
}

func (p *devProc) hold() {
	p.mu.Lock()
	p.holds++
	p.mu.Unlock()
}

func (p *devProc) release() {
	p.mu.Lock()
	p.holds--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// kill SIGKILLs the running process and returns once it has exited.
func (p *devProc) kill() {
	p.mu.Lock()
	p.killed = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop kills the running process for good.
func (p *devProc) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.kill()
}

// run starts the device and starts it again after each kill, once
// nothing holds it (its relay has closed the connection at the
// coordinator), until a run ends by itself.
func (p *devProc) run() {
	for {
		p.mu.Lock()
		logf, err := os.Create(filepath.Join(filepath.Dir(p.dir), fmt.Sprintf("dev%d-run%d.log", p.i, len(p.logs))))
		if err != nil {
			p.final = err
			p.mu.Unlock()
			return
		}
		cmd := exec.Command(p.bin, p.args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			p.final = err
			p.mu.Unlock()
			return
		}
		p.logs = append(p.logs, logf.Name())
		p.cmd, p.exited, p.killed = cmd, make(chan struct{}), false
		exited := p.exited
		p.mu.Unlock()
		err = cmd.Wait()
		logf.Close()
		close(exited)
		p.mu.Lock()
		for p.holds > 0 {
			p.cond.Wait()
		}
		killed, stopped := p.killed, p.stopped
		if killed && !stopped {
			p.kills++
		}
		p.mu.Unlock()
		if !killed || stopped {
			if !killed {
				p.final = err
			}
			return
		}
	}
}

// logText is every run's log, for a failure.
func (p *devProc) logText() string {
	var b strings.Builder
	for i, name := range p.logs {
		s, _ := os.ReadFile(name)
		fmt.Fprintf(&b, "--- device %d, run %d:\n%s", p.i, i, s)
	}
	return b.String()
}

// relay serves device p's websocket: it dials the coordinator and passes
// every message both ways, applying the faults.
func (x *nativeChaos) relay(p *devProc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p.hold()
		defer p.release()
		down, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return
		}
		up, _, err := websocket.Dial(x.ctx, x.coord, &websocket.DialOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			down.Close(websocket.StatusTryAgainLater, "coordinator unreachable")
			return
		}
		down.SetReadLimit(-1)
		up.SetReadLimit(-1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			x.pump(p, up, down, x.toDevice)
		}()
		x.pump(p, down, up, x.toCoordinator)
		up.CloseNow() // as the kernel closes a killed process's socket
		<-done
	}
}

// pump passes messages from one side to the other; see, for each binary
// message, says whether to pass it (and runs after it passed, if set).
// When from ends, to is closed with its close status (at once if it
// gave none).
func (x *nativeChaos) pump(p *devProc, from, to *websocket.Conn, see func(*devProc, []byte) (bool, func())) {
	for {
		typ, b, err := from.Read(x.ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code != -1 {
				to.Close(code, "")
			} else {
				to.CloseNow()
			}
			return
		}
		pass, after := true, func() {}
		if typ == websocket.MessageBinary {
			pass, after = see(p, b)
		}
		if !pass {
			to.CloseNow()
			return
		}
		if err := to.Write(x.ctx, typ, b); err != nil {
			return
		}
		if after != nil {
			after()
		}
	}
}

// toCoordinator applies the faults of a device's message and counts its
// masked inputs.
func (x *nativeChaos) toCoordinator(p *devProc, b []byte) (bool, func()) {
	f, err := wire.DecodeSecAggToCoordinator(b, wire.Limits{})
	if err != nil {
		return true, nil
	}
	var head secagg.Header
	if f.Step == wire.StepMasked {
		head = f.Msg.(*secagg.MaskedInput).Head()
		x.mu.Lock()
		x.masked[p.i]++
		x.wrote[[2]int{p.i, f.T}] = true
		w := x.watches[p.i]
		x.mu.Unlock()
		if w != nil {
			// Its state write is watched: the masked input never goes
			// on. Wake the watch, which kills the device on the state
			// write queued before this message, or on the wake.
			if err := os.WriteFile(filepath.Join(p.dir, wakeFile), nil, 0o600); err != nil {
				x.t.Error(err)
			}
			<-w
			return false, nil
		}
	}
	fault := x.fault(p.i, f.T, f.Step)
	if fault != nil && fault.what == killBefore {
		p.kill()
		return false, nil
	}
	return true, func() {
		if f.Step == wire.StepMasked {
			x.mu.Lock()
			x.sent[head] = append(x.sent[head], p.i)
			if last, ok := x.last[f.T]; !ok || head.Round > last.Round {
				x.last[f.T] = head
			}
			x.mu.Unlock()
		}
		if fault != nil && fault.what == killAfter {
			p.kill()
		}
	}
}

// toDevice arms the watch of a killWriting fault when the round's share
// delivery is on its way to the device.
func (x *nativeChaos) toDevice(p *devProc, b []byte) (bool, func()) {
	f, err := wire.DecodeSecAggToDevice(b, wire.Limits{})
	if err != nil || f.Step != wire.StepDelivery {
		return true, nil
	}
	if fault := x.fault(p.i, f.T, wire.StepDelivery); fault != nil {
		if err := x.killOnStateWrite(p, fault); err != nil {
			x.t.Error(err)
		}
	}
	return true, nil
}

// wakeFile is the file the relay creates in a watched state directory
// when the device's masked input arrives (killOnStateWrite).
const wakeFile = ".chaos-wake"

// killOnStateWrite kills device p as soon as it starts writing its
// state (a temporary state file, device.WriteAtomic's
// ".state.json.tmp-*", appears in its directory, or state.json itself
// is written to), then notes whether the new state had landed and
// whether a temporary file was left, before the device starts again.
// Until then the relay holds back the device's masked input: a device
// that saves before it sends has its write's event queued before the
// relay's wakeFile, so the kill always comes before the masked input
// reaches the coordinator, however late the watch reads the event. A
// device that sends without writing first is killed on the wake, and
// the test fails.
func (x *nativeChaos) killOnStateWrite(p *devProc, fault *nativeFault) error {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	if _, err := syscall.InotifyAddWatch(fd, p.dir, syscall.IN_CREATE|syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("inotify %s: %w", p.dir, err)
	}
	events := os.NewFile(uintptr(fd), "inotify") // non-blocking: Close ends a Read
	done := make(chan struct{})
	x.mu.Lock()
	x.closers = append(x.closers, func() { events.Close() })
	x.watches[p.i] = done
	x.mu.Unlock()
	p.hold() // until the inspection below
	go func() {
		defer p.release()
		defer close(done)
		defer func() {
			x.mu.Lock()
			if x.watches[p.i] == done {
				delete(x.watches, p.i)
			}
			x.mu.Unlock()
		}()
		defer events.Close()
		buf := make([]byte, 4096)
		for {
			n, err := events.Read(buf)
			if err != nil {
				return
			}
			// struct inotify_event: wd, mask, cookie, len, then len
			// bytes of name padded with NULs.
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				raw := buf[off+syscall.SizeofInotifyEvent:]
				raw = raw[:binary.NativeEndian.Uint32(buf[off+12:])]
				off += syscall.SizeofInotifyEvent + len(raw)
				name := strings.TrimRight(string(raw), "\x00")
				if name == wakeFile {
					p.kill()
					x.t.Errorf("device %d sent its masked input of round %d without writing its state first", p.i, fault.round)
					return
				}
				if name != "state.json" && !strings.HasPrefix(name, ".state.json.tmp-") {
					continue
				}
				p.kill()
				st, _, err := readDeviceState(p.dir)
				left, _ := filepath.Glob(filepath.Join(p.dir, ".state.json.tmp-*"))
				x.mu.Lock()
				fault.landed, fault.leftTemp = err == nil && st.Pending == fault.round, len(left) > 0
				x.mu.Unlock()
				if err != nil {
					x.t.Errorf("device %d killed while writing its state: %v", p.i, err)
				}
				return
			}
		}
	}()
	return nil
}

// readDeviceState reads a device's state file and its device half (nil
// before it has a session).
func readDeviceState(dir string) (device.State, optim.Device, error) {
	var st device.State
	b, err := device.NewFileStorage(filepath.Join(dir, "state.json")).Load(context.Background())
	if err != nil || b == nil {
		return st, nil, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, nil, err
	}
	if st.Session == nil {
		return st, nil, nil
	}
	dv, err := device.DefaultNewDevice(*st.Session)
	if err != nil {
		return st, nil, err
	}
	if err := dv.UnmarshalBinary(st.Algo); err != nil {
		return st, nil, err
	}
	return st, dv, nil
}

// nativeTask is the session's task: which side of the diagonal a dot
// lies on.
const nativeTask = `{"format": "browserfl.task/v1", "name": "dots", "title": "Which side",
 "about": "Which side of the diagonal a dot lies on.",
 "features": [{"name": "x", "ask": "x?", "kind": "number", "min": 0, "max": 1},
              {"name": "y", "ask": "y?", "kind": "number", "min": 0, "max": 1}],
 "label": {"name": "side", "ask": "Which side?", "values": ["left", "right"]},
 "model": "logreg"}`

// writeDots writes n rows of the dots task to path, drawn with seed.
func writeDots(path string, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("x,y,side\n")
	for range n {
		x, y := rng.Float64(), rng.Float64()
		side := "right"
		if x < y {
			side = "left"
		}
		fmt.Fprintf(&b, "%.3f,%.3f,%s\n", x, y, side)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// TestSharedNoiseNativeChaos runs a shared-noise session of the real
// coordinator (cohorts of all 6 devices, threshold 4, 9 rounds) with six
// native device processes, one of them SIGKILLed in each secure
// aggregation step and started again from its state directory:
//
//   - round 2: before its advertisement; round 3: before its key
//     shares (neither spent anything);
//   - round 4: while it writes its pending release to its state file,
//     after the share delivery (it must write before it sends: its
//     masked input never reaches the coordinator); round 5: right
//     before its masked input, with the release saved and charged
//     (neither is in the sum);
//   - round 6: right after its masked input (in the sum: it learns
//     "included" when it is back); round 7: before its consistency
//     signature; round 8: before its unmask response (both in the sum).
//
// The session must reach its last round with every device, every
// restart must carry on from the saved state (no run ends by itself
// before the session does, none logs an error), and then: every round
// includes at least the threshold, exactly the devices whose masked
// input of the round's last attempt went to the coordinator, and none
// waits for its deadline; every device has applied exactly the rounds
// that include it, holds nothing pending and leaves no temporary file;
// its ledger counts every masked input it wrote, including one held
// back by its kill, plus the release it saved while being killed if
// that save landed before it wrote its masked input, and nothing more.
// The sums are not compared: a native device's release is not seen
// outside its process (TestSharedNoiseChaos, in coordinator, compares
// them bit for bit with in-process devices).
func TestSharedNoiseNativeChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordinator and six device processes")
	}
	const devices, rounds, threshold = 6, 9, 4
	faults := []*nativeFault{
		{dev: 0, round: 2, step: wire.StepAdvertise, what: killBefore},
		{dev: 1, round: 3, step: wire.StepShareKeys, what: killBefore},
		{dev: 2, round: 4, step: wire.StepDelivery, what: killWriting},
		{dev: 3, round: 5, step: wire.StepMasked, what: killBefore},
		{dev: 4, round: 6, step: wire.StepMasked, what: killAfter},
		{dev: 5, round: 7, step: wire.StepSignature, what: killBefore},
		{dev: 0, round: 8, step: wire.StepUnmasked, what: killBefore},
	}
	// The count each round includes (all 6 where none is named): a
	// device killed before its masked input is not in the sum, one
	// killed after it is.
	wantN := map[int]int{2: 5, 3: 5, 4: 5, 5: 5}
	devBin, coordBin := builtCmd(t, "device"), builtCmd(t, "coordinator")
	dir := t.TempDir()
	taskPath := filepath.Join(dir, "task.json")
	if err := os.WriteFile(taskPath, []byte(nativeTask), 0o600); err != nil {
		t.Fatal(err)
	}
	const code = "NATIVECHAOS"
	coord := startNativeCoordinator(t, coordBin, dir, "-task-file", taskPath, "-join-code", code,
		"-algorithm", "shared", "-threshold", strconv.Itoa(threshold), "-M", strconv.Itoa(devices), "-m", strconv.Itoa(devices),
		"-min-devices", strconv.Itoa(devices), "-T", strconv.Itoa(rounds), "-b", "4", "-deadline", "30s", "-round-gap", "0",
		"-eval-every", "0", "-seed", "1", "-teacher-choice=false")
	defer coord.kill()
	var procs []*devProc
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(coord.log)
			t.Logf("coordinator log:\n%s", b)
			for _, p := range procs {
				t.Log(p.logText())
			}
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	x := &nativeChaos{t: t, ctx: ctx, coord: "ws://" + coord.addr + "/ws", faults: faults,
		masked: make([]int, devices), wrote: map[[2]int]bool{}, watches: map[int]chan struct{}{}, sent: map[secagg.Header][]int{}, last: map[int]secagg.Header{}}
	procs = make([]*devProc, devices)
	var wg sync.WaitGroup
	for i := range procs {
		p := &devProc{i: i, bin: devBin, dir: filepath.Join(dir, fmt.Sprintf("dev%d", i), "state")}
		p.cond = sync.NewCond(&p.mu)
		if err := os.MkdirAll(filepath.Dir(p.dir), 0o700); err != nil {
			t.Fatal(err)
		}
		rows := filepath.Join(dir, fmt.Sprintf("rows%d.csv", i))
		// 60 rows: the 9 batches of 4 and the ones a kill wastes.
		if err := writeDots(rows, 60, uint64(i)); err != nil {
			t.Fatal(err)
		}
		mux := http.NewServeMux()
		mux.Handle("/ws", x.relay(p))
		mux.Handle("/", httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: coord.addr}))
		relay := httptest.NewServer(mux)
		defer relay.Close()
		p.args = []string{"-url", "ws" + strings.TrimPrefix(relay.URL, "http") + "/ws", "-code", code,
			"-dir", p.dir, "-rows", rows, "-unlimited"}
		procs[i] = p
		wg.Add(1)
		go func() { defer wg.Done(); p.run() }()
	}
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
		t.Error("the session did not end")
		for _, p := range procs {
			p.stop()
		}
	}
	x.mu.Lock()
	for _, c := range x.closers {
		c()
	}
	x.mu.Unlock()
	<-ended
	coord.kill()
	checkNativeChaos(t, x, procs, filepath.Join(dir, "coordinator"), rounds, threshold, wantN)
}

// nativeCoord is the coordinator process.
type nativeCoord struct {
	cmd       *exec.Cmd
	exited    chan struct{}
	addr, log string
}

// kill SIGKILLs it (its store is whole at every commit) and waits.
func (c *nativeCoord) kill() {
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.exited
}

// startNativeCoordinator starts cmd/coordinator on a free port with its
// data in dir/coordinator and waits until it answers /healthz.
func startNativeCoordinator(t *testing.T, bin, dir string, args ...string) *nativeCoord {
	t.Helper()
	addr := loopback.Addr(t)
	logf, err := os.Create(filepath.Join(dir, "coordinator.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, append([]string{"-listen", addr, "-data", filepath.Join(dir, "coordinator")}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &nativeCoord{cmd: cmd, exited: make(chan struct{}), addr: addr, log: logf.Name()}
	go func() { cmd.Wait(); close(c.exited) }()
	for range 600 {
		if r, err := http.Get("http://" + addr + "/healthz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return c
			}
		}
		select {
		case <-c.exited:
			b, _ := os.ReadFile(c.log)
			t.Fatalf("the coordinator exited at start:\n%s", b)
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.kill()
	t.Fatalf("the coordinator did not answer /healthz (log %s)", c.log)
	return nil
}

// checkNativeChaos checks what TestSharedNoiseNativeChaos promises
// against the device processes' logs and state files and the
// coordinator's store.
func checkNativeChaos(t *testing.T, x *nativeChaos, procs []*devProc, coordData string, rounds, threshold int, wantN map[int]int) {
	t.Helper()
	x.mu.Lock()
	defer x.mu.Unlock()
	extra := make([]int, len(procs)) // releases saved by a device killed while saving them
	for _, f := range x.faults {
		if !f.hit {
			t.Errorf("device %d's kill in round %d, step %d never happened", f.dev, f.round, f.step)
		}
		if f.what == killWriting {
			// The kill lands while the device writes, or, on a busy
			// machine, may land later, even after the device wrote its
			// masked input (held back by the relay; counted with the
			// others).
			late := x.wrote[[2]int{f.dev, f.round}]
			t.Logf("device %d killed while writing its state in round %d: the new state had landed: %v, a temporary file left: %v, its masked input written before the kill: %v",
				f.dev, f.round, f.landed, f.leftTemp, late)
			if f.landed && !late {
				extra[f.dev]++
			}
		}
	}
	index := map[string]int{}
	states := make([]device.State, len(procs))
	releases := make([]int, len(procs))
	for i, p := range procs {
		out := p.logText()
		var last []byte
		if len(p.logs) > 0 {
			last, _ = os.ReadFile(p.logs[len(p.logs)-1])
		}
		switch {
		case p.final != nil || len(p.logs) == 0:
			t.Errorf("device %d's last run (of %d, %d killed): %v", i, len(p.logs), p.kills, p.final)
		case !strings.Contains(string(last), "left the session: it has finished"):
			t.Errorf("device %d's last run did not see the session finish", i)
		case strings.Contains(out, "level=ERROR"):
			t.Errorf("device %d logged an error", i)
		}
		st, dv, err := readDeviceState(p.dir)
		if err != nil || dv == nil {
			t.Fatalf("device %d's state: %v", i, err)
		}
		if left, _ := filepath.Glob(filepath.Join(p.dir, ".*.tmp-*")); len(left) != 0 {
			t.Errorf("device %d: temporary files left: %q", i, left)
		}
		index[st.DeviceID], states[i] = i, st
		led := dv.(optim.Accountant).Ledger()
		releases[i] = led.Releases()
	}
	if t.Failed() {
		t.FailNow()
	}
	paths, _ := filepath.Glob(filepath.Join(coordData, "sessions", "*", "session.db"))
	if len(paths) != 1 {
		t.Fatalf("session stores %q, want one", paths)
	}
	st, err := store.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Rounds(0, rounds+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != rounds {
		t.Fatalf("%d rounds committed, want %d", len(recs), rounds)
	}
	included := make([]int, len(procs))
	for r, rec := range recs {
		var in []int
		for _, id := range rec.Included {
			i, ok := index[id]
			if !ok {
				t.Fatalf("round %d includes an unknown device %s", rec.T, id)
			}
			in = append(in, i)
			included[i]++
		}
		slices.Sort(in)
		sent := slices.Sorted(slices.Values(x.sent[x.last[rec.T]]))
		n, want := len(in), wantN[rec.T]
		if want == 0 {
			want = len(procs)
		}
		switch {
		case rec.T != r+1:
			t.Errorf("record %d is of round %d", r+1, rec.T)
		case n < threshold || n != want:
			t.Errorf("round %d includes %d devices %v, want %d (threshold %d)", rec.T, n, in, want, threshold)
		case !slices.Equal(in, sent):
			t.Errorf("round %d includes devices %v; the masked inputs of its last attempt came from %v", rec.T, in, sent)
		case rec.DeadlineHit:
			t.Errorf("round %d waited for its deadline: every device that could still answer had answered", rec.T)
		}
	}
	for i, s := range states {
		if s.Pending != 0 || !s.Ended || s.Included != included[i] {
			t.Errorf("device %d: pending %d, ended %v, %d rounds applied as included; want none pending, ended, and the %d that include it",
				i, s.Pending, s.Ended, s.Included, included[i])
		}
		if releases[i] != x.masked[i]+extra[i] {
			t.Errorf("device %d: %d releases charged; it wrote %d masked inputs and saved %d more release while killed", i, releases[i], x.masked[i], extra[i])
		}
	}
	kills := 0
	for _, p := range procs {
		kills += p.kills
	}
	t.Logf("%d device processes killed, %d started in all", kills, kills+len(procs))
}
