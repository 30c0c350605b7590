//go:build js && wasm

package plan

import "syscall/js"

// cpuNow is node's process CPU time (user + system, process.cpuUsage) in
// ns: the whole process, so V8's compiler and GC threads count against
// the WebAssembly side (a conservative figure).
func cpuNow() int64 {
	u := js.Global().Get("process").Call("cpuUsage")
	return int64(u.Get("user").Float()+u.Get("system").Float()) * 1000
}

// processCPU is the same: WebAssembly runs on one thread.
func processCPU() int64 { return cpuNow() }
