// Package migrations holds the sales database schema, run at start.
package migrations

import "embed"

// FS is every NNNN_name.sql file.
//
//go:embed *.sql
var FS embed.FS
