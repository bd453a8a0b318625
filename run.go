package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

var runCommand = &cli.Command{
	Name:      "run",
	Usage:     "create and start a container; in the foreground, wait for it and delete it",
	ArgsUsage: "<container-id>",
	Flags: append([]cli.Flag{
		&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "detach from the container's process"},
		&cli.BoolFlag{Name: "keep", Usage: "do not delete the container after it exits"},
		&cli.BoolFlag{Name: "no-subreaper", Usage: "do not make rauha the subreaper of the container's processes"},
	}, createFlags...),
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		status, err := run(c)
		if err != nil {
			return fmt.Errorf("%s run failed: %w", progName(), err)
		}
		return exitWith(status)
	},
}

func run(c *cli.Context) (int, error) {
	e, err := newEngine(c)
	if err != nil {
		return -1, err
	}
	b, o, err := createOptions(c)
	if err != nil {
		return -1, err
	}
	return e.Run(c.Args().First(), b, o)
}
