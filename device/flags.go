package device

import (
	"errors"
	"flag"

	"browserfl/shared/plan"
)

// PolicyFlags registers the owner's policy flags on fs (-budget,
// -budget-delta, -floor-budget, -unlimited, -allow-trusted,
// -allow-nonprivate) with the
// page's defaults: a budget of plan.DefaultBudgetEpsilon at
// plan.DefaultDelta, trusted-server and non-private sessions refused.
// Call the returned function after fs.Parse.
func PolicyFlags(fs *flag.FlagSet) func() (Policy, error) {
	eps := fs.Float64("budget", plan.DefaultBudgetEpsilon, "owner's privacy budget: the most epsilon this device may spend, at -budget-delta (must be > 0; see -unlimited)")
	delta := fs.Float64("budget-delta", plan.DefaultDelta, "the owner's delta at which -budget is read (a session's own delta is never used)")
	floor := fs.Float64("floor-budget", 0, "the most epsilon a shared-noise session's floor may reach (this device's own noise alone, if the coordinator ran fake devices), at -budget-delta; 0: plan.DefaultFloorRatio times -budget")
	unlimited := fs.Bool("unlimited", false, "no owner budget: accept whatever a private session costs")
	trusted := fs.Bool("allow-trusted", false, "join trusted-server sessions (clipped, un-noised updates)")
	nonPrivate := fs.Bool("allow-nonprivate", false, "join sessions without a privacy guarantee")
	return func() (Policy, error) {
		pol := Policy{AllowTrusted: *trusted, AllowNonPrivate: *nonPrivate, Unlimited: *unlimited}
		if *unlimited {
			return pol, nil
		}
		if !(*eps > 0) {
			return Policy{}, errors.New("-budget must be > 0 (-unlimited removes the owner's budget)")
		}
		pol.Budget = plan.Budget{Epsilon: *eps, Delta: *delta, Floor: *floor}
		if err := pol.Budget.Validate(); err != nil {
			return Policy{}, err
		}
		return pol, nil
	}
}

// SetPolicy copies pol into the configuration.
func (cfg *Config) SetPolicy(pol Policy) {
	cfg.Budget, cfg.Spent, cfg.Unlimited = pol.Budget, pol.Spent, pol.Unlimited
	cfg.AllowTrusted, cfg.AllowNonPrivate = pol.AllowTrusted, pol.AllowNonPrivate
}
