package device

import (
	"context"
	"strings"
	"testing"

	"browserfl/shared/optim"
)

// hiding wraps a device half and hides every interface but optim.Device,
// as a careless wrapper would (the page's yielding once did).
type hiding struct{ optim.Device }

// A device of an algorithm that keeps a local set (soteria-svrg) is
// handed the set at setup; a wrapper that hides SetLocalData is refused
// there, with words, instead of failing at the first round.
func TestSetupNeedsLocalDataSetter(t *testing.T) {
	s := demoSession()
	s.Algorithm, s.LocalSize, s.Batch = "soteria-svrg", 64, 8
	for _, tc := range []struct {
		name string
		wrap func(optim.Device) optim.Device
		want string // "" = accepted
	}{
		{"the device itself", func(d optim.Device) optim.Device { return d }, ""},
		{"a hiding wrapper", func(d optim.Device) optim.Device { return hiding{d} }, "keeps a local data set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(context.Background(), Config{URL: "ws://127.0.0.1:1/never", JoinCode: "c", Storage: &MemStorage{}, Data: images(64), Unlimited: true,
				NewDevice: func(p optim.Params) (optim.Device, error) {
					d, err := DefaultNewDevice(p)
					if err != nil {
						return nil, err
					}
					return tc.wrap(d), nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			err = rt.setup(s)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("setup: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("setup: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
