// Package site is what the coordinator's HTTP side serves that knows no
// session: the device page and its assets (content-hashed names,
// compressed once: Assets, RegisterAssets), the projector dashboard's
// files (RegisterDashboard), the headers every response carries and the
// pages' Content-Security-Policies (SecurityHeaders, PageCSP,
// WorkerCSP), where devices join (JoinURLs over the machine's addresses,
// their QR codes), the /api/model.json document (ModelJSON,
// ValidateModelJSON) and the /metrics token off loopback
// (MetricsTokenFor).
//
// It imports nothing of the coordinator: the session core (package
// coordinator) and the edge build their handlers over it
// (docs/design.md, "Layout").
package site
