package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

var createCommand = &cli.Command{
	Name:      "create",
	Usage:     "create a container whose init waits for 'start'",
	ArgsUsage: "<container-id>",
	Flags:     createFlags,
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		if err := create(c); err != nil {
			return fmt.Errorf("%s create failed: %w", progName(), err)
		}
		return nil
	},
}

func create(c *cli.Context) error {
	e, err := newEngine(c)
	if err != nil {
		return err
	}
	b, o, err := createOptions(c)
	if err != nil {
		return err
	}
	return e.Create(c.Args().First(), b, o)
}
