// Command lensgate reviews pull requests with named review lenses, publishes signed disclosure
// receipts and serves the GitHub App.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
)

// defaultHTTPTimeout bounds one-shot HTTP calls made by command-line tools.
const defaultHTTPTimeout = 30 * time.Second

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes shared by every subcommand.
const (
	exitOK       = 0 // all good
	exitNegative = 1 // a negative verdict: gate not passed, receipt not ok, a case failed
	exitUsage    = 2 // unusable input
)

// cli is the whole command line. Each subcommand lives in its own file.
type cli struct {
	Version kong.VersionFlag `help:"Print the version and exit."`

	Serve      serveCmd      `cmd:"" help:"Run the GitHub App webhook server."`
	Review     reviewCmd     `cmd:"" help:"Review a local git repository with the configured lenses."`
	Eval       evalCmd       `cmd:"" help:"Measure the review's recall and precision on a corpus of pull requests with known defects."`
	Runner     runnerCmd     `cmd:"" help:"Run the review runtimes for workers in another process and sign what it observed with the witness key."`
	Policy     policyCmd     `cmd:"" help:"Check, plan, template and evaluate a named-lens review policy."`
	Receipt    receiptCmd    `cmd:"" help:"Emit and verify signed agent-review receipts."`
	Disclosure disclosureCmd `cmd:"" help:"Work with the disclosure block of a pull request or issue body."`
	Keygen     keygenCmd     `cmd:"" help:"Create an Ed25519 signing key for receipts."`
	Doctor     doctorCmd     `cmd:"" help:"Validate an .asdd.yml and explain every problem."`
	Setup      setupCmd      `cmd:"" help:"Create the GitHub App from app.yml and write its server config."`
}

// env is what every subcommand's Run receives: where to write, and the process context.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
}

// exitError asks main to exit with a specific code. A nil err only sets the code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith wraps err so that main exits with code. Use exitWith(exitNegative, nil) for a negative
// verdict whose report has already been printed.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, runs one subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c cli
	parser, err := kong.New(&c,
		kong.Name("lensgate"),
		kong.Description("Named-lens pull request review with signed disclosure receipts."),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{NoExpandSubcommands: true}),
		kong.Vars{"version": version},
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(kongExit(code)) }),
	)
	if err != nil {
		fmt.Fprintf(stderr, "lensgate: %v\n", err)
		return exitUsage
	}
	code, handled := func() (code int, handled bool) {
		defer func() {
			if r := recover(); r != nil {
				if k, ok := r.(kongExit); ok {
					code, handled = int(k), true
					return
				}
				panic(r)
			}
		}()
		kctx, err := parser.Parse(args)
		if err != nil {
			fmt.Fprintf(stderr, "lensgate: %v\n", err)
			return exitUsage, true
		}
		return runCommand(kctx, &env{ctx: ctx, stdout: stdout, stderr: stderr}, stderr), true
	}()
	if !handled {
		return exitUsage
	}
	return code
}

// kongExit carries kong's requested exit code (after --help or --version) out of Parse.
type kongExit int

func runCommand(kctx *kong.Context, e *env, stderr io.Writer) int {
	err := kctx.Run(e)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "lensgate: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "lensgate: %v\n", err)
	return exitUsage
}
