// Package sessionflag declares the command-line flags of a training
// session's parameters (shared/session.Params) once, for every command
// that takes them: cmd/coordinator, cmd/flsim, cmd/flplan, cmd/flaudit
// and cmd/flattack.
//
// Each flag is declared once, in one table: its name, its usage text and
// the field of Params it sets. A command registers on its own
// *flag.FlagSet, bound to its own *session.Params, only the flags it uses
// (Register), and may register one under the name it has always used
// (Flag.As: flplan's -alg, flaudit's -K and -E). A flag's default is the
// value the field holds when it is registered: a command states its
// defaults by filling its Params first, so that -h shows them.
//
// The names are the papers' symbols where the papers name the parameter
// (-M, -m, -T, -b, -D, -G, -L, -rho), else the field's JSON name with
// dashes for underscores (-signal-bound, -local-steps, -transform).
package sessionflag

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"browserfl/shared/model"
	"browserfl/shared/optim/algo"
	"browserfl/shared/session"
)

// decl is the one declaration of a session flag.
type decl struct {
	name  string // the flag's name
	key   string // the field's JSON name (the protocol's)
	usage string
	field func(*session.Params) any // a pointer to the field: *string, *int or *float64
}

// decls are the session's flags, in the order -h lists them.
var decls = []decl{
	{"name", "name", "session name", func(p *session.Params) any { return &p.Name }},
	{"algorithm", "algorithm", "algorithm: " + strings.Join(algo.Names(), ", "), func(p *session.Params) any { return &p.Algorithm }},
	{"model", "model", "model: " + strings.Join(model.Names(), ", ") + " (logreg-unit: logreg on inputs scaled to norm 1, what local needs for output perturbation)", func(p *session.Params) any { return &p.Model }},
	{"features", "features", "the model's input features (Fashion-MNIST: 784); with -classes it sets the model's dimension", func(p *session.Params) any { return &p.Features }},
	{"classes", "classes", "the model's classes (Fashion-MNIST: 10)", func(p *session.Params) any { return &p.Classes }},
	{"transform", "transform", "features the model reads, computed by every device from each of its own pictures: \"\" = the pixels; scatter = the scattering transform, J = 2, L = 8, 3,969 features with per-picture normalisation (docs/features.md)", func(p *session.Params) any { return &p.Transform }},
	{"M", "M", "devices in the session M", func(p *session.Params) any { return &p.M }},
	{"m", "cohort", "devices per round m (cohort size)", func(p *session.Params) any { return &p.Cohort }},
	{"T", "rounds", "rounds T (at most 1,000,000)", func(p *session.Params) any { return &p.Rounds }},
	{"b", "batch", "samples per device per round b", func(p *session.Params) any { return &p.Batch }},
	{"max-releases", "max_releases", "the most releases one device makes (0 = T); the noise is calibrated to it and devices refuse beyond it", func(p *session.Params) any { return &p.MaxReleases }},
	{"rho", "rho_p", "privacy target: the papers' rho_p (each device rho_p^2/2-zCDP)", func(p *session.Params) any { return &p.Rho }},
	{"epsilon", "epsilon", "privacy target: epsilon per device (with -delta, instead of -rho)", func(p *session.Params) any { return &p.Epsilon }},
	{"delta", "delta", "privacy target: delta per device (with -epsilon)", func(p *session.Params) any { return &p.Delta }},
	{"clip", "clip", "per-sample L2 clipping bound S (0 = G + 2LD)", func(p *session.Params) any { return &p.Clip }},
	{"G", "G", "Lipschitz constant G (used when -clip 0)", func(p *session.Params) any { return &p.G }},
	{"L", "L", "smoothness constant L (used when -clip 0)", func(p *session.Params) any { return &p.L }},
	{"D", "diameter", "diameter of the feasible ball (0 = unconstrained)", func(p *session.Params) any { return &p.Diameter }},
	{"eta", "eta", "step size eta", func(p *session.Params) any { return &p.Eta }},
	{"compressor", "compressor", "uplink compressor spec (shared/mechanism: none, randk:FRAC, topk:FRAC, quant:BITSbit, ef+...; default dense float32)", func(p *session.Params) any { return &p.Compressor }},
	{"signal-bound", "signal_bound", "assumed signal bound D (0 = none): the server's running-sum tests hold any n included updates of a device to S + (n-1) D before noise, refusing a device that pushes one way round after round (docs/security.md, \"An assumed signal bound\")", func(p *session.Params) any { return &p.SignalBound }},
	{"threshold", "threshold", "shared: the fewest updates a round's secure aggregation may sum, t (0 = ceil(0.7 m)); a round with fewer is discarded, and each device's noise is a share sized for t - c survivors (docs/privacy.md, \"Shared noise\")", func(p *session.Params) any { return &p.Threshold }},
	{"colluders", "colluders", "shared: the most cohort members assumed to side with the server, c (c < t)", func(p *session.Params) any { return &p.Colluders }},
	{"local-size", "local_size", "SVRG/SAGA local dataset size", func(p *session.Params) any { return &p.LocalSize }},
	{"local-steps", "local_steps", "local: hidden local steps K per round, each on b/K of the round's b samples (0 = b)", func(p *session.Params) any { return &p.LocalSteps }},
	{"local-epochs", "local_epochs", "local: passes E over the round's K step batches (E K hidden steps; 0 = 1); when the model certifies it (logreg-unit, clip >= 2, eta <= 2, no -D) the steps are noiseless and the last iterate gets one noise vector (output perturbation, one step's charge), else every step is noisy and E passes cost E steps", func(p *session.Params) any { return &p.LocalEpochs }},
}

// Names returns the names of the session's flags, in declaration order.
func Names() []string {
	out := make([]string, len(decls))
	for i, d := range decls {
		out[i] = d.name
	}
	return out
}

// Flag is a session flag as one command registers it.
type Flag struct {
	// Name is the session flag's name (Names).
	Name string
	// As is the name the command gives it ("" = Name): the name its
	// scripts and docs have always used.
	As string
	// Note is appended to the usage text: what the command does with
	// the flag beyond setting the field ("" = nothing).
	Note string
}

// Register defines the session flags names on fs, each bound to its
// field of *p with the field's current value as default.
func Register(fs *flag.FlagSet, p *session.Params, names ...string) {
	flags := make([]Flag, len(names))
	for i, n := range names {
		flags[i] = Flag{Name: n}
	}
	RegisterFlags(fs, p, flags...)
}

// RegisterFlags defines flags on fs, each bound to its field of *p with
// the field's current value as default. A name that is not a session
// flag is a programming error: it panics, as fs does on a flag defined
// twice.
func RegisterFlags(fs *flag.FlagSet, p *session.Params, flags ...Flag) {
	for _, f := range flags {
		i := slices.IndexFunc(decls, func(d decl) bool { return d.name == f.Name })
		if i < 0 {
			panic(fmt.Sprintf("sessionflag: %q is not a session flag (%s)", f.Name, strings.Join(Names(), ", ")))
		}
		d := decls[i]
		name, usage := d.name, d.usage
		if f.As != "" {
			name = f.As
		}
		if f.Note != "" {
			usage += "; " + f.Note
		}
		switch v := d.field(p).(type) {
		case *string:
			fs.StringVar(v, name, *v, usage)
		case *int:
			fs.IntVar(v, name, *v, usage)
		case *float64:
			fs.Float64Var(v, name, *v, usage)
		default:
			panic(fmt.Sprintf("sessionflag: -%s: field of type %T", d.name, v))
		}
	}
}

// targetFlags are the flags of a session's privacy target, which a task
// that states its own target replaces.
var targetFlags = []string{"rho", "epsilon", "delta", "sigma"}

// TaskTargetClash refuses a privacy target given beside a task that
// states its own (epsilon > 0; plan.WithTask takes the task's): given
// reports whether a flag was set (on the command line, or, for the
// coordinator, in its environment or config file). It returns nil when
// the task states no target or none of targetFlags was given.
func TaskTargetClash(taskName string, epsilon float64, given func(name string) bool) error {
	if epsilon <= 0 {
		return nil
	}
	for _, f := range targetFlags {
		if given(f) {
			return fmt.Errorf("-%s: the task %s sets the privacy target (epsilon %g)", f, taskName, epsilon)
		}
	}
	return nil
}
