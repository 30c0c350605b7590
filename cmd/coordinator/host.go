package main

import (
	"log/slog"
	"runtime/debug"

	"browserfl/coordinator/edge"
	"browserfl/coordinator/sessions"
	"browserfl/coordinator/shards"
	"browserfl/coordinator/site"
)

// openHost loads o's task, assembles its session, its evaluation and
// its demo shards, and opens the host of its sessions (the store in
// o.DataDir) serving assets. closeAll releases the session process's
// NATS (-role session) and the task's files after the host has stopped.
func openHost(o options, assets site.Assets, log *slog.Logger) (host *sessions.Host, set *shards.Set, closeAll func(), err error) {
	closeAll = func() {}
	deadline, gap, err := o.rounds()
	if err != nil {
		return nil, nil, closeAll, err
	}
	td, err := loadTask(o)
	if err != nil {
		return nil, nil, closeAll, err
	}
	if td.close != nil {
		// The sets' files outlive the host: it serves demo shards
		// until it stops.
		defer func() {
			if err != nil {
				td.close()
				return
			}
			prev := closeAll
			closeAll = func() { prev(); td.close() }
		}()
	}
	if o.DatasetDir == "none" {
		o.DemoShards, o.EvalEvery = -1, 0
	}
	a, err := assembleSession(o, td, deadline)
	if err != nil {
		return nil, nil, closeAll, err
	}
	evalSet, err := evalSet(o, a, td, log)
	if err != nil {
		return nil, nil, closeAll, err
	}
	// The shards size themselves by the rounds the current session has
	// left; the host exists only below.
	set, err = demoShards(o, a, td, func() int { return host.Current().Committed() }, log)
	if err != nil {
		return nil, nil, closeAll, err
	}
	// Loading made garbage (the text task reads five word lists, about
	// 270 MB allocated in strings and maps, and encodes every row once
	// to check it): give it back to the system now rather than when the
	// collector's background scavenger gets to it.
	debug.FreeOSMemory()
	hcfg := sessions.Config{Dir: o.DataDir, Template: template(o, a, gap, evalSet, log), JoinCode: o.JoinCode, Seed: o.Seed,
		JoinCodeLength: o.JoinCodeLength, Fresh: o.Reset, Logger: log, Shards: set, Assets: assets,
		NoTeacherChoice: !o.TeacherChoice}
	if o.Role == "session" {
		if err := edge.CheckSession(a.sess); err != nil {
			return nil, nil, closeAll, err
		}
		attach, closeN, err := sessionNode(o, log)
		if err != nil {
			return nil, nil, closeAll, err
		}
		closeAll = closeN
		hcfg.Attach = attach
		// A teacher's new session must run behind the edges too.
		hcfg.CheckSession = edge.CheckSession
	}
	if o.RollbackTo >= 0 {
		hcfg.Prepare = o.rollBack(log)
	}
	if host, err = sessions.Open(hcfg); err != nil {
		closeAll()
		return nil, nil, func() {}, err
	}
	return host, set, closeAll, nil
}
