//go:build js && wasm

package cputime

import "syscall/js"

// CPU is node's process CPU time (user + system, process.cpuUsage) in
// ns: the whole process, so V8's compiler and GC threads count against
// the WebAssembly side (a conservative figure).
func CPU() int64 {
	u := js.Global().Get("process").Call("cpuUsage")
	return int64(u.Get("user").Float()+u.Get("system").Float()) * 1000
}

// Process is CPU: WebAssembly runs on one thread.
func Process() int64 { return CPU() }
