package main

import (
	"encoding/json"
	"os"

	"github.com/urfave/cli/v2"
)

var stateCommand = &cli.Command{
	Name:      "state",
	Usage:     "print the state of a container as JSON",
	ArgsUsage: "<container-id>",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, id, err := containerArg(c)
		if err != nil {
			return err
		}
		st, err := e.State(id)
		if err != nil {
			return err
		}
		return printJSON(st, "  ")
	},
}

func printJSON(v any, indent string) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", indent)
	return enc.Encode(v)
}
