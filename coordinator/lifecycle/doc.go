// Package lifecycle holds a session's phase (Lobby, Running, Paused,
// Ended) for the session core, and the record of it the store keeps
// (Record: the state, the final parameters once started, and who took
// part once it ended). A Phase is guarded by the coordinator's lock; the
// round loop waits on it in the lobby and while paused (WaitWhile), and
// its Done channel cuts the open round short when the teacher ends the
// session.
package lifecycle
