package durable

import (
	"context"
	"fmt"
)

// Every table lensgate keeps beside River's, in one place, and the migrations that bring a
// database to schemaVersion. A database records its version in lensgate_schema; Open applies
// the migrations it lacks in one transaction under the migration lock, so replicas starting
// together migrate once, and every store over the queue's database (check records, write
// slots, the token ledger, organisation-configuration absences) finds its table there.
//
// Release a schema change as a new migration at the end of migrations; never edit one that
// has been released, since databases that ran it will not run it again. Every statement is
// idempotent (IF NOT EXISTS, a column added only when missing), because databases created
// before the version table existed start at version 0 with some tables already there.

// schemaVersion is the version a database has once Open has migrated it.
var schemaVersion = migrations[len(migrations)-1].version

// migration is one released step of the schema.
type migration struct {
	version int
	name    string
	// statements run in order; backend is "postgres" or "sqlite".
	statements func(backend string) []string
	// columns are added to existing tables when missing.
	columns []column
}

type column struct{ table, name, definition string }

var migrations = []migration{
	{version: 1, name: "lensgate tables", statements: func(backend string) []string {
		return concat(queueTables, checkTables, orgConfigTables, slotTables, tokenTables, []string{waitingIndex(backend)})
	}},
	{version: 2, name: "lensgate_subject.head_received_ns", columns: []column{
		// When the newest event naming the subject's head was received (UnixNano, the receiving
		// replica's clock): an event received earlier for another head is older news.
		{"lensgate_subject", "head_received_ns", "BIGINT NOT NULL DEFAULT 0"},
	}},
	{version: 3, name: "lensgate_feedback and lensgate_quality_event", statements: func(string) []string {
		return feedbackTables
	}},
}

// queueTables are the tables the queue keeps beside River's: accepted delivery ids
// (redelivery detection), the newest job per subject (supersession) and the leases of running
// jobs (crash recovery).
var queueTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_delivery (
		delivery_id TEXT PRIMARY KEY,
		subject_key TEXT NOT NULL,
		received_at BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_delivery_received_at ON lensgate_delivery (received_at)`,
	// Digests of accepted webhook bodies (hex SHA-256 naming the event and its body) with the delivery id
	// they came under: the same body under another id is a replay (replica-wide).
	`CREATE TABLE IF NOT EXISTS lensgate_body (
		digest TEXT PRIMARY KEY,
		delivery_id TEXT NOT NULL,
		received_at BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_body_received_at ON lensgate_body (received_at)`,
	`CREATE TABLE IF NOT EXISTS lensgate_subject (
		subject_key TEXT PRIMARY KEY,
		head_sha TEXT NOT NULL,
		job_id BIGINT NOT NULL,
		updated_at BIGINT NOT NULL
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_subject_updated_at ON lensgate_subject (updated_at)`,
	// Heads whose review began and has not completed: their gate check may still be open, and
	// the subject's next job concludes it.
	`CREATE TABLE IF NOT EXISTS lensgate_begun (
		subject_key TEXT NOT NULL,
		head_sha TEXT NOT NULL,
		begun_at BIGINT NOT NULL,
		PRIMARY KEY (subject_key, head_sha)
	)`,
	// One row per running review attempt, renewed by its worker (milliseconds, database clock).
	`CREATE TABLE IF NOT EXISTS lensgate_lease (
		job_id BIGINT PRIMARY KEY,
		client_id TEXT NOT NULL,
		renewed_at BIGINT NOT NULL
	)`,
}

// checkTables are the gate check records' table: one row per App, repository, head and check
// name, written by whichever replica wrote the run last.
var checkTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_check (
		app_id BIGINT NOT NULL,
		repo TEXT NOT NULL,
		head_sha TEXT NOT NULL,
		name TEXT NOT NULL,
		check_id BIGINT NOT NULL,
		status TEXT NOT NULL,
		title TEXT NOT NULL,
		annotations BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (app_id, repo, head_sha, name)
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_check_updated_at ON lensgate_check (updated_at)`,
}

// orgConfigTables are the table of owners known to have no organisation configuration: one row
// per installation and owner, until when the absence holds.
var orgConfigTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_org_config_absent (
		installation_id BIGINT NOT NULL,
		owner TEXT NOT NULL,
		until_ms BIGINT NOT NULL,
		PRIMARY KEY (installation_id, owner)
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_org_config_absent_until ON lensgate_org_config_absent (until_ms)`,
}

// slotTables are the write slots' table: one row per installation that wrote content.
var slotTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_write_slot (
		installation_id BIGINT PRIMARY KEY,
		free_at BIGINT NOT NULL,
		holder TEXT NOT NULL
	)`,
}

// tokenTables are the daily token ledger's table: one row per installation and UTC day.
var tokenTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_token_day (
		installation_id BIGINT NOT NULL,
		day TEXT NOT NULL,
		used BIGINT NOT NULL,
		updated_at BIGINT NOT NULL,
		PRIMARY KEY (installation_id, day)
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_token_day_day ON lensgate_token_day (day)`,
}

// feedbackTables are each repository's feedback on findings (what suppresses later findings
// like them) and the events the quality figures count, one row per repository, pull request,
// finding and kind (and person, for feedback). Both are pruned by age; feedback is also bounded
// per repository.
var feedbackTables = []string{
	`CREATE TABLE IF NOT EXISTS lensgate_feedback (
		repo TEXT NOT NULL,
		number BIGINT NOT NULL,
		finding_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		by_login TEXT NOT NULL,
		lens TEXT NOT NULL,
		rule TEXT NOT NULL,
		path TEXT NOT NULL,
		text TEXT NOT NULL,
		reason TEXT NOT NULL,
		at_ms BIGINT NOT NULL,
		PRIMARY KEY (repo, number, finding_id, kind, by_login)
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_feedback_repo_at ON lensgate_feedback (repo, at_ms)`,
	`CREATE TABLE IF NOT EXISTS lensgate_quality_event (
		repo TEXT NOT NULL,
		number BIGINT NOT NULL,
		finding_id TEXT NOT NULL,
		kind TEXT NOT NULL,
		lens TEXT NOT NULL,
		at_ms BIGINT NOT NULL,
		PRIMARY KEY (repo, number, finding_id, kind)
	)`,
	`CREATE INDEX IF NOT EXISTS lensgate_quality_event_at ON lensgate_quality_event (at_ms)`,
}

func concat(lists ...[]string) []string {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

const sqlSchemaTable = `CREATE TABLE IF NOT EXISTS lensgate_schema (
	version INTEGER PRIMARY KEY,
	name TEXT NOT NULL,
	applied_at BIGINT NOT NULL
)`

// migrateSchema brings the database to schemaVersion inside tx, which holds the migration lock.
// It returns the version the database had.
func migrateSchema[TTx any](ctx context.Context, db database[TTx], tx TTx, backend string, nowMS int64) (int, error) {
	if _, err := db.exec(ctx, tx, sqlSchemaTable); err != nil {
		return 0, fmt.Errorf("schema version table: %w", err)
	}
	var had int64
	if err := db.queryRow(ctx, tx, `SELECT coalesce(max(version), 0) FROM lensgate_schema`, nil, &had); err != nil {
		return 0, fmt.Errorf("schema version: %w", err)
	}
	for _, m := range migrations {
		if int64(m.version) <= had {
			continue
		}
		if err := applyMigration(ctx, db, tx, backend, m); err != nil {
			return int(had), fmt.Errorf("schema migration %d (%s): %w", m.version, m.name, err)
		}
		if _, err := db.exec(ctx, tx, `INSERT INTO lensgate_schema (version, name, applied_at) VALUES ($1, $2, $3)`,
			int64(m.version), m.name, nowMS); err != nil {
			return int(had), fmt.Errorf("schema migration %d: record: %w", m.version, err)
		}
	}
	return int(had), nil
}

func applyMigration[TTx any](ctx context.Context, db database[TTx], tx TTx, backend string, m migration) error {
	if m.statements != nil {
		for _, stmt := range m.statements(backend) {
			if _, err := db.exec(ctx, tx, stmt); err != nil {
				return err
			}
		}
	}
	for _, c := range m.columns {
		var n int64
		if err := db.queryRow(ctx, tx, hasColumnQuery(backend), []any{c.table, c.name}, &n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := db.exec(ctx, tx, "ALTER TABLE "+c.table+" ADD COLUMN "+c.name+" "+c.definition); err != nil {
			return err
		}
	}
	return nil
}
