// Package browserfl is private federated learning that runs in the browser:
// a Go coordinator, devices that run the same Go code compiled to
// WebAssembly, and an offline simulator. See README.md and docs/.
package browserfl
