// Package ui holds the browser device page's vugu v0.4.0 components: the
// root component (consent, data and training screens) and the privacy
// meter. The .vugu files are the source; *_gen.go are generated with
//
//	go generate ./wasm/ui   (go run github.com/vugu/vugu/cmd/vugugen)
//
// The package is portable Go (vugu's js package has a non-browser twin),
// so it builds natively and is tested with vugu's static renderer.
//
// Invariants:
//   - Components only read State; every change goes through a Controller
//     method (called with the vugu event lock held) or through the
//     controller's own goroutines under that lock.
//   - The privacy meter states epsilon at the owner's delta (never the
//     session's) from the device's own ledger plus what the owner's data
//     spent before, and says what the number means.
package ui
