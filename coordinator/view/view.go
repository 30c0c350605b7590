// Package view holds what a session shows, as plain types: the JSON of
// /api/status (Status and its parts: Person, RoundView, EvalView,
// PrivacyView, EdgeStatus, JoinView, Summary, Notice), the plan and
// standing the plan warnings read (Activity) and the global model with
// what describes it (ModelSnapshot). The session core (coordinator) fills
// them under its lock; the HTTP API (coordinator/api) adds the warnings,
// the join figures and the projector's words. Nothing here knows a
// session: the only computation is SessionPrivacy, a session's figures
// through shared/plan.
package view

import (
	"slices"
	"time"

	"browserfl/coordinator/site"
	"browserfl/shared/plan"
	"browserfl/shared/wire"
)

// Status is the JSON of /api/status (and what the dashboard draws).
type Status struct {
	Session wire.SessionParams `json:"session"`
	// State is "lobby", "running", "paused" or "ended" (coordinator.StateLobby...).
	State string `json:"state"`
	// People lists the devices (nickname, state, rounds included; no
	// device id) in the order they joined.
	People []Person `json:"people"`
	// Teacher is true when the request carried the teacher secret (the
	// dashboard then shows the teacher's controls).
	Teacher bool `json:"teacher"`
	// TeacherChoice, the teacher's only, is the choice of how the noise
	// is added; absent when there is none (ForTeacher).
	TeacherChoice *TeacherChoice `json:"teacher_choice,omitempty"`
	Committed     int            `json:"committed"`
	Finished      bool           `json:"finished"`
	// Full is true while the coordinator holds as many connections as it
	// admits: a new device would be refused.
	Full    bool `json:"full"`
	Devices struct {
		Connected int `json:"connected"`
		Known     int `json:"known"`
		Eligible  int `json:"eligible"`
		Busy      int `json:"busy"`
		// Left: connected devices that said they stopped (Leave);
		// Stuck: connected devices that did not answer their last
		// rounds and are no longer sampled.
		Left  int `json:"left"`
		Stuck int `json:"stuck"`
	} `json:"devices"`
	MinDevices int `json:"min_devices"`
	// Edges lists the edge processes holding this session's devices
	// (the cluster shape, docs/cluster.md); absent in one process.
	Edges    []EdgeStatus `json:"edges,omitempty"`
	Round    *RoundView   `json:"round,omitempty"`
	LastEval *EvalView    `json:"last_eval,omitempty"`
	// AccuracyNote says in words why the session shows no accuracy
	// (coordinator.NoTestRows for a task without test rows); empty when
	// the class model is tested.
	AccuracyNote string      `json:"accuracy_note,omitempty"`
	Privacy      PrivacyView `json:"privacy"`
	BytesIn      int64       `json:"bytes_in"`
	BytesOut     int64       `json:"bytes_out"`
	LatencyP50Ms float64     `json:"latency_p50_ms"`
	LatencyP99Ms float64     `json:"latency_p99_ms"`
	BadFrames    int64       `json:"bad_frames"`
	// UptimeSec counts from the session's start kept in the store.
	UptimeSec float64 `json:"uptime_s"`
	// Warnings say why the class may not finish the planned rounds
	// (PlanWarnings; filled by /api/status).
	Warnings []string `json:"warnings"`
	// Join: the join URLs and the store-backed summary (coordinator/api,
	// join.go).
	Join JoinView `json:"join"`
	// Title names the task in words (TaskTitle); Notices are Warnings
	// with plain words for the projector; StartedAt is the lesson's
	// start (the teacher's Start; zero before it) and RunningSec how
	// long it has run since, up to its end (coordinator/api, projector.go).
	Title string `json:"title"`
	// Collects says in words what each student's rows hold, for a row
	// task's lobby (TaskCollects); empty for pictures.
	Collects   string    `json:"collects,omitempty"`
	Notices    []Notice  `json:"notices"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	RunningSec float64   `json:"running_s"`
}

// EvalView is one server-side evaluation of the global model: after
// round T, on Samples test samples (a fixed subset of the test set when
// Samples is below its size; 0 in records from before the count was kept).
type EvalView struct {
	T        int     `json:"t"`
	Accuracy float64 `json:"accuracy"`
	Loss     float64 `json:"loss"`
	Samples  int     `json:"samples"`
}

// RoundView is the open round as the dashboard shows it.
type RoundView struct {
	T              int   `json:"t"`
	Cohort         int   `json:"cohort"`
	Received       int   `json:"received"`
	Closed         bool  `json:"closed"`
	DeadlineLeftMs int64 `json:"deadline_left_ms"`
}

// PrivacyView is the dashboard's privacy figures for one device: those
// of plan.SessionFigures at the page's owner delta (plan.DefaultDelta),
// with the text forms every surface prints.
type PrivacyView struct {
	Private bool `json:"private"`
	Trusted bool `json:"trusted"`
	// Protection is whom the figures hold against
	// (plan.Figures.Protection): "device" (everyone, this server
	// included), "server" (everyone but this server, which sees
	// un-noised updates and is bounded by nothing) or "none".
	Protection string `json:"protection"`
	// LastIterate: the figure is a last-iterate charge, proven as
	// Gaussian DP only (its rho is never called zCDP).
	LastIterate bool    `json:"last_iterate,omitempty"`
	RhoPaper    float64 `json:"rho_p,omitempty"`
	// ZCDPRho is the session's per-device budget (the cap of each
	// device's ledger); WorstRho what one device spends at most, in at
	// most WorstReleases releases.
	ZCDPRho       float64 `json:"zcdp_rho,omitempty"`
	WorstRho      float64 `json:"worst_rho,omitempty"`
	WorstReleases int     `json:"worst_releases,omitempty"`
	// Epsilon is WorstRho at Delta (the owner's delta, not the session's;
	// SessionDelta is the delta the session wrote its target at, if any).
	Epsilon      float64 `json:"epsilon,omitempty"`
	Delta        float64 `json:"delta,omitempty"`
	SessionDelta float64 `json:"session_delta,omitempty"`
	EpsilonText  string  `json:"epsilon_text,omitempty"`
	DeltaText    string  `json:"delta_text,omitempty"`
	RhoText      string  `json:"rho_text,omitempty"`
	Text         string  `json:"text"`
	// Shared: a shared-noise session, whose figure is two
	// (plan.Figures.Promise and Floor): PromiseText if the other devices
	// of each round are real (sums of at least Threshold updates, at most
	// Colluders of them this server's), FloorText from a device's own
	// noise alone, if this server ran fake devices. Every other session
	// has one figure, EpsilonText.
	Shared      bool   `json:"shared,omitempty"`
	PromiseText string `json:"promise_text,omitempty"`
	FloorText   string `json:"floor_text,omitempty"`
	Threshold   int    `json:"threshold,omitempty"`
	Colluders   int    `json:"colluders,omitempty"`
	// MaxParticipations is the most committed rounds of the session any
	// one device was included in.
	MaxParticipations int `json:"max_participations"`
}

// SessionPrivacy returns a session's privacy figures as the dashboard
// shows them (plan.SessionFigures at plan.DefaultDelta).
func SessionPrivacy(sess wire.SessionParams) PrivacyView {
	f, err := plan.SessionFigures(sess, plan.DefaultDelta)
	if err != nil {
		return PrivacyView{Text: "figures unavailable: " + err.Error()}
	}
	v := PrivacyView{Private: f.Private, Trusted: f.Trusted, Protection: f.Protection(), LastIterate: f.LastIterate, Text: f.Text()}
	if !f.Private {
		return v
	}
	v.RhoPaper, v.ZCDPRho, v.WorstRho, v.WorstReleases = f.RhoPaper, f.BudgetRho, f.WorstRho, f.WorstReleases
	v.Epsilon, v.Delta, v.SessionDelta = f.Epsilon, f.Delta, f.SessionDelta
	v.EpsilonText, v.DeltaText, v.RhoText = f.EpsilonText(), f.DeltaText(), f.RhoText()
	if f.Shared {
		v.Shared, v.PromiseText, v.FloorText, v.Threshold, v.Colluders = true, f.PromiseText(), f.FloorText(), f.Threshold, f.Colluders
	}
	return v
}

// TeacherChoice is the teacher's choice of how the noise is added (the
// dashboard's lobby form): the ways of learning a teacher may switch
// the next session between (plan.TeacherAlgorithms this server can run)
// and the current session's, "" when it is none of them.
type TeacherChoice struct {
	Algorithms []string `json:"algorithms"`
	Current    string   `json:"current"`
}

// ForTeacher marks s as the teacher's (Teacher: true) and fills what only
// the teacher sees: each person's device id and rejected updates, and
// the choice of the way of learning among algs (none if fewer than
// two).
func (s *Status) ForTeacher(algs []string) {
	s.Teacher = true
	if len(algs) >= 2 {
		s.TeacherChoice = &TeacherChoice{Algorithms: slices.Clone(algs)}
		if slices.Contains(algs, s.Session.Algorithm) {
			s.TeacherChoice.Current = s.Session.Algorithm
		}
	}
	for i := range s.People {
		p := &s.People[i]
		p.Device, p.Rejected, p.Rejection = p.teacher.device, p.teacher.rejected, p.teacher.rejection
	}
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

// JoinView is the "join" part of /api/status: where to join and the
// figures read from the store.
type JoinView struct {
	site.JoinInfo
	LoopbackHint string   `json:"loopback_hint,omitempty"`
	Summary      *Summary `json:"summary,omitempty"`
}

// Notice is a plan warning as /api/status gives it: Words for the
// projector, Text (with the plan's symbols) for its Details.
type Notice struct {
	Kind  string `json:"kind"`
	Words string `json:"words"`
	Text  string `json:"text"`
}

// Activity is the session's current plan and where it stands, as the
// plan warnings (api.PlanWarnings) read it.
type Activity struct {
	// Session is the current plan (sized at Start), not the template.
	Session    wire.SessionParams
	MinDevices int
	Committed  int
	Finished   bool
	// Lobby is true while the session waits for the teacher's Start.
	Lobby bool
	// Active counts the connected devices that can be sampled now or
	// after their current round (not left, not removed, not stuck):
	// the devices that answer. Connected counts every connected device
	// that has not left or been removed, the stuck ones too (they missed
	// their last rounds and are only asked now and then).
	Active, Connected int
	// LeftWhy counts the devices that left saying why (their Leave
	// detail, for example that they have too few rows for one round),
	// by what they said.
	LeftWhy map[string]int
}

// ModelSnapshot is the global model after the last committed round, read
// under one lock with what describes it.
type ModelSnapshot struct {
	// Frame is the model as a wire round frame (X = model); nil before
	// the first commit.
	Frame     []byte
	Committed int
	Finished  bool
	// LastEval is the last server-side evaluation; nil if none.
	LastEval *EvalView
}

// Person is one device as the dashboard lists it: no device id.
type Person struct {
	Nickname string `json:"nickname"`
	// State is "lobby" (connected, waiting for Start), "active"
	// (connected and taking part), "stuck" (connected but not answering
	// its rounds), "left" (said it stopped; Why may say why), "gone"
	// (disconnected) or "removed" (by the teacher).
	State string `json:"state"`
	// Rounds is the number of rounds the device was included in.
	Rounds int    `json:"rounds"`
	Why    string `json:"why,omitempty"`
	// The teacher's view only (Status.ForTeacher; empty otherwise):
	// Device is the device id, for POST /api/teacher/remove; Rejected
	// counts the device's updates that validation rejected and Rejection
	// says, in plain words, why the last one was.
	Device    string `json:"device,omitempty"`
	Rejected  int    `json:"rejected,omitempty"`
	Rejection string `json:"rejection,omitempty"`
	teacher   teacherView
}

// teacherView is what only the teacher sees of a Person.
type teacherView struct {
	device    string
	rejected  int
	rejection string
}

// SetTeacherView records what only the teacher sees of p (filled into
// Device, Rejected and Rejection by Status.ForTeacher): the device id, its
// rejected updates and why the last one was rejected.
func (p *Person) SetTeacherView(device string, rejected int, rejection string) {
	p.teacher = teacherView{device: device, rejected: rejected, rejection: rejection}
}

// EdgeStatus is one edge as the session process sees it (/api/status).
type EdgeStatus struct {
	ID      string `json:"id"`
	Alive   bool   `json:"alive"`
	Devices int    `json:"devices"`
	// SilentMillis is the time since the edge's last message.
	SilentMillis int64 `json:"silent_ms"`
}
