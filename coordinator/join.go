package coordinator

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"browserfl/coordinator/store"
	"browserfl/shared/wire"

	"rsc.io/qr"
)

// This file holds what the classroom sees besides the training itself:
// the join addresses (every non-loopback address of the machine), a QR
// code of the join URL drawn on the server, the final model as JSON, and
// the figures the dashboard reads from the store so that they survive a
// restart (session start, most rounds any one device was included in,
// how many devices took part).

// JoinInfo says how devices reach this coordinator; cmd/coordinator fills
// it from its listener (JoinURLs) and passes it in Assets.Join.
type JoinInfo struct {
	// URLs are the join URLs, the code included, one per address phones
	// on the same network can use; the first is the one shown big and
	// drawn as the QR code. Empty: the dashboard uses the address it was
	// opened at.
	URLs []string `json:"urls"`
	// LoopbackOnly is true when the coordinator listens on a loopback
	// address only: no other machine can join.
	LoopbackOnly bool `json:"loopback_only,omitempty"`
	// LANURLs, with LoopbackOnly, are the join URLs phones could use
	// once the coordinator listens on every address at the same port
	// (-listen :PORT): what the dashboard tells the teacher to do.
	LANURLs []string `json:"lan_urls,omitempty"`
}

// LoopbackHint is what to do when the coordinator listens on loopback
// only.
const LoopbackHint = `listening on this machine only: phones cannot join; to listen on the LAN: make run RUNFLAGS="-listen :8080"`

// LANHosts returns the hosts (IP literals, IPv6 in brackets) of addrs
// that another machine on the network can reach: loopback, unspecified,
// multicast and link-local addresses are left out (an IPv6 link-local
// address needs a zone, which browsers do not accept in a URL, and an
// IPv4 link-local one means the interface got no address from the
// network). IPv4 comes first, then IPv6, each in the order given, without
// duplicates.
func LANHosts(addrs []net.Addr) []string {
	var v4, v6 []string
	seen := map[string]bool{}
	for _, a := range addrs {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		case *net.TCPAddr:
			ip = a.IP
		default:
			ip = net.ParseIP(strings.SplitN(a.String(), "/", 2)[0])
		}
		if ip == nil || ip.IsLoopback() || ip.IsUnspecified() || ip.IsMulticast() ||
			ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() {
			continue
		}
		s := ip.String()
		if seen[s] {
			continue
		}
		seen[s] = true
		if ip.To4() != nil {
			v4 = append(v4, s)
		} else {
			v6 = append(v6, "["+s+"]")
		}
	}
	return append(v4, v6...)
}

// Interface is one network interface as MachineAddrs sees it.
type Interface struct {
	Name  string
	Up    bool
	Addrs []net.Addr
}

// virtualPrefixes name interfaces that are usually not the classroom's
// network (container bridges, virtual machines, VPN tunnels): their
// addresses are listed after the others, so that the first join URL
// (the one drawn as the QR code) is the Wi-Fi's or the Ethernet's.
var virtualPrefixes = []string{"docker", "br-", "veth", "virbr", "vboxnet", "vmnet", "cni", "flannel", "podman",
	"lxc", "lxd", "tun", "tap", "wg", "tailscale", "zt", "utun", "ppp"}

// OrderAddrs returns the addresses of the interfaces that are up, those
// of virtual interfaces (virtualPrefixes) last.
func OrderAddrs(ifs []Interface) []net.Addr {
	var first, last []net.Addr
	for _, it := range ifs {
		if !it.Up {
			continue
		}
		virtual := false
		for _, p := range virtualPrefixes {
			if strings.HasPrefix(strings.ToLower(it.Name), p) {
				virtual = true
				break
			}
		}
		if virtual {
			last = append(last, it.Addrs...)
		} else {
			first = append(first, it.Addrs...)
		}
	}
	return append(first, last...)
}

// MachineAddrs returns this machine's interface addresses in OrderAddrs
// order.
func MachineAddrs() ([]net.Addr, error) {
	nifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var ifs []Interface
	for _, ni := range nifs {
		addrs, err := ni.Addrs()
		if err != nil {
			continue
		}
		ifs = append(ifs, Interface{Name: ni.Name, Up: ni.Flags&net.FlagUp != 0, Addrs: addrs})
	}
	return OrderAddrs(ifs), nil
}

// JoinURLs returns the join URLs for a listener bound to bound (its
// actual address, e.g. "[::]:8080" or "127.0.0.1:8080"): one per LAN host
// of ifaces when the listener takes every address, the bound address
// itself when it is a specific non-loopback one, and localhost with
// LoopbackOnly when it is loopback.
func JoinURLs(bound, scheme, code string, ifaces []net.Addr) JoinInfo {
	host, port, err := net.SplitHostPort(bound)
	if err != nil {
		return JoinInfo{}
	}
	join := func(h string) string { // h: a LANHosts host (IPv6 bracketed)
		return scheme + "://" + h + ":" + port + "/?code=" + url.QueryEscape(code)
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil || ip.IsLoopback():
		info := JoinInfo{URLs: []string{join("localhost")}, LoopbackOnly: ip != nil || host == "localhost"}
		if info.LoopbackOnly {
			for _, h := range LANHosts(ifaces) {
				info.LANURLs = append(info.LANURLs, join(h))
			}
		}
		return info
	case ip.IsUnspecified():
		var info JoinInfo
		for _, h := range LANHosts(ifaces) {
			// A listener on 0.0.0.0 takes IPv4 only.
			if ip.To4() != nil && strings.HasPrefix(h, "[") {
				continue
			}
			info.URLs = append(info.URLs, join(h))
		}
		if len(info.URLs) == 0 {
			// No network: only this machine can join.
			info.URLs = []string{join("localhost")}
		}
		return info
	}
	h := ip.String()
	if ip.To4() == nil {
		h = "[" + h + "]"
	}
	return JoinInfo{URLs: []string{join(h)}}
}

// QRPNG returns text as a QR code PNG (error correction level M, 8 pixels
// a module, a quiet zone of 4 modules).
func QRPNG(text string) ([]byte, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return nil, err
	}
	return c.PNG(), nil
}

// TerminalQR returns text as a QR code for a terminal: two modules a
// line with half blocks, light modules drawn (a dark terminal shows dark
// modules on a light ground), with a quiet zone of 2 modules.
func TerminalQR(text string) (string, error) {
	c, err := qr.Encode(text, qr.M)
	if err != nil {
		return "", err
	}
	const quiet = 2
	light := func(x, y int) bool { return !c.Black(x, y) } // outside the code: light
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		b.WriteString("  ")
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bot := light(x, y), light(x, y+1) && y+1 < c.Size+quiet
			switch {
			case top && bot:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bot:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// ModelSchema names the layout of /api/model.json.
const ModelSchema = "browserfl.model/v1"

// ModelJSON is the document of /api/model.json: the global model after
// round Round with what is needed to use it (docs/coordinator.md, "The
// model as JSON").
type ModelJSON struct {
	Schema   string             `json:"schema"`
	Session  wire.SessionParams `json:"session"`
	Round    int                `json:"round"`
	Finished bool               `json:"finished"`
	Model    string             `json:"model"`
	Features int                `json:"features"`
	Classes  int                `json:"classes"`
	// Hidden is the MLP's hidden width (0 for logreg).
	Hidden int      `json:"hidden,omitempty"`
	Labels []string `json:"labels"`
	// Accuracy is the last test-set evaluation (round AccuracyRound).
	Accuracy      *float64 `json:"accuracy,omitempty"`
	AccuracyRound int      `json:"accuracy_round,omitempty"`
	// AccuracySamples is the number of test samples it was measured on.
	AccuracySamples int       `json:"accuracy_samples,omitempty"`
	Weights         []float64 `json:"weights"`
}

// Summary is the end-of-session figures (and, during the session, the
// figures so far), read from the store: they survive a restart.
type Summary struct {
	// SessionStart is when this session's store was first used; Uptime
	// is measured from it.
	SessionStart time.Time `json:"session_start"`
	// Participants is the number of distinct devices included in at
	// least one committed round; Registered the devices the store knows.
	Participants int `json:"participants"`
	Registered   int `json:"registered"`
	// MostIncluded is the most committed rounds any one device was
	// included in; MostAsked the most rounds any one device was in the
	// cohort of (asked, whether or not its update arrived).
	MostIncluded int `json:"most_included"`
	MostAsked    int `json:"most_asked"`
	// WorstEpsilonText is that device's worst case through
	// plan.SessionFigures (the session's per-device figure, which bounds
	// every device whatever its count) and WorstText the whole sentence.
	WorstEpsilonText string `json:"worst_epsilon_text,omitempty"`
	WorstText        string `json:"worst_text"`
	// BestAccuracy is the best test-set accuracy of any evaluation (round
	// BestRound); FinalAccuracy the last one (round FinalRound).
	BestAccuracy  *float64 `json:"best_accuracy,omitempty"`
	BestRound     int      `json:"best_round,omitempty"`
	FinalAccuracy *float64 `json:"final_accuracy,omitempty"`
	FinalRound    int      `json:"final_round,omitempty"`
	// AccuracySamples is the number of test samples of the final
	// evaluation (Config.EvalSamples).
	AccuracySamples int `json:"accuracy_samples,omitempty"`
}

// tally counts, over the committed round records, the rounds each device
// was included in and asked in, and keeps the best and the last
// evaluation. It reads only what changed since its last call: the rounds
// committed since, and the last evalLag rounds again (an evaluation is
// added to a record after its commit); a roll back starts it over.
type tally struct {
	mu          sync.Mutex
	last        int // rounds <= last are counted
	included    map[string]int
	asked       map[string]int
	best, final AccuracyPoint
	haveEval    bool
}

func (tl *tally) update(s *store.Store, evalLag int) error {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	committed, _, err := s.State()
	if err != nil {
		return err
	}
	if committed < tl.last || tl.included == nil {
		tl.last, tl.included, tl.asked = 0, map[string]int{}, map[string]int{}
		tl.best, tl.final, tl.haveEval = AccuracyPoint{}, AccuracyPoint{}, false
	}
	after := max(0, tl.last-evalLag)
	for {
		recs, err := s.Rounds(after, 1000)
		if err != nil {
			return err
		}
		for _, r := range recs {
			after = r.T
			if r.T > tl.last {
				for _, id := range r.Included {
					tl.included[id]++
				}
				for _, id := range r.Cohort {
					tl.asked[id]++
				}
				tl.last = r.T
			}
			if r.Evaluated {
				p := AccuracyPoint{Round: r.T, Accuracy: r.Accuracy, Loss: r.Loss, Samples: r.EvalSamples}
				if !tl.haveEval || p.Accuracy > tl.best.Accuracy || p.Round == tl.best.Round {
					tl.best = p
				}
				if !tl.haveEval || p.Round >= tl.final.Round {
					tl.final = p
				}
				tl.haveEval = true
			}
		}
		if len(recs) < 1000 {
			return nil
		}
	}
}

// joinState is what Handler keeps for the handlers of this file.
type joinState struct {
	c     *Coordinator
	info  JoinInfo
	start time.Time
	tally tally
}

// newJoin reads (or sets) the session start in the store. The join URLs
// get this session's own join code (a host makes a new code for every
// session but builds the URLs once).
func (c *Coordinator) newJoin(info JoinInfo) *joinState {
	urls := make([]string, len(info.URLs))
	for i, u := range info.URLs {
		urls[i] = withCode(u, c.cfg.JoinCode)
	}
	info.URLs = urls
	info.LANURLs = withCodes(info.LANURLs, c.cfg.JoinCode)
	j := &joinState{c: c, info: info}
	start, err := c.store.SessionStart(c.started)
	if err != nil {
		c.front.Log.Warn("session start unavailable; uptime counts from this process's start", "err", err)
		start = c.started
	}
	j.start = start
	return j
}

// Summary returns the store-backed figures.
func (j *joinState) Summary() (Summary, error) {
	sum := Summary{SessionStart: j.start}
	// Evaluations land in a record after its commit: re-read the last
	// few rounds each time.
	if err := j.tally.update(j.c.store, 2*j.c.cfg.EvalEvery+4); err != nil {
		return sum, err
	}
	j.tally.mu.Lock()
	sum.Participants = len(j.tally.included)
	for _, n := range j.tally.included {
		sum.MostIncluded = max(sum.MostIncluded, n)
	}
	for _, n := range j.tally.asked {
		sum.MostAsked = max(sum.MostAsked, n)
	}
	if j.tally.haveEval {
		best, final := j.tally.best, j.tally.final
		sum.BestAccuracy, sum.BestRound = &best.Accuracy, best.Round
		sum.FinalAccuracy, sum.FinalRound, sum.AccuracySamples = &final.Accuracy, final.Round, final.Samples
	}
	j.tally.mu.Unlock()
	if n, err := j.c.store.Devices(); err == nil {
		sum.Registered = n
	}
	pv := SessionPrivacy(j.c.cfg.Session)
	sum.WorstEpsilonText, sum.WorstText = pv.EpsilonText, pv.Text
	return sum, nil
}

// JoinView is the "join" part of /api/status: where to join and the
// figures read from the store.
type JoinView struct {
	JoinInfo
	LoopbackHint string   `json:"loopback_hint,omitempty"`
	Summary      *Summary `json:"summary,omitempty"`
}

// fill adds the join addresses, the store-backed figures and the uptime
// since the session start to s.
func (j *joinState) fill(s *Status, r *http.Request) {
	s.Join.JoinInfo = j.joinInfo(r)
	if s.Join.LoopbackOnly {
		s.Join.LoopbackHint = LoopbackHint
	}
	s.UptimeSec = time.Since(j.start).Seconds()
	sum, err := j.Summary()
	if err != nil {
		j.c.front.Log.Warn("dashboard summary", "err", err)
		return
	}
	s.Join.Summary = &sum
	// The store's count, not this process's: it survives restarts.
	s.Privacy.MaxParticipations = max(s.Privacy.MaxParticipations, sum.MostIncluded)
}

// joinInfo is the configured join info, or the address the request came
// to when none was configured.
func (j *joinState) joinInfo(r *http.Request) JoinInfo {
	if len(j.info.URLs) > 0 {
		return j.info
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !validHost(r.Host) || r.Host == "" {
		return JoinInfo{}
	}
	return JoinInfo{URLs: []string{scheme + "://" + r.Host + "/?code=" + url.QueryEscape(j.c.cfg.JoinCode)}}
}

// withCode returns join URL u with its code query set to code.
func withCode(u, code string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("code", code)
	p.RawQuery = q.Encode()
	return p.String()
}

// register adds the handlers of this file to mux.
func (j *joinState) register(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/join-qr.png", j.c.withCode(j.serveQR))
	mux.HandleFunc("GET /api/model.json", j.c.withCode(j.serveModelJSON))
}

// serveQR draws join URL ?i= (default 0) as a PNG.
func (j *joinState) serveQR(w http.ResponseWriter, r *http.Request) {
	info := j.joinInfo(r)
	i, _ := strconv.Atoi(r.URL.Query().Get("i"))
	if i < 0 || i >= len(info.URLs) {
		http.Error(w, "no such join address", http.StatusNotFound)
		return
	}
	png, err := QRPNG(info.URLs[i])
	if err != nil {
		http.Error(w, "qr: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(png)
}

// Model returns the global model after the last committed round as the
// /api/model.json document; ok is false before the first commit.
func (j *joinState) Model() (m ModelJSON, ok bool, err error) {
	c := j.c
	c.mu.Lock()
	frame, committed, finished, ev := c.modelFrame, c.committed, c.finished, c.lastEval
	c.mu.Unlock()
	if frame == nil {
		return m, false, nil
	}
	rf, err := wire.DecodeRound(frame, wire.Limits{MaxBytes: len(frame), Dim: c.cfg.Session.Dim})
	if err != nil {
		return m, false, err
	}
	for i, v := range rf.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return m, false, fmt.Errorf("model coordinate %d is %v", i, v)
		}
	}
	sess := c.cfg.Session
	m = ModelJSON{Schema: ModelSchema, Session: sess, Round: rf.T, Finished: finished && rf.T == committed,
		Model: sess.Model, Features: sess.Features, Classes: sess.Classes, Labels: sess.LabelNames(), Weights: rf.X}
	if m.Labels == nil {
		m.Labels = make([]string, sess.Classes)
		for k := range m.Labels {
			m.Labels[k] = strconv.Itoa(k)
		}
	}
	if sess.Model == "mlp" {
		// d = H*F + H + C*H + C.
		m.Hidden = (sess.Dim - sess.Classes) / (sess.Features + 1 + sess.Classes)
	}
	if ev.Valid {
		acc := ev.Accuracy
		m.Accuracy, m.AccuracyRound, m.AccuracySamples = &acc, ev.T, ev.Samples
	}
	return m, true, nil
}

func (j *joinState) serveModelJSON(w http.ResponseWriter, r *http.Request) {
	m, ok, err := j.Model()
	switch {
	case err != nil:
		http.Error(w, "model unavailable", http.StatusInternalServerError)
		return
	case !ok:
		http.Error(w, "no committed round yet", http.StatusNotFound)
		return
	}
	name := m.Session.Name
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		name = "session"
	}
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-round%d.model.json"`, name, m.Round))
	writeJSON(w, m)
}

// ValidateModelJSON checks a decoded /api/model.json document against its
// own session: schema, model name, dimensions and finite weights.
func ValidateModelJSON(m ModelJSON) error {
	if m.Schema != ModelSchema {
		return fmt.Errorf("schema %q, want %q", m.Schema, ModelSchema)
	}
	if m.Model != m.Session.Model || m.Features != m.Session.Features || m.Classes != m.Session.Classes {
		return errors.New("model, features or classes differ from the session")
	}
	if len(m.Weights) != m.Session.Dim {
		return fmt.Errorf("%d weights, the session's d is %d", len(m.Weights), m.Session.Dim)
	}
	switch m.Model {
	case "logreg", "logreg-unit":
		if m.Session.Dim != m.Classes*(m.Features+1) {
			return fmt.Errorf("%s: d != classes*(features+1)", m.Model)
		}
	case "mlp":
		h := m.Hidden
		if h < 1 || m.Session.Dim != h*m.Features+h+m.Classes*h+m.Classes {
			return errors.New("mlp: d != H*F + H + C*H + C")
		}
	}
	if len(m.Labels) != m.Classes {
		return fmt.Errorf("%d labels for %d classes", len(m.Labels), m.Classes)
	}
	for i, v := range m.Weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("weight %d is %v", i, v)
		}
	}
	return nil
}

// DashboardCSP is the dashboard's Content-Security-Policy (no inline
// script or style), for tests that serve its files themselves.
func DashboardCSP() string { return dashboardCSP }
