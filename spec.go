package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

var specCommand = &cli.Command{
	Name:  "spec",
	Usage: "write a template config.json into the bundle directory",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "bundle", Aliases: []string{"b"}, Usage: "bundle directory (default: the current directory)"},
		&cli.BoolFlag{Name: "rootless", Usage: "a config for a container run by an unprivileged user"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		path := filepath.Join(c.String("bundle"), "config.json")
		data, err := json.MarshalIndent(libzone.ExampleSpec(c.Bool("rootless")), "", "\t")
		if err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists: remove it first", path)
		} else if err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		defer f.Close()
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	},
}
