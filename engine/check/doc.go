// Package check is the round engine's check stage (package engine): the
// server's tests of one decoded message (Gate: plausible.Checker, or the norm
// bound alone for research runs) and the server's record of each device
// they read (History). A shell keeps one History with each device it
// knows (the coordinator with its device record, an edge per device it
// has asked, the simulator per device) and changes it only through its
// methods, so what an ask, an inclusion, or an inclusion the shell did
// not see does to it has one home.
//
// It is apart from the round loop so that a process that checks messages
// for a round run elsewhere (the cluster shape's edge) runs the same
// check without the loop. Like the engine it is pure: no goroutines, no
// I/O, no clock.
package check
