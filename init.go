package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

// "rauha init" is the first process inside a new container; libcontainer
// re-executes rauha to run it. It must start before main: the Go runtime's
// own threads would make the namespace set-up racy.
func init() {
	if len(os.Args) > 1 && os.Args[1] == "init" {
		libzone.Init()
	}
}

var initCommand = &cli.Command{
	Name:   "init",
	Usage:  "initialize the namespaces and launch the process (do not call it outside of rauha)",
	Hidden: true,
	Action: func(*cli.Context) error { return nil },
}
