package main

import (
	"github.com/urfave/cli/v2"
)

var startCommand = &cli.Command{
	Name:      "start",
	Usage:     "start the user process of a created container",
	ArgsUsage: "<container-id>",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, id, err := containerArg(c)
		if err != nil {
			return err
		}
		return e.Start(id)
	},
}
