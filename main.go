// Command rauha is an OCI container runtime, a drop-in for runc, in which
// every container runs inside a zone that the kernel enforces.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/opencontainers/runc/libcontainer/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

// version and gitCommit are set at build time (-ldflags -X).
var (
	version   = "0.1.0-dev"
	gitCommit = ""
)

const usage = `Open Container Initiative runtime in which every container runs in a zone

rauha is a drop-in replacement for runc: it runs containers packaged as OCI
bundles (a directory with config.json and a root filesystem), with runc's
commands, flags, output formats and exit codes. Every container is a member of
a zone, a named boundary whose policy the kernel enforces; manage zones with
"rauha zone".`

func main() {
	stop := startCPUProfile()
	app := newApp()
	err := app.Run(permuteArgs(app, os.Args))
	stop()
	if err != nil {
		fatal(err)
	}
}

func newApp() *cli.App {
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprint(c.App.Writer, versionText())
	}
	return &cli.App{
		Name:    "rauha",
		Usage:   usage,
		Version: version,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "debug", Usage: "enable debug logging"},
			&cli.StringFlag{Name: "log", Usage: "write log messages to this file (default: stderr)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.StringFlag{Name: "root", Value: libzone.DefaultRoot, Usage: "directory for container state and the zone database"},
			&cli.BoolFlag{Name: "systemd-cgroup", Usage: "manage cgroups through systemd (cgroupsPath is slice:prefix:name)"},
			&cli.StringFlag{Name: "rootless", Value: "auto", Usage: "accepted for runc compatibility; rauha runs as root", Hidden: true},
			&cli.StringFlag{Name: "criu", Usage: "accepted for runc compatibility; checkpoint/restore is not supported", Hidden: true},
		},
		Commands: []*cli.Command{
			checkpointCommand,
			createCommand,
			deleteCommand,
			eventsCommand,
			execCommand,
			featuresCommand,
			initCommand,
			killCommand,
			listCommand,
			pauseCommand,
			psCommand,
			restoreCommand,
			resumeCommand,
			runCommand,
			specCommand,
			startCommand,
			stateCommand,
			updateCommand,
			zoneCommand,
		},
		// A comma is part of a value ("--env A=1,2", "--cgroup cpu,cpuacct:sub"),
		// as in runc.
		DisableSliceFlagSeparator: true,
		Before:                    configureLogging,
		HideHelpCommand:           true,
		// Errors are printed once, by fatal, in the format --log-format asks for.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

func versionText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rauha version %s\n", version)
	if gitCommit != "" {
		fmt.Fprintf(&b, "commit: %s\n", gitCommit)
	}
	fmt.Fprintf(&b, "spec: %s\n", specs.Version)
	fmt.Fprintf(&b, "go: %s\n", runtime.Version())
	if major, minor, micro := seccomp.Version(); major+minor+micro > 0 {
		fmt.Fprintf(&b, "libseccomp: %d.%d.%d\n", major, minor, micro)
	}
	return b.String()
}

// configureLogging follows runc: --log sends log records to a file (docker's
// shim reads create errors from it when --log-format is json), --debug
// raises the level.
func configureLogging(c *cli.Context) error {
	if c.Bool("debug") {
		logrus.SetLevel(logrus.DebugLevel)
	}
	switch f := c.String("log-format"); f {
	case "", "text":
	case "json":
		logrus.SetFormatter(new(logrus.JSONFormatter))
	default:
		return fmt.Errorf("invalid --log-format %q: use text or json", f)
	}
	logrus.SetFormatter(libzone.QuietFormatter(logrus.StandardLogger().Formatter))
	if path := c.String("log"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
		if err != nil {
			return fmt.Errorf("open log file: %w", err)
		}
		logrus.SetOutput(f)
	}
	return nil
}

// exitError carries a process's exit status out of a command, so that
// foreground run and exec exit as their workload did.
type exitError struct{ status int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.status) }

// codeError is a failure that exits with code instead of 1: exec's own
// failures exit 255, as runc's do, so that callers can tell them from the
// process's exit status.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// progName is the name rauha was called by: installed as runc, its
// messages say "runc create failed", as clients expect.
func progName() string { return filepath.Base(os.Args[0]) }

// fatal prints err once, as runc does: through the logger, and on stderr
// too when the log goes elsewhere.
func fatal(err error) {
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.status)
	}
	code := 1
	var ce *codeError
	if errors.As(err, &ce) {
		code = ce.code
	}
	logrus.Error(err)
	if !logsToStderr() {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

func logsToStderr() bool {
	f, ok := logrus.StandardLogger().Out.(*os.File)
	return ok && f.Fd() == os.Stderr.Fd()
}
