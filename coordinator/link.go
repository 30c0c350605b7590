package coordinator

import "browserfl/coordinator/roster"

// Link is a device's connection as the round logic sees it (roster.Link):
// a websocket this process holds (*wsconn.Conn), or one an edge process
// holds for it (a session node's remote link, coordinator/sessionnode).
type Link = roster.Link
