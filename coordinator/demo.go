package coordinator

import "browserfl/coordinator/shards"

// shardCookie names the cookie that keeps a browser on its demo shard
// (http.go's handlers have a local variable named shards).
const shardCookie = shards.Cookie
