// Package netcheck holds the network data-path checks, one per file.
// Each registers itself with package check in init.
package netcheck
