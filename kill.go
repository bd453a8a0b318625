package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

var killCommand = &cli.Command{
	Name:      "kill",
	Usage:     "send a signal (default SIGTERM) to the container's init",
	ArgsUsage: "<container-id> [signal]",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "obsolete (runc compatibility): a stopped container is not an error"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		if err := checkArgs(c, 2, maxArgs); err != nil {
			return err
		}
		sig, err := parseSignal(c.Args().Get(1))
		if err != nil {
			return err
		}
		e, id, err := containerArg(c)
		if err != nil {
			return err
		}
		return e.Signal(id, sig, c.Bool("all"))
	},
}

// parseSignal accepts numbers (what podman and docker send) and names with
// or without the SIG prefix, in any case. 0 sends no signal: it asks
// whether the container's init is running (kill(2)'s liveness probe).
func parseSignal(s string) (unix.Signal, error) {
	if s == "" {
		return unix.SIGTERM, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 64 {
			return 0, fmt.Errorf("invalid signal number %d: use 0 to 64", n)
		}
		return unix.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	sig := unix.SignalNum(name)
	if sig == 0 {
		return 0, fmt.Errorf("unknown signal %q", s)
	}
	return sig, nil
}
