package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

var deleteCommand = &cli.Command{
	Name:      "delete",
	Usage:     "delete a container's resources (it must be stopped, or use --force)",
	ArgsUsage: "<container-id>",
	Flags: []cli.Flag{
		&cli.BoolFlag{Name: "force", Aliases: []string{"f"}, Usage: "kill the container first if it is still running (SIGKILL)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, id, err := containerArg(c)
		if err != nil {
			return err
		}
		err = e.Delete(id, c.Bool("force"))
		if errors.Is(err, libzone.ErrNotExist) {
			// A create that died early may have left a directory without
			// state; remove it. containerd deletes twice: with --force the
			// second delete of a gone container succeeds, as with runc.
			if rerr := e.RemoveStale(id); rerr != nil {
				return rerr
			}
			if c.Bool("force") {
				return nil
			}
		}
		return err
	},
}
