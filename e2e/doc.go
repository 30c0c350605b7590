// Package e2e holds the end-to-end tests of the browser device: they
// build the WebAssembly page (GOOS=js GOARCH=wasm) into a temporary
// directory, serve it next to a coordinator, and drive Debian's headless
// Chromium with chromedp, one user-data-dir per page.
//
// What the tests observe they observe from outside the page: every
// outgoing websocket frame through the DevTools protocol
// (Network.webSocketFrameSent), long tasks through the Long Tasks API,
// page readiness through performance marks set by the page.
//
// The tests need /usr/bin/chromium (scripts/setup.sh --browser installs
// it) and take about a minute on two cores.
package e2e
