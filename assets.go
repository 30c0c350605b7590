package browserfl

import _ "embed" // for IndexHTML

// IndexHTML is the page every device opens (served at /); it loads
// /web/app.js, which starts /web/app.wasm. See package browserfl/web.
//
//go:embed index.html
var IndexHTML []byte
