package fix

import "fmt"

// FixturePlan is fixturePlan for the external tests (marker_test.go is in
// package fix_test: it collects through internal/collect/host, which reads
// fix's state through fix/fixstate, so an internal test would import fix
// twice).
var FixturePlan = fixturePlan

// MarkerLines are the marker's setting line and fix line, at time at, for
// a ring step of the finding id on subject, for FuzzMarkerLines.
func MarkerLines(id, iface string, rx uint32, subject string, at int64) []string {
	setting, fix := markerLines(nodeStep{Step: Step{Change: Ring{Interface: iface, RX: rx}}, ID: id, Subject: subject})
	return []string{setting, fmt.Sprintf("fix %d %s", at, fix)}
}
