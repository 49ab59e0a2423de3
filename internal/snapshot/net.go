package snapshot

// Net is what the network collectors read. Owned by the network collectors
// (internal/collect/network); see docs/snapshot.md.
type Net struct {
}
