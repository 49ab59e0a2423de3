// Package storagecheck holds the storage and encryption checks, one per file.
// Each registers itself with package check in init.
package storagecheck
