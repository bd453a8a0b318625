package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"
)

var psCommand = &cli.Command{
	Name:      "ps",
	Usage:     "list the processes running in a container",
	ArgsUsage: "<container-id> [ps options]",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "table (ps output) or json (array of pids)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		ct, err := loadContainer(c)
		if err != nil {
			return err
		}
		pids, err := ct.Processes()
		if err != nil {
			return err
		}
		switch f := c.String("format"); f {
		case "json":
			if pids == nil {
				pids = []int{}
			}
			return printJSON(pids, "")
		case "table":
		default:
			return fmt.Errorf("invalid --format %q: use table or json", f)
		}
		args := c.Args().Slice()[1:]
		if len(args) == 0 {
			args = []string{"-ef"}
		}
		out, err := exec.Command("ps", args...).Output()
		if err != nil {
			return fmt.Errorf("ps %s: %w", strings.Join(args, " "), err)
		}
		return filterPs(out, pids)
	},
}

// filterPs prints ps's header and the lines whose PID column is one of pids.
func filterPs(out []byte, pids []int) error {
	lines := strings.Split(string(bytes.TrimRight(out, "\n")), "\n")
	col := -1
	for i, h := range strings.Fields(lines[0]) {
		if h == "PID" {
			col = i
		}
	}
	if col < 0 {
		return fmt.Errorf("ps output has no PID column: %q", lines[0])
	}
	want := make(map[int]bool, len(pids))
	for _, p := range pids {
		want[p] = true
	}
	fmt.Fprintln(os.Stdout, lines[0])
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) <= col {
			continue
		}
		if p, err := strconv.Atoi(f[col]); err == nil && want[p] {
			fmt.Fprintln(os.Stdout, l)
		}
	}
	return nil
}
