package main

import (
	"github.com/urfave/cli/v2"
)

var resumeCommand = &cli.Command{
	Name:      "resume",
	Usage:     "thaw a paused container",
	ArgsUsage: "<container-id>",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		ct, err := loadContainer(c)
		if err != nil {
			return err
		}
		return ct.Resume()
	},
}
