package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"
)

var listCommand = &cli.Command{
	Name:  "list",
	Usage: "list the containers under --root",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only the container ids"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		// Like runc: a default root that does not exist yet holds no
		// containers, a --root that does not exist is a mistake.
		if c.IsSet("root") {
			if _, err := os.Stat(e.Root()); err != nil {
				return fmt.Errorf("list containers: %w", err)
			}
		}
		states, err := e.List()
		if err != nil {
			return err
		}
		if c.Bool("quiet") {
			for _, s := range states {
				fmt.Println(s.ID)
			}
			return nil
		}
		switch f := c.String("format"); f {
		case "table":
			return printTable(12, func(w io.Writer) {
				fmt.Fprint(w, "ID\tPID\tSTATUS\tBUNDLE\tCREATED\tOWNER\n")
				for _, s := range states {
					fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", s.ID, s.Pid, s.Status, s.Bundle, s.Created.Format(time.RFC3339Nano), s.Owner)
				}
			})
		case "json":
			if states == nil {
				// runc prints null for no containers; an empty list is what
				// every JSON consumer expects.
				return printJSON([]any{}, "")
			}
			return printJSON(states, "")
		default:
			return fmt.Errorf("invalid --format %q: use table or json", f)
		}
	},
}
