package durable

import (
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// Statement cache for SQLite. modernc's driver parses and plans a query's text again for every
// call made without a prepared statement, and River and the queue make all theirs that way: on a
// burst of webhooks that parsing took about as long as running the statements. The queue's one
// connection keeps each distinct query it has run prepared and runs it again with new arguments.

// maxCachedStatements bounds the statements a connection keeps prepared; queries beyond it are
// parsed every time, as without the cache.
const maxCachedStatements = 256

// cachingConnector opens modernc SQLite connections that keep their statements prepared.
type cachingConnector struct {
	dsn string
	drv *sqlite.Driver
}

func (c cachingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &cachingConn{conn: conn, stmts: map[string]*cachedStmt{}}, nil
}

func (c cachingConnector) Driver() driver.Driver { return c.drv }

// The interfaces database/sql looks for on a connection, all of which modernc's implements.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachedStmt struct {
	stmt driver.Stmt
	busy bool // its rows are open: a second use meanwhile prepares a statement of its own
}

// cachingConn is used by one goroutine at a time (database/sql's guarantee), rows included.
type cachingConn struct {
	conn  driver.Conn
	stmts map[string]*cachedStmt
}

func (c *cachingConn) inner() (sqliteConn, error) {
	sc, ok := c.conn.(sqliteConn)
	if !ok {
		return nil, errors.New("sqlite connection lacks a database/sql interface")
	}
	return sc, nil
}

// cached returns the prepared statement of query, preparing it if there is room, or nil when
// the query should run without the cache.
func (c *cachingConn) cached(ctx context.Context, query string) *cachedStmt {
	if s, ok := c.stmts[query]; ok {
		if s.busy {
			return nil
		}
		return s
	}
	if len(c.stmts) >= maxCachedStatements {
		return nil
	}
	sc, err := c.inner()
	if err != nil {
		return nil
	}
	st, err := sc.PrepareContext(ctx, query)
	if err != nil {
		return nil // the uncached call reports the error
	}
	_, execs := st.(driver.StmtExecContext)
	_, queries := st.(driver.StmtQueryContext)
	if !execs || !queries {
		_ = st.Close()
		return nil
	}
	s := &cachedStmt{stmt: st}
	c.stmts[query] = s
	return s
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if s := c.cached(ctx, query); s != nil {
		return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	}
	sc, err := c.inner()
	if err != nil {
		return nil, err
	}
	return sc.ExecContext(ctx, query, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if s := c.cached(ctx, query); s != nil {
		rows, err := s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
		if err != nil {
			return nil, err
		}
		s.busy = true
		return &cachedRows{Rows: rows, s: s}, nil
	}
	sc, err := c.inner()
	if err != nil {
		return nil, err
	}
	return sc.QueryContext(ctx, query, args)
}

func (c *cachingConn) Prepare(query string) (driver.Stmt, error) { return c.conn.Prepare(query) }
func (c *cachingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *cachingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	sc, err := c.inner()
	if err != nil {
		return nil, err
	}
	return sc.BeginTx(ctx, opts)
}

func (c *cachingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	sc, err := c.inner()
	if err != nil {
		return nil, err
	}
	return sc.PrepareContext(ctx, query)
}

func (c *cachingConn) Ping(ctx context.Context) error {
	sc, err := c.inner()
	if err != nil {
		return err
	}
	return sc.Ping(ctx)
}

func (c *cachingConn) ResetSession(ctx context.Context) error {
	sc, err := c.inner()
	if err != nil {
		return err
	}
	return sc.ResetSession(ctx)
}

func (c *cachingConn) IsValid() bool {
	sc, err := c.inner()
	return err == nil && sc.IsValid()
}

func (c *cachingConn) Close() error {
	for q, s := range c.stmts {
		_ = s.stmt.Close()
		delete(c.stmts, q)
	}
	return c.conn.Close()
}

// cachedRows frees its statement for the next use when closed.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.busy = false
	return err
}
