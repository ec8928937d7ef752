// Package migrations holds the partners database schema, run at start.
package migrations

import "embed"

// FS is every NNNN_name.sql file.
//
//go:embed *.sql
var FS embed.FS
