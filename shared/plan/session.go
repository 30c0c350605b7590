package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/task"
	"browserfl/shared/wire"
)

// ErrTaskMismatch is wrapped when a session's task definition disagrees
// with the dimensions or class names it announces.
var ErrTaskMismatch = errors.New("session: task does not match the session")

// SessionTask returns the task definition a session carries (nil for a
// picture session, whose Task is empty). It is the one reading of
// wire.SessionParams.Task: the definition is parsed strictly
// (task.Parse), and the session's Features, Classes, Model and Labels must
// be exactly what the task gives, so that a coordinator cannot announce
// one shape and ship rows of another.
func SessionTask(s wire.SessionParams) (*task.Definition, error) {
	if len(s.Task) == 0 {
		return nil, nil
	}
	d, err := task.Parse([]byte(s.Task))
	if err != nil {
		return nil, fmt.Errorf("session task: %w", err)
	}
	labels := strings.Join(d.Label.Values, ",")
	switch {
	case s.Features != d.Dim():
		return nil, fmt.Errorf("%w: %d features announced, the task encodes %d", ErrTaskMismatch, s.Features, d.Dim())
	case s.Classes != d.Classes():
		return nil, fmt.Errorf("%w: %d classes announced, the task has %d", ErrTaskMismatch, s.Classes, d.Classes())
	case s.Model != d.Model:
		return nil, fmt.Errorf("%w: model %q announced, the task names %q", ErrTaskMismatch, s.Model, d.Model)
	case s.Labels != labels:
		return nil, fmt.Errorf("%w: labels %q announced, the task's are %q", ErrTaskMismatch, s.Labels, labels)
	}
	return d, nil
}

// ErrAlgorithmChoice is wrapped by WithAlgorithm's refusals: a way of
// learning a teacher may not switch the session to.
var ErrAlgorithmChoice = errors.New("not a way of learning this session can switch to")

// TeacherAlgorithms are the ways of learning a teacher may switch a
// session between (the dashboard's choice): the two in which every page
// adds noise before anything leaves it, alone ("nc") or as its share of
// the cohort's under secure aggregation (wire.SharedNoiseAlgorithm).
func TeacherAlgorithms() []string { return []string{"nc", wire.SharedNoiseAlgorithm} }

// WithAlgorithm returns s run by algorithm alg, keeping everything else:
// both s's algorithm and alg must be TeacherAlgorithms (a teacher may
// not move a session to a server the operator did not trust, nor away
// from one the operator chose); a shared-noise session gets the default
// threshold and no colluders (wire.SessionParams.Threshold,
// Colluders), the other loses them. The result is checked as a device
// checks it (a shared-noise session's secure aggregation included:
// SessionSecAgg). alg == s.Algorithm returns s as it is.
func WithAlgorithm(s wire.SessionParams, alg string) (wire.SessionParams, error) {
	if alg == s.Algorithm {
		return s, nil
	}
	if !slices.Contains(TeacherAlgorithms(), s.Algorithm) || !slices.Contains(TeacherAlgorithms(), alg) {
		return s, fmt.Errorf("%w: %q from %q (a teacher chooses between %s)", ErrAlgorithmChoice, alg, s.Algorithm,
			strings.Join(TeacherAlgorithms(), " and "))
	}
	out := s
	out.Algorithm, out.Threshold, out.Colluders = alg, 0, 0
	if err := algo.Validate(out); err != nil {
		return s, fmt.Errorf("%s: %w", alg, err)
	}
	out.Trusted = algo.Trusted(out)
	if err := wire.ValidateSession(out); err != nil {
		return s, err
	}
	if alg == wire.SharedNoiseAlgorithm {
		if _, err := SessionSecAgg(out); err != nil {
			return s, err
		}
	}
	return out, nil
}

// MaxTaskModelDim bounds the parameters of a task's model: 2.6 times
// the largest built-in session's (the pictures' network, 50,890), so that
// a task cannot make every round's frames and the store's records
// hundreds of times larger (an mlp on 65,536 features has 4.2 million).
const MaxTaskModelDim = 1 << 17

// WithTask returns s made into a session of task d: its model, shape,
// labels and definition (Task) come from d, a picture transform goes
// (Transform), the demo data and its
// evaluation go (the host's data are another task's), and so does the
// signal bound (it assumes demo data); the task's
// privacy defaults, when it states them, replace s's target (epsilon
// at the task's delta, or DefaultDelta). The result is checked as a
// device checks it (SessionTask, Validate, and the algorithm's own
// check).
func WithTask(s wire.SessionParams, d *task.Definition) (wire.SessionParams, error) {
	if err := d.Validate(); err != nil {
		return s, err
	}
	// json.Marshal's form, escapes of <, > and & (six bytes each)
	// included: sessions stored before are compared with it at restart,
	// and devices hold it.
	raw, err := json.Marshal(d)
	if err != nil {
		return s, fmt.Errorf("task %s: %w", d.Name, err)
	}
	if len(raw) > wire.MaxTaskLen {
		return s, fmt.Errorf("task %s: %w: %d bytes once written into the session (<, > and & take 6 each), at most %d", d.Name, task.ErrInvalid, len(raw), wire.MaxTaskLen)
	}
	mdl, err := model.New(d.Model, d.Dim(), d.Classes())
	if err != nil {
		return s, fmt.Errorf("task %s: %w", d.Name, err)
	}
	if mdl.Dim() > MaxTaskModelDim {
		return s, fmt.Errorf("task %s: %w: the model %s of %d features and %d answers has %d parameters, at most %d (fewer buckets or features, or the model logreg)",
			d.Name, task.ErrInvalid, d.Model, d.Dim(), d.Classes(), mdl.Dim(), MaxTaskModelDim)
	}
	s.Model, s.Features, s.Classes, s.Dim = d.Model, d.Dim(), d.Classes(), mdl.Dim()
	s.Labels, s.Task, s.DemoShards = strings.Join(d.Label.Values, ","), string(raw), false
	s.Transform = "" // the features of pictures (SessionFeatures): a task's rows are not pictures
	// The signal bound assumes every device trains on demo shards dealt
	// nearly iid (docs/security.md); a task's rows are the students' own.
	s.SignalBound = 0
	if e := d.Privacy.Epsilon; e > 0 {
		s.Rho, s.Epsilon, s.Delta = 0, e, d.Privacy.Delta
		if s.Delta == 0 {
			s.Delta = DefaultDelta
		}
	}
	if err := wire.ValidateSession(s); err != nil {
		return s, fmt.Errorf("task %s: %w: %w", d.Name, task.ErrInvalid, err)
	}
	if err := algo.Validate(s); err != nil {
		return s, fmt.Errorf("task %s: %w", d.Name, err)
	}
	if _, err := SessionTask(s); err != nil {
		return s, err
	}
	return s, nil
}
