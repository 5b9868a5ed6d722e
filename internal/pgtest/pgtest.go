// Package pgtest gives a test a PostgreSQL database of its own in the throw-away cluster that
// .ci/run starts. Product code never imports it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the variable holding the DSN of the test cluster (.ci/run sets it).
const Env = "LENSGATE_TEST_POSTGRES_DSN"

// Database creates a database with a random name in the test cluster, so reruns and parallel
// tests never see each other's rows, drops it when the test ends and returns its DSN. It returns
// "" when Env is not set.
func Database(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(Env)
	if admin == "" {
		return ""
	}
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", Env, err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect to %s: %v", Env, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "lensgate_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u.Path = "/" + name
	return u.String()
}

// DatabaseOrSkip is Database, skipping the test with the reason when no cluster is given.
func DatabaseOrSkip(t testing.TB) string {
	t.Helper()
	dsn := Database(t)
	if dsn == "" {
		t.Skipf("%s not set: this test needs PostgreSQL (.ci/run starts a throw-away cluster and sets it)", Env)
	}
	return dsn
}
