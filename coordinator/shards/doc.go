// Package shards hands out the demo's data shards to pages: non-IID
// (Dirichlet label skew) slices of a training set, one per page, sized for
// the rounds the page can still be asked in, kept stable for a page that
// comes back with its cookie and bounded in number (Config.Max). It is
// demo support only: in a real deployment the data is on the device.
package shards
