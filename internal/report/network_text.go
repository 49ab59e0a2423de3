package report

// writeNetworkText prints the network model. Filled in by the network issue.
func writeNetworkText(t *textWriter, r *Report) {
	if r.Network == nil {
		return
	}
	t.heading("Network")
}
