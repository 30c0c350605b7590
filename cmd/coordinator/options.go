package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"browserfl/coordinator/bus"
	"browserfl/internal/sessionflag"
	"browserfl/shared/dataset"
	"browserfl/shared/optim/algo"
	"browserfl/shared/plan"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// options are the command's settings; the JSON names are those of the
// config file.
type options struct {
	Listen      string   `json:"listen"`
	TLSCert     string   `json:"tls_cert"`
	TLSKey      string   `json:"tls_key"`
	DataDir     string   `json:"data_dir"`
	Task        string   `json:"task"`
	TaskFile    string   `json:"task_file"`
	TestRows    string   `json:"test_rows"`
	DatasetDir  string   `json:"dataset_dir"`
	Index       string   `json:"index"`
	JoinCode    string   `json:"join_code"`
	Origins     []string `json:"origins"`
	MinDevices  int      `json:"min_devices"`
	EvalEvery   int      `json:"eval_every"`
	EvalSamples int      `json:"eval_samples"`
	Seed        uint64   `json:"seed"`
	DemoShards  int      `json:"demo_shards"`
	DemoAlpha   float64  `json:"demo_alpha"`
	RoundGap    string   `json:"round_gap"`
	Deadline    string   `json:"deadline"`
	MaxDevices  int      `json:"max_devices"`
	MsgRate     float64  `json:"msg_rate"`
	// The gate (docs/coordinator.md, "The gate").
	JoinCodeLength     int     `json:"join_code_length"`
	RegisterRate       float64 `json:"register_rate"`
	RegisterGlobalRate float64 `json:"register_global_rate"`
	MaxInactive        int     `json:"max_inactive"`
	PreHelloPerAddress int     `json:"prehello_per_address"`
	TrustProxy         proxies `json:"trust_proxy"`
	MetricsToken       string  `json:"metrics_token"`
	ReadHeaderTimeout  string  `json:"read_header_timeout"`
	IdleTimeout        string  `json:"idle_timeout"`
	HTTPPerAddress     int     `json:"http_per_address"`
	Lobby              bool    `json:"lobby"`
	TeacherChoice      bool    `json:"teacher_choice"`
	Reset              bool    `json:"-"`
	RollbackTo         int     `json:"-"`
	cpuProfile         string
	memProfile         string
	LogLevel           string `json:"log_level"`
	// The cluster shape (docs/cluster.md).
	Role       string `json:"role"`
	NATS       string `json:"nats"`
	NATSListen string `json:"nats_listen"`
	NATSPrefix string `json:"nats_prefix"`
	NATSToken  string `json:"nats_token"` // removed: refused with a pointer to NATSNKey
	NATSNKey   string `json:"nats_nkey"`
	NATSCA     string `json:"nats_ca"`
	NATSCert   string `json:"nats_cert"`
	NATSKey    string `json:"nats_key"`
	EdgeID     string `json:"edge_id"`
	SessionURL string `json:"session_url"`

	// Edges are the edges the session process makes credentials for
	// (and the only ones it listens to).
	Edges []string `json:"edges"`
	// Session holds the algorithm parameters (the same names as
	// optim.Params / wire.SessionParams).
	Session wire.SessionParams `json:"session"`
}

func defaults() options {
	return options{
		Listen: "localhost:8080", DataDir: "data/coordinator", Task: "fashion",
		MinDevices: 0, EvalEvery: 5, EvalSamples: 2000, DemoShards: 0, DemoAlpha: 0.5,
		Deadline: "20s", RoundGap: "1s", LogLevel: "info", Role: "single", NATSPrefix: "browserfl",
		JoinCodeLength: 10, ReadHeaderTimeout: "10s", IdleTimeout: "60s", TeacherChoice: true,
		// The demo's (the default lesson's) privacy target is sized from
		// the page's default budget by plan.DefaultLessonTarget: epsilon
		// 7.92 at delta 1e-5, 99% of the budget of 8, so every device's
		// worst case is ε = 7.92 at δ = 1e-5 (zCDP ρ = 1.365, as
		// plan.SessionFigures prints it; go run ./cmd/flplan -alg nc
		// -T 200 -M 30 -m 10 -b 32 -epsilon 7.92 -delta 1e-5;
		// TestDemoFiguresAgree) and a classroom joins without touching
		// the budget.
		Session: demoSession(),
	}
}

// demoSession is the default session template.
func demoSession() wire.SessionParams {
	eps, delta := plan.DefaultLessonTarget()
	return wire.SessionParams{Name: "demo", Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10,
		Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, Epsilon: eps, Delta: delta}
}

// lineFlags are the flags that are not options' fields (no config file
// key): read after parsing into options.
type lineFlags struct {
	config, origins, edges, cpuProfile, memProfile *string
}

// parse reads the options from args, the environment (BFL_<FLAG>) and
// the -config file, in that precedence over the defaults, and checks
// them.
func parse(args []string, stderr io.Writer) (options, error) {
	o := defaults()
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	x := lineFlags{config: fs.String("config", "", "JSON config file (see docs/coordinator.md)")}
	serverFlags(fs, &o, &x)
	clusterFlags(fs, &o, &x)
	sessionFlags(fs, &o.Session)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	// Precedence: command line > environment > config file > default.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	inFile := map[string]bool{}
	if v, ok := os.LookupEnv(envName("config")); ok && !set["config"] {
		*x.config = v
	}
	if *x.config != "" {
		if err := readConfig(fs, &o, *x.config, inFile); err != nil {
			return o, err
		}
	}
	if err := applyEnv(fs, set); err != nil {
		return o, err
	}
	o.fromLine(x)
	if err := o.check(); err != nil {
		return o, err
	}
	for k := range inFile {
		set[k] = true
	}
	set["rho"] = set["rho"] || set["rho_p"] // the config file's name
	if o.TaskFile != "" {
		def, err := task.ReadFile(o.TaskFile)
		if err != nil {
			return o, fmt.Errorf("-task-file: %w", err)
		}
		if err := sessionflag.TaskTargetClash(def.Name, def.Privacy.Epsilon, func(name string) bool { return set[name] }); err != nil {
			return o, err
		}
	}
	o.taskTuning(set)
	return o, nil
}

// taskTuning gives a session of a built-in row task the step size and
// clipping bound chosen for it on its validation split (task.Builtin's
// Eta and Clip) where neither the command line, the environment nor
// the config file (given) set them: the demo's are the picture task's
// and learn little on rows.
func (o *options) taskTuning(given map[string]bool) {
	b, err := task.LookupBuiltin(o.Task)
	if o.TaskFile != "" || err != nil {
		return
	}
	if !given["eta"] && b.Eta > 0 {
		o.Session.Eta = b.Eta
	}
	if !given["clip"] && b.Clip > 0 {
		o.Session.Clip = b.Clip
	}
}

// serverFlags defines the HTTP server's, the gate's and the store's
// flags.
func serverFlags(fs *flag.FlagSet, o *options, x *lineFlags) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "listen address")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (with -tls-key: serve https and wss)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS key file")
	fs.StringVar(&o.DataDir, "data", o.DataDir, "data directory for the embedded store")
	fs.StringVar(&o.Task, "task", o.Task, "what the class learns: "+strings.Join(task.Names(), ", ")+" (fashion: Fashion-MNIST clothing; digits: MNIST digits from data/mnist; tabular: a diamond's price band from ggplot2's diamonds; text: a word's language from Debian's word lists; all made by make setup)")
	fs.StringVar(&o.TaskFile, "task-file", "", "a task definition (browserfl.task/v1 JSON, docs/tasks.md) instead of -task: students type or pick every row; no demo data, and no server-side evaluation unless -test-rows is given")
	fs.StringVar(&o.TestRows, "test-rows", "", "with -task-file: a CSV file of the task's test rows (the students' CSV format, docs/tasks.md); the coordinator tests the class model on them and the dashboard shows its accuracy")
	fs.StringVar(&o.DatasetDir, "dataset", "", "the task's data directory (demo shards and server-side evaluation; default: the task's, "+dataset.DefaultFashionMNISTDir+", "+dataset.DefaultMNISTDir+", "+task.DefaultDiamondsDir+" or "+task.DefaultWordsDir+"); \"mnist\" or \"fashion-mnist\": that task in its own directory; \"none\": no data (load tests)")
	fs.StringVar(&o.Index, "index", "", "index.html to serve at / instead of the embedded one (development)")
	fs.StringVar(&o.JoinCode, "join-code", "", "session join code (default: random, kept in the store)")
	x.origins = fs.String("origins", "", "comma-separated extra Origin host patterns allowed to open the websocket (same host is always allowed)")
	fs.IntVar(&o.MinDevices, "min-devices", o.MinDevices, "devices a round waits for (0 = min(2, m))")
	fs.IntVar(&o.EvalEvery, "eval-every", o.EvalEvery, "evaluate the global model on the test set after rounds 1, 2, 3 and 5, then every K rounds (0 = never)")
	fs.IntVar(&o.EvalSamples, "eval-samples", o.EvalSamples, "evaluate on the first n test samples (0 = all; the count is shown beside every accuracy)")
	fs.Uint64Var(&o.Seed, "seed", 0, "cohort sampling seed (0 = random at first start, kept in the store and logged)")
	fs.IntVar(&o.DemoShards, "demo-shards", 0, "distinct demo shards handed out before earlier ones are reused (0 = 4 M; -1 = no demo shards)")
	fs.Float64Var(&o.DemoAlpha, "demo-alpha", o.DemoAlpha, "Dirichlet alpha of the demo shards' label skew (small = more non-IID)")
	fs.StringVar(&o.Deadline, "deadline", o.Deadline, "round deadline")
	fs.StringVar(&o.RoundGap, "round-gap", o.RoundGap, "pause between rounds")
	fs.IntVar(&o.MaxDevices, "max-devices", 0, "connected device limit (0 = 20000)")
	fs.Float64Var(&o.MsgRate, "msg-rate", 0, "messages per second per connection (0 = 20)")
	fs.IntVar(&o.JoinCodeLength, "join-code-length", o.JoinCodeLength, "length of a random join code (at least 8; 5 bits per character)")
	fs.Float64Var(&o.RegisterRate, "register-rate", 0, "new device ids per second per client address, burst 60 (0 = 1; negative = unlimited)")
	fs.Float64Var(&o.RegisterGlobalRate, "register-global-rate", 0, "new device ids per second over all addresses, burst 500 (0 = 20; negative = unlimited)")
	fs.IntVar(&o.MaxInactive, "max-inactive", 0, "registered devices without a connection kept in memory; the longest inactive are forgotten beyond it (0 = 4096)")
	fs.IntVar(&o.PreHelloPerAddress, "prehello-per-address", 0, "websockets from one client address that have not sent hello yet (0 = 128)")
	fs.Var(&o.TrustProxy, "trust-proxy", "networks of trusted reverse proxies, comma-separated CIDRs (e.g. 10.0.0.0/8,127.0.0.1/32): a request from one of them is keyed on the right-most X-Forwarded-For address not in the list; every other request on its own address (default: no proxy trusted)")
	fs.StringVar(&o.MetricsToken, "metrics-token", "", "require this token on /metrics (Authorization: Bearer, or ?token=); listening beyond loopback without it, one is made up at start and printed")
	fs.StringVar(&o.ReadHeaderTimeout, "read-header-timeout", o.ReadHeaderTimeout, "HTTP: time to read a request's headers")
	fs.StringVar(&o.IdleTimeout, "idle-timeout", o.IdleTimeout, "HTTP: idle keep-alive connections are closed after this")
	fs.IntVar(&o.HTTPPerAddress, "http-per-address", 0, "HTTP: plain connections (not websockets) open from one client address (0 = 1024; negative = no bound; a trusted proxy's are not bounded); in all at most a quarter of the open-file limit, the one idle the longest closed to make room")
	fs.BoolVar(&o.Lobby, "lobby", false, "start the session in a lobby: the teacher presses Start on the dashboard (teacher link), which sizes it for the class (\"one lesson\" preset)")
	fs.BoolVar(&o.TeacherChoice, "teacher-choice", o.TeacherChoice, "let a teacher switch the next lobby on the dashboard between each device adding all its noise (nc) and devices sharing it under secure aggregation (shared), where this server can run both; false: the way of learning is this server's only (-algorithm), the dashboard shows no choice and POST /api/teacher/new?algorithm= of another way is refused")
	fs.BoolVar(&o.Reset, "reset", false, "start a new session (the current one is kept, listed as finished)")
	fs.IntVar(&o.RollbackTo, "rollback-to", -1, "make round N the last committed round first (recovery from a state that cannot be served; the store keeps the last 16 rounds)")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: debug, info, warn, error")
	x.cpuProfile = fs.String("cpuprofile", "", "write a CPU profile to this file until shutdown (measurements)")
	x.memProfile = fs.String("memprofile", "", "write a heap profile (with every allocation since start: go tool pprof -sample_index=alloc_space) to this file at shutdown (measurements)")
}

// clusterFlags defines the cluster shape's flags (docs/cluster.md).
func clusterFlags(fs *flag.FlagSet, o *options, x *lineFlags) {
	fs.StringVar(&o.Role, "role", o.Role, "single: one process holds the devices and the session; session: the session process of the cluster shape (rounds, store, dashboard; devices reach it through edges); edge: holds device websockets for a session process (docs/cluster.md)")
	fs.StringVar(&o.NATS, "nats", "", "NATS server URL(s), comma separated (session, edge); for -role session, empty = start an embedded NATS server on -nats-listen")
	fs.StringVar(&o.NATSListen, "nats-listen", "127.0.0.1:4222", "-role session without -nats: the embedded NATS server's client address")
	fs.StringVar(&o.NATSPrefix, "nats-prefix", o.NATSPrefix, "first token of the cluster's NATS subjects (one per session process)")
	fs.StringVar(&o.NATSToken, "nats-token", "", "removed: every component has its own NATS key now (-nats-nkey, -edges; docs/cluster.md)")
	fs.StringVar(&o.NATSNKey, "nats-nkey", "", "this component's NATS nkey seed file (edge: the file the session process wrote for it, DATA/nats/edge-ID.nk; session: with -nats, its own)")
	x.edges = fs.String("edges", "", "-role session: the edges' ids, comma separated: the session process generates each one's NATS key (DATA/nats/edge-ID.nk, 0600) and listens to these edges only")
	fs.StringVar(&o.NATSCA, "nats-ca", "", "PEM CA for TLS between the cluster's components (with -nats-cert, -nats-key)")
	fs.StringVar(&o.NATSCert, "nats-cert", "", "this component's PEM certificate for NATS TLS")
	fs.StringVar(&o.NATSKey, "nats-key", "", "this component's PEM key for NATS TLS")
	fs.StringVar(&o.EdgeID, "edge-id", "", "-role edge: this edge's name, unique in the cluster (default: the host name and listen port)")
	fs.StringVar(&o.SessionURL, "session-url", "", "-role edge: the session process's HTTP URL; the page's /api/ calls and the dashboard are proxied to it (run the session with -trust-proxy naming the edges' addresses)")
}

// sessionFlags defines the session's flags (internal/sessionflag), with
// the demo session's values as defaults.
func sessionFlags(fs *flag.FlagSet, p *wire.SessionParams) {
	sessionflag.Register(fs, p, "name", "algorithm", "model", "M", "m", "T", "b", "rho", "delta", "clip", "eta", "D",
		"compressor", "threshold", "colluders", "local-size", "local-steps", "local-epochs")
	sessionflag.RegisterFlags(fs, p,
		sessionflag.Flag{Name: "epsilon", Note: "the default is plan.DefaultLessonTarget, 99% of the page's default budget"},
		sessionflag.Flag{Name: "signal-bound", Note: "only for demo shards dealt iid (-demo-alpha >= 100), where honest devices stay far below it"},
		// -features is the coordinator's name for the transform: the
		// model's input dimension follows from the task and the transform.
		sessionflag.Flag{Name: "transform", As: "features", Note: "the coordinator computes them from its test pictures too"})
}

// readConfig reads the JSON config file path into *o under the command
// line's flags, and records in inFile the session keys the file states.
func readConfig(fs *flag.FlagSet, o *options, path string, inFile map[string]bool) error {
	fileOpts := defaults()
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fileOpts); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	// The session's keys the file states (inFile) count as given for
	// taskTuning.
	var keys struct {
		Session map[string]json.RawMessage `json:"session"`
	}
	if err := json.Unmarshal(b, &keys); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	for k := range keys.Session {
		inFile[k] = true
	}
	// The flag variables point into o: copy the file's values in,
	// then re-apply the command line on top.
	cmdline := map[string]string{}
	fs.Visit(func(f *flag.Flag) { cmdline[f.Name] = f.Value.String() })
	*o = fileOpts
	for name, v := range cmdline {
		fs.Set(name, v)
	}
	return nil
}

// envName is the environment variable of the flag name: BFL_ and the
// name in capitals, dashes as underscores (BFL_JOIN_CODE), except -m,
// whose capitals are -M's: it is BFL_COHORT, its name in a config file.
func envName(name string) string {
	if name == "m" {
		return "BFL_COHORT"
	}
	return "BFL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag not on the command line (set) from its
// environment variable (envName), if there is one, and adds it to set.
// -config's (BFL_CONFIG) is read before the file, by parse.
func applyEnv(fs *flag.FlagSet, set map[string]bool) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv(envName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil && envErr == nil {
				envErr = fmt.Errorf("environment %s: %w", envName(f.Name), err)
			}
			set[f.Name] = true
		}
	})
	return envErr
}

// commaList returns the non-empty, trimmed items of a comma-separated
// list.
func commaList(s string) []string {
	var out []string
	for _, s := range strings.Split(s, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// fromLine completes o from the command line's own flags, and drops the
// demo's privacy target where another one was given or none is wanted.
func (o *options) fromLine(x lineFlags) {
	def := defaults().Session
	if o.Session.Epsilon == def.Epsilon && o.Session.Delta == def.Delta {
		// A rho_p target (flag, environment or config file) replaces
		// the default (epsilon, delta) one; a non-private reference
		// (mu2, sgd) takes no target at all.
		if o.Session.Rho != 0 || !algo.Private(o.Session) {
			o.Session.Epsilon, o.Session.Delta = 0, 0
		}
	}
	if *x.edges != "" {
		o.Edges = commaList(*x.edges)
	}
	if *x.origins != "" {
		o.Origins = append(o.Origins, commaList(*x.origins)...)
	}
	o.cpuProfile = *x.cpuProfile
	o.memProfile = *x.memProfile
}

// check checks o and reads -dataset's task names.
func (o *options) check() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("-tls-cert and -tls-key go together")
	}
	switch o.Role {
	case "single", "session", "edge":
	default:
		return fmt.Errorf("-role %q: single, session or edge", o.Role)
	}
	if err := o.checkCluster(); err != nil {
		return err
	}
	if o.EvalSamples < 0 {
		return fmt.Errorf("-eval-samples %d: want 0 (the whole test set) or more", o.EvalSamples)
	}
	if !(o.MsgRate >= 0 && o.MsgRate <= math.MaxFloat64) {
		return fmt.Errorf("-msg-rate %v: want a finite number of messages a second (0: 20)", o.MsgRate)
	}
	if o.DemoShards < -1 {
		return fmt.Errorf("-demo-shards %d: want -1 (no demo shards), 0 (4 M) or more", o.DemoShards)
	}
	if o.JoinCodeLength < 8 {
		return fmt.Errorf("-join-code-length %d: want at least 8 (40 bits)", o.JoinCodeLength)
	}
	if o.TaskFile != "" {
		if o.Task != defaults().Task || o.DatasetDir != "" {
			return errors.New("-task-file defines the task and brings no data: drop -task and -dataset")
		}
		return nil
	}
	if o.TestRows != "" {
		return errors.New("-test-rows goes with -task-file (a built-in task brings its own test rows)")
	}
	named, err := task.Lookup(o.Task)
	if err != nil {
		return fmt.Errorf("-task: %w", err)
	}
	// -dataset mnist (or fashion-mnist, flsim's names) picks a task and
	// its own directory; a directory needs a slash (./mnist).
	if pic, err := dataset.LookupTask(o.DatasetDir); err == nil && !strings.Contains(o.DatasetDir, "/") {
		if o.Task != defaults().Task && pic.Name != named.Name() {
			return fmt.Errorf("-dataset %s is the %s task, but -task is %s", o.DatasetDir, pic.Name, named.Name())
		}
		o.Task, o.DatasetDir = pic.Name, ""
	}
	return nil
}

// checkCluster checks the cluster shape's flags: each role's credentials.
func (o *options) checkCluster() error {
	if o.NATSToken != "" {
		return errors.New("-nats-token was removed: a shared token let any edge speak as any other; every component now has " +
			"its own NATS key: the session process generates one per edge named in -edges, and each edge takes its file " +
			"with -nats-nkey (docs/cluster.md, \"Credentials\")")
	}
	if o.Role == "edge" && o.NATS == "" {
		return errors.New("-role edge needs -nats (the session process's NATS)")
	}
	if o.Role == "edge" && o.NATSNKey == "" {
		return errors.New("-role edge needs -nats-nkey FILE: the edge's NATS key, written by the session process as DATA/nats/edge-ID.nk for each edge in its -edges")
	}
	if o.Role == "session" && o.NATS == "" && !bus.EmbeddedNATS {
		return fmt.Errorf("-role session without -nats needs the embedded NATS server, and %w (make run builds it so): %s",
			bus.ErrNoNATSServer, bus.BuildWithNATSServer)
	}
	if o.Role == "session" && o.NATS == "" && len(o.Edges) == 0 {
		return errors.New("-role session needs -edges ID,...: the edges it generates NATS keys for (DATA/nats/edge-ID.nk; docs/cluster.md)")
	}
	if o.Role == "session" && o.NATS != "" && o.NATSNKey == "" {
		return errors.New("-role session with -nats needs -nats-nkey FILE: its own NATS key, known to the NATS cluster")
	}
	return nil
}
