package main

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

var zoneCommand = &cli.Command{
	Name:  "zone",
	Usage: "manage zones: the kernel-enforced boundaries containers run in",
	Subcommands: []*cli.Command{
		zoneListCommand,
		zoneInspectCommand,
	},
}

var zoneListCommand = &cli.Command{
	Name:  "list",
	Usage: "list zones with their member count",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table or json"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 0, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		zs, err := e.Zones()
		if err != nil {
			return err
		}
		switch f := c.String("format"); f {
		case "json":
			if zs == nil {
				return printJSON([]any{}, "")
			}
			return printJSON(zs, "")
		case "table":
			w := tabwriter.NewWriter(os.Stdout, 8, 1, 3, ' ', 0)
			fmt.Fprint(w, "NAME\tID\tMODE\tPOLICY\tMEMBERS\n")
			for _, z := range zs {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\n", z.Name, z.ID, z.Policy.Zone.Mode, z.PolicySource, len(z.Members))
			}
			return w.Flush()
		default:
			return fmt.Errorf("invalid --format %q: use table or json", f)
		}
	},
}

var zoneInspectCommand = &cli.Command{
	Name:      "inspect",
	Usage:     "print a zone, its policy and its members as JSON",
	ArgsUsage: "<zone>",
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		e, err := newEngine(c)
		if err != nil {
			return err
		}
		z, err := e.Zone(c.Args().First())
		if err != nil {
			return err
		}
		return printJSON(z, "  ")
	},
}
