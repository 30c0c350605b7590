package device

import (
	crand "crypto/rand"
	"fmt"

	"browserfl/shared/model"
	"browserfl/shared/optim"
)

// DefaultNewDevice builds the device half of p.Algorithm from the
// shared/optim registry, with the session's model and crypto/rand as the
// noise seed source (crypto.getRandomValues in the browser).
func DefaultNewDevice(p optim.Params) (optim.Device, error) {
	m, err := model.New(p.Model, p.Features, p.Classes)
	if err != nil {
		return nil, fmt.Errorf("device: model: %w", err)
	}
	return optim.NewDevice(p, m, crand.Reader)
}
