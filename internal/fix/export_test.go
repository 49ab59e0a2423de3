package fix

// FixturePlan is fixturePlan for the external tests (marker_test.go is in
// package fix_test: it collects through internal/collect/host, which reads
// fix's state through fix/fixstate, so an internal test would import fix
// twice).
var FixturePlan = fixturePlan
