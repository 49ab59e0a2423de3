package storagecheck

import "github.com/slowpath/slowpath/internal/snapshot"

// CryptHost is a test host with one dm-crypt layer of the table params,
// for the external tests that analyse it whole (through analyze, which
// imports this package).
func CryptHost(params string) *snapshot.Snapshot {
	return host{crypt: []string{params}}.snapshot()
}
