package fix

// FixturePlan is fixturePlan for the external tests (marker_test.go is in
// package fix_test: it collects through internal/collect/host, which reads
// fix's state through fix/fixstate, so an internal test would import fix
// twice).
var FixturePlan = fixturePlan

// MarkerFixLine is the marker's fix line for a sysctl step of the finding
// id on subject, for FuzzMarkerFixLine.
func MarkerFixLine(id, key string, to int64, subject string) string {
	return fixLine(nodeStep{Step: Step{Change: Sysctl{Key: key, To: to}}, ID: id, Subject: subject})
}
