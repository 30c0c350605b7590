// Package gate decides who may knock on the coordinator and how often,
// before anything a device says reaches a session: join codes (compared
// normalised and in constant time, with a per-address backoff and a
// global budget of wrong codes), teacher secrets (the same backoff,
// recorded apart), new registrations (per-address and global token
// buckets), connections that have not said hello yet, the table of
// devices without a connection, and the client address all of these
// are keyed on (behind trusted reverse proxies: ParseTrustedProxies), and
// the nicknames shown on the projector (NormalizeNickname keeps them in
// NFKC form; NicknameSkeleton is what two names that look alike share).
//
// State is safe for concurrent use; its per-address tables are bounded
// (Config.MaxAddresses) so that a flood of addresses cannot grow them.
// The package knows no session, connection or protocol message beyond
// the join code's normal form (shared/wire): its callers (the session
// core, an edge) apply its verdicts.
package gate
