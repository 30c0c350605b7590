// Command coordinator serves one federated-learning session: the device
// websocket, the page and its WebAssembly build, a projector dashboard, a
// JSON API, Prometheus metrics and health checks, with its state in an
// embedded bbolt store that survives crashes.
//
// Every flag can also come from the environment as BFL_<FLAG> (dashes as
// underscores, e.g. BFL_LISTEN=:8080) or from a JSON config file (-config);
// precedence: command line, environment, config file, default. Run
// `coordinator -h` for the flags.
//
// The files split the command by job: options.go reads the flags,
// session.go assembles the session from them and the task's data,
// cluster.go runs the session and edge processes of the cluster shape,
// serve.go serves HTTP until the end, print.go prints the join lines;
// main.go wires them.
package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/pprof"
	"strings"

	"browserfl/coordinator/site"
	"browserfl/coordinator/store"
	"browserfl/web"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		// Errors of package coordinator carry its name already.
		fmt.Fprintln(os.Stderr, "coordinator:", strings.TrimPrefix(err.Error(), "coordinator: "))
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	stopProfiles, err := o.startProfiles(stderr)
	if err != nil {
		return err
	}
	defer stopProfiles()
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.LogLevel)); err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	if o.TLSCert != "" {
		// Read before anything is created or printed: a wrong path
		// would otherwise fail only once the server starts, after the
		// session and its join links.
		if _, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey); err != nil {
			return fmt.Errorf("-tls-cert %s, -tls-key %s: %w", o.TLSCert, o.TLSKey, err)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if o.Role == "edge" {
		return runEdge(o, log, stderr)
	}
	return runSession(o, log, stderr)
}

// writableDir creates dir if needed and checks that a file can be
// written in it.
func writableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// runSession runs the session process (-role single or session): the
// host of the sessions, their store and the HTTP server.
func runSession(o options, log *slog.Logger, stderr io.Writer) error {
	if err := writableDir(o.DataDir); err != nil {
		return fmt.Errorf("-data %s: %w (the coordinator keeps its sessions there, and the pictures of a picture task while it runs)", o.DataDir, err)
	}
	index, err := o.index()
	if err != nil {
		return err
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
	ifaces, err := site.MachineAddrs()
	if err != nil {
		log.Warn("cannot list this machine's addresses", "err", err)
	}
	// Each session puts its own join code into these URLs.
	join := site.JoinURLs(ln.Addr().String(), o.scheme(), "CODE", ifaces)
	host, shards, closeHost, err := openHost(o, site.Assets{Index: index, Web: web.FS(), Join: join}, log)
	if err != nil {
		return err
	}
	defer closeHost()
	srv, err := newHTTPServer(host, o, log)
	if err != nil {
		host.Close()
		return err
	}
	printStart(stderr, host, ln.Addr(), o, ifaces, metricsGenerated, log)
	return serveHost(host, srv, ln, o, shards, log)
}

// rollBack returns the host's Prepare for -rollback-to.
func (o options) rollBack(log *slog.Logger) func(*store.Store) error {
	return func(st *store.Store) error {
		if err := st.RollBack(o.RollbackTo); err != nil {
			return fmt.Errorf("-rollback-to: %w", err)
		}
		log.Warn("rolled back: devices included in the discarded rounds keep noise the model no longer cancels", "round", o.RollbackTo)
		return nil
	}
}

// startProfiles starts -cpuprofile's CPU profile; the returned stop
// writes -memprofile's heap profile, then stops the CPU profile.
func (o options) startProfiles(stderr io.Writer) (stop func(), err error) {
	stopCPU := func() {}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stopCPU = func() { pprof.StopCPUProfile(); f.Close() }
	}
	return func() {
		if o.memProfile != "" {
			writeMemProfile(o.memProfile, stderr)
		}
		stopCPU()
	}, nil
}

// writeMemProfile writes the allocation profile to path.
func writeMemProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "coordinator: -memprofile: %v\n", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintf(stderr, "coordinator: -memprofile: %v\n", err)
	}
}
