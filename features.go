package main

import (
	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

var featuresCommand = &cli.Command{
	Name:  "features",
	Usage: "print the OCI features document (JSON)",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		return printJSON(libzone.Features(version), "    ")
	},
}
