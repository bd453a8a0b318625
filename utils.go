package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/sirupsen/logrus"
	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/internal/process"
	"github.com/rauha-runtime/rauha/libzone"
)

type argCheck int

const (
	exactArgs argCheck = iota
	minArgs
	maxArgs
)

// checkArgs enforces a command's argument count, as runc does.
func checkArgs(c *cli.Context, n int, check argCheck) error {
	got := c.NArg()
	var err error
	switch {
	case check == exactArgs && got != n:
		err = fmt.Errorf("%q requires exactly %d argument(s), got %d", c.Command.Name, n, got)
	case check == minArgs && got < n:
		err = fmt.Errorf("%q requires at least %d argument(s), got %d", c.Command.Name, n, got)
	case check == maxArgs && got > n:
		err = fmt.Errorf("%q requires at most %d argument(s), got %d", c.Command.Name, n, got)
	}
	if err != nil {
		return fmt.Errorf("%w (see 'rauha %s --help')", err, c.Command.Name)
	}
	return nil
}

// newEngine is the engine of --root. A root whose zones lost their kernel
// state (its pins were removed) gets it back here, before the command runs:
// whatever the next command is, enforcement resumes. A failure to restore
// is only a warning, so that state, list and delete still work; commands
// that need the kernel fail on their own.
func newEngine(c *cli.Context) (*libzone.Engine, error) {
	e, err := libzone.New(libzone.Options{Root: c.String("root"), SystemdCgroup: c.Bool("systemd-cgroup")})
	if err != nil {
		return nil, err
	}
	if err := e.RestoreKernel(); err != nil {
		logrus.Warnf("restore the kernel state of %s: %v", e.Root(), err)
	}
	return e, nil
}

// containerArg is the engine and the container id the first argument names.
func containerArg(c *cli.Context) (*libzone.Engine, string, error) {
	id := c.Args().First()
	if id == "" {
		return nil, "", errors.New("container id cannot be empty")
	}
	e, err := newEngine(c)
	return e, id, err
}

// loadContainer loads the container named by the first argument.
func loadContainer(c *cli.Context) (*libzone.Container, error) {
	e, id, err := containerArg(c)
	if err != nil {
		return nil, err
	}
	return e.Load(id)
}

// absPidFile makes --pid-file absolute before create changes into the bundle
// directory: a relative path is relative to the caller's directory.
func absPidFile(c *cli.Context) (string, error) {
	p := c.String("pid-file")
	if p == "" {
		return "", nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("--pid-file %q: %w", p, err)
	}
	return abs, nil
}

// ioOptions reads the stdio flags shared by create, run and exec.
func ioOptions(c *cli.Context) (process.IOOptions, error) {
	pidFile, err := absPidFile(c)
	if err != nil {
		return process.IOOptions{}, err
	}
	return process.IOOptions{
		Detach:        c.Bool("detach"),
		ConsoleSocket: c.String("console-socket"),
		PidfdSocket:   c.String("pidfd-socket"),
		PidFile:       pidFile,
		PreserveFDs:   c.Int("preserve-fds"),
		NoSubreaper:   c.Bool("no-subreaper"),
	}, nil
}

var pidfdSocketFlag = &cli.StringFlag{Name: "pidfd-socket", Usage: "AF_UNIX socket that receives a pidfd of the process (SCM_RIGHTS)"}

var createFlags = []cli.Flag{
	&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "path to the bundle directory (default: the current directory)"},
	&cli.StringFlag{Name: "console-socket", Usage: "AF_UNIX socket that receives the pty master of the container's terminal"},
	pidfdSocketFlag,
	&cli.StringFlag{Name: "pid-file", Usage: "write the container init's pid to this file"},
	&cli.BoolFlag{Name: "no-pivot", Usage: "do not use pivot_root to jail the container (for a rootfs on a ramdisk)"},
	&cli.BoolFlag{Name: "no-new-keyring", Usage: "do not create a new session keyring for the container"},
	&cli.IntFlag{Name: "preserve-fds", Usage: "pass N additional file descriptors (3 to 3+N-1) to the container"},
}

// createOptions reads the flags of create and run, then opens the bundle
// (which changes into its directory, so flags with relative paths go first).
func createOptions(c *cli.Context) (*libzone.Bundle, libzone.CreateOptions, error) {
	io, err := ioOptions(c)
	if err != nil {
		return nil, libzone.CreateOptions{}, err
	}
	o := libzone.CreateOptions{
		IOOptions:    io,
		NoPivot:      c.Bool("no-pivot"),
		NoNewKeyring: c.Bool("no-new-keyring"),
		Keep:         c.Bool("keep"),
	}
	for _, sock := range []*string{&o.ConsoleSocket, &o.PidfdSocket} {
		if *sock != "" {
			if *sock, err = filepath.Abs(*sock); err != nil {
				return nil, o, err
			}
		}
	}
	b, err := libzone.OpenBundle(c.String("bundle"))
	if err != nil {
		return nil, o, err
	}
	return b, o, nil
}

func exitWith(status int) error {
	if status == 0 {
		return nil
	}
	return &exitError{status: status}
}

// printTable writes what fill prints through a tabwriter (columns at
// least minWidth wide, 3 spaces apart) to stdout in one buffered write:
// the tabwriter alone writes every cell on its own, 6000 writes for a
// list of 500 containers.
func printTable(minWidth int, fill func(w io.Writer)) error {
	out := bufio.NewWriter(os.Stdout)
	w := tabwriter.NewWriter(out, minWidth, 1, 3, ' ', 0)
	fill(w)
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Flush()
}
