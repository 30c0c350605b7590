// Command coordinator serves one federated-learning session: the device
// websocket, the page and its WebAssembly build, a projector dashboard, a
// JSON API, Prometheus metrics and health checks, with its state in an
// embedded bbolt store that survives crashes.
//
// Every flag can also come from the environment as BFL_<FLAG> (dashes as
// underscores, e.g. BFL_LISTEN=:8080) or from a JSON config file (-config);
// precedence: command line, environment, config file, default. Run
// `coordinator -h` for the flags.
package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"browserfl"
	"browserfl/coordinator"
	devrt "browserfl/device"
	"browserfl/shared/dataset"
	"browserfl/shared/model"
	"browserfl/shared/optim"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
	"browserfl/web"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "coordinator:", err)
		os.Exit(1)
	}
}

// options are the command's settings; the JSON names are those of the
// config file.
type options struct {
	Listen      string   `json:"listen"`
	TLSCert     string   `json:"tls_cert"`
	TLSKey      string   `json:"tls_key"`
	DataDir     string   `json:"data_dir"`
	Task        string   `json:"task"`
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
	Lobby              bool    `json:"lobby"`
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
		JoinCodeLength: 10, ReadHeaderTimeout: "10s", IdleTimeout: "60s",
		// The demo's privacy target, rho_p = 1.5, keeps every device's
		// worst case at epsilon = 7.06 (at the owner's delta 1e-5, as
		// plan.SessionFigures prints it; go run ./cmd/flplan -alg nc
		// -T 200 -M 30 -m 10 -b 32 -rho 1.5; TestDemoFiguresAgree), inside
		// the page's default budget of 8, so a classroom joins without
		// touching it;
		// the simulator reaches 57% test accuracy with these parameters
		// (flsim -M 30 -m 10 -T 200 -b 32 -rho 1.5 -eta 0.02
		// -partition dirichlet:0.5).
		Session: wire.SessionParams{Name: "demo", Algorithm: "nc", Model: "logreg", M: 30, Cohort: 10,
			Rounds: 200, Batch: 32, Clip: 1, Eta: 0.02, RhoPaper: 1.5},
	}
}

func parse(args []string, stderr io.Writer) (options, error) {
	o := defaults()
	fs := flag.NewFlagSet("coordinator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "JSON config file (see docs/coordinator.md)")
	fs.StringVar(&o.Listen, "listen", o.Listen, "listen address")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (with -tls-key: serve https and wss)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "TLS key file")
	fs.StringVar(&o.DataDir, "data", o.DataDir, "data directory for the embedded store")
	fs.StringVar(&o.Task, "task", o.Task, "what the class learns: "+strings.Join(dataset.TaskNames(), " or ")+" (fashion: Fashion-MNIST clothing; digits: MNIST digits from data/mnist, made by make setup)")
	fs.StringVar(&o.DatasetDir, "dataset", "", "the task's IDX directory (demo shards and server-side evaluation; default: the task's, "+dataset.DefaultFashionMNISTDir+" or "+dataset.DefaultMNISTDir+"); \"mnist\" or \"fashion-mnist\": that task in its own directory; \"none\": no data (load tests)")
	fs.StringVar(&o.Index, "index", "", "index.html to serve at / instead of the embedded one (development)")
	fs.StringVar(&o.JoinCode, "join-code", "", "session join code (default: random, kept in the store)")
	origins := fs.String("origins", "", "comma-separated extra Origin host patterns allowed to open the websocket (same host is always allowed)")
	fs.IntVar(&o.MinDevices, "min-devices", o.MinDevices, "devices a round waits for (0 = the cohort size m)")
	fs.IntVar(&o.EvalEvery, "eval-every", o.EvalEvery, "evaluate the global model on the test set every K rounds (0 = never)")
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
	fs.BoolVar(&o.Lobby, "lobby", false, "start the session in a lobby: the teacher presses Start on the dashboard (teacher link), which sizes it for the class (\"one lesson\" preset)")
	fs.BoolVar(&o.Reset, "reset", false, "start a new session (the current one is kept, listed as finished)")
	fs.IntVar(&o.RollbackTo, "rollback-to", -1, "make round N the last committed round first (recovery from a state that cannot be served; the store keeps the last 16 rounds)")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: debug, info, warn, error")
	fs.StringVar(&o.Role, "role", o.Role, "single: one process holds the devices and the session; session: the session process of the cluster shape (rounds, store, dashboard; devices reach it through edges); edge: holds device websockets for a session process (docs/cluster.md)")
	fs.StringVar(&o.NATS, "nats", "", "NATS server URL(s), comma separated (session, edge); for -role session, empty = start an embedded NATS server on -nats-listen")
	fs.StringVar(&o.NATSListen, "nats-listen", "127.0.0.1:4222", "-role session without -nats: the embedded NATS server's client address")
	fs.StringVar(&o.NATSPrefix, "nats-prefix", o.NATSPrefix, "first token of the cluster's NATS subjects (one per session process)")
	fs.StringVar(&o.NATSToken, "nats-token", "", "removed: every component has its own NATS key now (-nats-nkey, -edges; docs/cluster.md)")
	fs.StringVar(&o.NATSNKey, "nats-nkey", "", "this component's NATS nkey seed file (edge: the file the session process wrote for it, DATA/nats/edge-ID.nk; session: with -nats, its own)")
	edges := fs.String("edges", "", "-role session: the edges' ids, comma separated: the session process generates each one's NATS key (DATA/nats/edge-ID.nk, 0600) and listens to these edges only")
	fs.StringVar(&o.NATSCA, "nats-ca", "", "PEM CA for TLS between the cluster's components (with -nats-cert, -nats-key)")
	fs.StringVar(&o.NATSCert, "nats-cert", "", "this component's PEM certificate for NATS TLS")
	fs.StringVar(&o.NATSKey, "nats-key", "", "this component's PEM key for NATS TLS")
	fs.StringVar(&o.EdgeID, "edge-id", "", "-role edge: this edge's name, unique in the cluster (default: the host name and listen port)")
	fs.StringVar(&o.SessionURL, "session-url", "", "-role edge: the session process's HTTP URL; the page's /api/ calls and the dashboard are proxied to it (run the session with -trust-proxy naming the edges' addresses)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile to this file until shutdown (measurements)")
	memProfile := fs.String("memprofile", "", "write a heap profile (with every allocation since start: go tool pprof -sample_index=alloc_space) to this file at shutdown (measurements)")
	p := &o.Session
	fs.StringVar(&p.Name, "name", p.Name, "session name")
	fs.StringVar(&p.Algorithm, "algorithm", p.Algorithm, "algorithm: "+strings.Join(optim.Names(), ", "))
	fs.StringVar(&p.Model, "model", p.Model, "model: logreg, mlp or logreg-unit (logreg on inputs scaled to norm 1: what -local-epochs needs for the last-iterate charge)")
	fs.IntVar(&p.M, "M", p.M, "expected devices in the session")
	fs.IntVar(&p.Cohort, "m", p.Cohort, "devices per round (cohort size)")
	fs.IntVar(&p.Rounds, "T", p.Rounds, "rounds")
	fs.IntVar(&p.Batch, "b", p.Batch, "samples per device per round")
	fs.Float64Var(&p.RhoPaper, "rho", p.RhoPaper, "privacy target: the papers' rho_p (each device rho_p^2/2-zCDP)")
	fs.Float64Var(&p.Epsilon, "epsilon", 0, "privacy target: epsilon per device (with -delta, instead of -rho)")
	fs.Float64Var(&p.Delta, "delta", 0, "privacy target: delta per device")
	fs.Float64Var(&p.Clip, "clip", p.Clip, "per-sample L2 clipping bound S")
	fs.Float64Var(&p.Eta, "eta", p.Eta, "step size eta")
	fs.Float64Var(&p.Diameter, "D", 0, "diameter of the feasible ball (0 = unconstrained)")
	fs.StringVar(&p.Compressor, "compressor", "", "uplink compressor spec (shared/mechanism; default dense float32)")
	fs.IntVar(&p.LocalSize, "local-size", 0, "SVRG/SAGA local dataset size")
	fs.IntVar(&p.LocalSteps, "local-steps", 0, "local: hidden local steps K per round, each on b/K of the round's b samples (0 = b)")
	fs.IntVar(&p.LocalEpochs, "local-epochs", 0, "local: passes E over the round's K step batches (E K hidden steps; 0 = 1); E > 1 is charged by the last-iterate bound when the model certifies it (logreg-unit, clip >= 2, eta <= 2, no -D), else E steps")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	// Precedence: command line > environment > config file > default.
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *config != "" {
		fileOpts := defaults()
		b, err := os.ReadFile(*config)
		if err != nil {
			return o, fmt.Errorf("config: %w", err)
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fileOpts); err != nil {
			return o, fmt.Errorf("config %s: %w", *config, err)
		}
		// The flag variables point into o: copy the file's values in,
		// then re-apply the command line on top.
		cmdline := map[string]string{}
		fs.Visit(func(f *flag.Flag) { cmdline[f.Name] = f.Value.String() })
		o = fileOpts
		for name, v := range cmdline {
			fs.Set(name, v)
		}
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || f.Name == "config" {
			return
		}
		if v, ok := os.LookupEnv("BFL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))); ok {
			if err := fs.Set(f.Name, v); err != nil && envErr == nil {
				envErr = fmt.Errorf("environment BFL_%s: %w", strings.ToUpper(f.Name), err)
			}
		}
	})
	if envErr != nil {
		return o, envErr
	}
	// A non-private reference (mu2, sgd) takes no privacy target: the
	// demo's default rho_p is dropped unless another target was given.
	if def := defaults().Session; !plan.FromSession(o.Session).Private() &&
		o.Session.RhoPaper == def.RhoPaper && o.Session.Epsilon == 0 && o.Session.Delta == 0 {
		o.Session.RhoPaper = 0
	}
	if *edges != "" {
		o.Edges = nil
		for _, s := range strings.Split(*edges, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Edges = append(o.Edges, s)
			}
		}
	}
	if *origins != "" {
		for _, s := range strings.Split(*origins, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.Origins = append(o.Origins, s)
			}
		}
	}
	o.cpuProfile = *cpuProfile
	o.memProfile = *memProfile
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return o, errors.New("-tls-cert and -tls-key go together")
	}
	switch o.Role {
	case "single", "session", "edge":
	default:
		return o, fmt.Errorf("-role %q: single, session or edge", o.Role)
	}
	if o.NATSToken != "" {
		return o, errors.New("-nats-token was removed: a shared token let any edge speak as any other; every component now has " +
			"its own NATS key: the session process generates one per edge named in -edges, and each edge takes its file " +
			"with -nats-nkey (docs/cluster.md, \"Credentials\")")
	}
	if o.Role == "edge" && o.NATS == "" {
		return o, errors.New("-role edge needs -nats (the session process's NATS)")
	}
	if o.Role == "edge" && o.NATSNKey == "" {
		return o, errors.New("-role edge needs -nats-nkey FILE: the edge's NATS key, written by the session process as DATA/nats/edge-ID.nk for each edge in its -edges")
	}
	if o.Role == "session" && o.NATS == "" && len(o.Edges) == 0 {
		return o, errors.New("-role session needs -edges ID,...: the edges it generates NATS keys for (DATA/nats/edge-ID.nk; docs/cluster.md)")
	}
	if o.Role == "session" && o.NATS != "" && o.NATSNKey == "" {
		return o, errors.New("-role session with -nats needs -nats-nkey FILE: its own NATS key, known to the NATS cluster")
	}
	if o.JoinCodeLength < 8 {
		return o, fmt.Errorf("-join-code-length %d: want at least 8 (40 bits)", o.JoinCodeLength)
	}
	task, err := dataset.LookupTask(o.Task)
	if err != nil {
		return o, fmt.Errorf("-task: %w", err)
	}
	// -dataset mnist (or fashion-mnist, flsim's names) picks a task and
	// its own directory; a directory needs a slash (./mnist).
	if named, err := dataset.LookupTask(o.DatasetDir); err == nil && !strings.Contains(o.DatasetDir, "/") {
		if o.Task != defaults().Task && named.Name != task.Name {
			return o, fmt.Errorf("-dataset %s is the %s task, but -task is %s", o.DatasetDir, named.Name, task.Name)
		}
		o.Task, o.DatasetDir = named.Name, ""
	}
	return o, nil
}

func run(args []string, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.memProfile != "" {
		defer func() {
			f, err := os.Create(o.memProfile)
			if err != nil {
				fmt.Fprintf(stderr, "coordinator: -memprofile: %v\n", err)
				return
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fmt.Fprintf(stderr, "coordinator: -memprofile: %v\n", err)
			}
		}()
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if o.Role == "edge" {
		return runEdge(o, log, stderr)
	}
	deadline, err := time.ParseDuration(o.Deadline)
	if err != nil || deadline <= 0 {
		return fmt.Errorf("-deadline %q: want a positive duration", o.Deadline)
	}
	gap, err := time.ParseDuration(o.RoundGap)
	if err != nil || gap < 0 {
		return fmt.Errorf("-round-gap %q: want a duration >= 0", o.RoundGap)
	}

	train, test, labels, err := loadTask(o.Task, o.DatasetDir)
	if err != nil {
		return err
	}
	if o.DatasetDir == "none" {
		o.DemoShards, o.EvalEvery = -1, 0
	}
	sess := o.Session
	mdl, err := model.New(sess.Model, train.Features, train.Classes)
	if err != nil {
		return err
	}
	sess.Features, sess.Classes, sess.Dim = train.Features, train.Classes, mdl.Dim()
	if sess.Labels == "" {
		sess.Labels = labels
	}
	sess.DeadlineMillis = int(deadline.Milliseconds())
	p := devrt.Params(sess)
	if err := p.Validate(); err != nil {
		return err
	}
	sess.Trusted = p.Trusted()
	shardsN := o.DemoShards
	if shardsN == 0 {
		shardsN = 4 * sess.M
	}
	sess.DemoShards = shardsN > 0
	if err := sess.Validate(); err != nil {
		return err
	}

	// The evaluation set is a fixed subset of the test set (its first
	// -eval-samples samples), the only part of the data held as float32;
	// the training set stays compact (one byte per pixel) and the demo
	// shards are expanded from it one at a time.
	evalN := test.Len()
	if o.EvalSamples > 0 {
		evalN = min(o.EvalSamples, evalN)
	}
	evalData, err := test.Head(evalN)
	if err != nil {
		return err
	}
	evalSet := evalData.Samples
	if o.EvalEvery > 0 && len(evalSet) > 0 {
		log.Info("server-side evaluation", "every_rounds", o.EvalEvery, "test_samples", len(evalSet), "test_set", test.Len())
	}
	evalModel := mdl.Clone()
	template := func() (coordinator.Config, error) {
		return coordinator.Config{
			Session: sess, Lobby: o.Lobby, MinDevices: o.MinDevices,
			NewServer: func(final wire.SessionParams) (optim.Server, error) {
				x0 := make([]float64, mdl.Dim())
				model.Init(mdl, x0, 1)
				return optim.NewServer(devrt.Params(final), x0, crand.Reader)
			},
			RoundGap: gap, EvalEvery: o.EvalEvery, EvalSamples: len(evalSet), Logger: log, AllowedOrigins: o.Origins,
			Limits: coordinator.Limits{MaxDevices: o.MaxDevices, MsgRate: o.MsgRate},
			Gate: coordinator.Gate{RegisterRate: o.RegisterRate, RegisterGlobalRate: o.RegisterGlobalRate,
				MaxInactive: o.MaxInactive, PreHelloPerAddress: o.PreHelloPerAddress, TrustedProxies: o.TrustProxy,
				MetricsToken: o.MetricsToken},
			Evaluate: func(w []float64) (float64, float64, error) {
				acc, loss := model.Evaluate(evalModel, w, evalSet)
				return acc, loss, nil
			},
		}, nil
	}
	// The shards size themselves by the rounds the current session has
	// left; the host exists only below.
	var host *coordinator.Host
	current := func() *coordinator.Coordinator { return host.Current() }
	var shards *coordinator.Shards
	if shardsN > 0 {
		if shards, err = coordinator.NewShards(train, coordinator.ShardConfig{Classes: train.Classes, Rounds: sess.Rounds, Batch: sess.Batch,
			Alpha: o.DemoAlpha, Seed: 1, Max: shardsN, Committed: func() int { return current().Committed() }}); err != nil {
			return err
		}
		size := dataset.PageShardSize(sess.Rounds, sess.Batch, 0, train.Len())
		log.Info("demo shards (demo only)", "task", o.Task, "train", train.Len(), "shard_samples", size,
			"disjoint_shards", train.Len()/max(size, 1), "max_shards", shardsN)
	}
	index := browserfl.IndexHTML
	if o.Index != "" {
		if index, err = os.ReadFile(o.Index); err != nil {
			return fmt.Errorf("-index: %w", err)
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	metricsGenerated, err := o.metricsToken(ln.Addr())
	if err != nil {
		return err
	}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	ifaces, err := coordinator.MachineAddrs()
	if err != nil {
		log.Warn("cannot list this machine's addresses", "err", err)
	}
	// Each session puts its own join code into these URLs.
	join := coordinator.JoinURLs(ln.Addr().String(), scheme, "CODE", ifaces)
	hcfg := coordinator.HostConfig{Dir: o.DataDir, Template: template, JoinCode: o.JoinCode, Seed: o.Seed,
		JoinCodeLength: o.JoinCodeLength, Fresh: o.Reset, Logger: log, Shards: shards,
		Assets: coordinator.Assets{Index: index, Web: web.FS(), Join: join}}
	if o.Role == "session" {
		attach, closeNATS, err := sessionNode(o, log)
		if err != nil {
			return err
		}
		defer closeNATS()
		hcfg.Attach = attach
	}
	if o.RollbackTo >= 0 {
		hcfg.Prepare = func(st *coordinator.Store) error {
			if err := st.RollBack(o.RollbackTo); err != nil {
				return fmt.Errorf("-rollback-to: %w", err)
			}
			log.Warn("rolled back: devices included in the discarded rounds keep noise the model no longer cancels", "round", o.RollbackTo)
			return nil
		}
	}
	host, err = coordinator.OpenHost(hcfg)
	if err != nil {
		return err
	}
	hostRun := false
	defer func() {
		if !hostRun {
			host.Close()
		}
	}()
	joinCode := host.JoinCode()
	if len(joinCode) < 8 {
		log.Warn("the join code is short: with the per-address backoff it resists guessing from a few addresses, not from many; prefer the default random code", "length", len(joinCode))
	}
	if !web.HasWasm() {
		log.Warn("this binary has no embedded web/app.wasm: run `make wasm` (or `make run`) so browsers can join")
	}

	srv, err := newHTTPServer(host, o, log)
	if err != nil {
		return err
	}
	cur := host.Current().Session()
	sizing := fmt.Sprintf("M = %d, m = %d, T = %d", cur.M, cur.Cohort, cur.Rounds)
	if host.Current().State() == coordinator.StateLobby {
		sizing = "in its lobby: sized for the class at Start, \"one lesson\" preset"
	}
	printJoin(stderr, cur, sizing, coordinator.JoinURLs(ln.Addr().String(), scheme, joinCode, ifaces), joinCode, host.TeacherSecret())
	if metricsGenerated {
		printMetricsToken(stderr, o.MetricsToken)
	}
	if o.Role == "session" {
		fmt.Fprintf(stderr, "  cluster:   devices join through an edge (coordinator -role edge -nats ... -session-url %s://%s): use the edge's address in the join URL, code %s\n",
			scheme, ln.Addr(), joinCode)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srvErr := serve(srv, ln, o)
	runErr := make(chan error, 1)
	hostRun = true
	go func() { runErr <- host.Run(ctx) }()
	go host.LogWarnings(ctx, shards, 5*time.Second)

	var result error
	runDone := false
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-srvErr:
		result = fmt.Errorf("http: %w", err)
	case err := <-runErr:
		runDone = true
		result = err
	}
	stop()
	// Committed rounds are already durable; an open round is abandoned
	// and its devices learn "excluded" when they resume. Wait for the
	// host (it stops the round loop and closes the stores) so that no
	// commit races a store's Close.
	if !runDone {
		select {
		case err := <-runErr:
			if err != nil && !errors.Is(err, context.Canceled) && result == nil {
				result = err
			}
		case <-time.After(15 * time.Second):
			log.Warn("the host did not stop in 15 s")
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	log.Info("stopped")
	return result
}

// serve serves srv on ln (with TLS when o has a certificate) and
// delivers the server's end.
func serve(srv *http.Server, ln net.Listener, o options) <-chan error {
	done := make(chan error, 1)
	go func() {
		if o.TLSCert != "" {
			done <- srv.ServeTLS(ln, o.TLSCert, o.TLSKey)
		} else {
			done <- srv.Serve(ln)
		}
	}()
	return done
}

// loadTask loads the task's training and test sets from dir (the task's
// own directory if empty) and returns its class names for the session's
// Labels. dir "none" loads nothing: a 28x28, 10-class model without data
// (load tests: no demo shards, no evaluation, no labels).
func loadTask(name, dir string) (train, test *dataset.Compact, labels string, err error) {
	if dir == "none" {
		return &dataset.Compact{Features: 784, Classes: 10}, &dataset.Compact{Features: 784, Classes: 10}, "", nil
	}
	task, err := dataset.LookupTask(name)
	if err != nil {
		return nil, nil, "", err
	}
	if train, test, err = task.LoadCompact(dir); err != nil {
		return nil, nil, "", err
	}
	return train, test, strings.Join(task.Labels, ","), nil
}

// newHTTPServer returns the server with its timeouts: request headers
// must arrive within -read-header-timeout and idle keep-alive
// connections are closed after -idle-timeout. (No read or write timeout:
// they would also cut the long-lived websockets.)
func newHTTPServer(h http.Handler, o options, log *slog.Logger) (*http.Server, error) {
	rh, err := time.ParseDuration(o.ReadHeaderTimeout)
	if err != nil || rh <= 0 {
		return nil, fmt.Errorf("-read-header-timeout %q: want a positive duration", o.ReadHeaderTimeout)
	}
	idle, err := time.ParseDuration(o.IdleTimeout)
	if err != nil || idle <= 0 {
		return nil, fmt.Errorf("-idle-timeout %q: want a positive duration", o.IdleTimeout)
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: rh, IdleTimeout: idle, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}, nil
}

// codeAlphabet has 32 characters without look-alikes (no 0/O, 1/I/L is
// kept as L only): 5 bits per character, upper case, easy on a phone.
const codeAlphabet = coordinator.JoinCodeAlphabet

// randomCode returns an n-character join code (5n bits) from
// codeAlphabet, drawn from crypto/rand.
func randomCode(n int) (string, error) { return coordinator.RandomJoinCode(n) }

// printJoin prints the join URLs (every LAN address), a QR code of the
// first, the join code and the dashboard URL.
func printJoin(w io.Writer, sess wire.SessionParams, sizing string, join coordinator.JoinInfo, code, teacher string) {
	fmt.Fprintf(w, "\nbrowserfl coordinator: session %q (%s, %s, d = %d, %s)\n",
		sess.Name, sess.Algorithm, sess.Model, sess.Dim, sizing)
	for i, u := range join.URLs {
		label := "join:     "
		if i > 0 {
			label = "or:       "
		}
		fmt.Fprintf(w, "  %s %s\n", label, u)
	}
	fmt.Fprintf(w, "  join code: %s\n", code)
	if len(join.URLs) > 0 {
		base := strings.SplitN(join.URLs[0], "/?", 2)[0]
		fmt.Fprintf(w, "  dashboard: %s/dashboard?code=%s (read-only)\n", base, code)
		if teacher != "" {
			fmt.Fprintf(w, "  teacher:   %s/dashboard?code=%s&teacher=%s (keep it to yourself: it starts, pauses and ends sessions)\n", base, code, teacher)
		}
	}
	if join.LoopbackOnly {
		fmt.Fprintf(w, "  note:      %s\n", coordinator.LoopbackHint)
	} else if len(join.URLs) > 0 {
		if q, err := coordinator.TerminalQR(join.URLs[0]); err == nil {
			fmt.Fprintf(w, "\n%s", q)
		}
	}
	fmt.Fprintln(w)
}
