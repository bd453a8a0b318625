package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"
)

var eventsCommand = &cli.Command{
	Name:      "events",
	Usage:     "print container statistics as JSON events",
	ArgsUsage: "<container-id>",
	Flags: []cli.Flag{
		&cli.DurationFlag{Name: "interval", Value: 5 * time.Second, Usage: "time between stats events"},
		&cli.BoolFlag{Name: "stats", Usage: "print the stats once and exit"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, exactArgs); err != nil {
			return err
		}
		interval := c.Duration("interval")
		if interval <= 0 {
			return fmt.Errorf("--interval must be positive, got %s", interval)
		}
		ct, err := loadContainer(c)
		if err != nil {
			return err
		}
		enc := json.NewEncoder(os.Stdout)
		for {
			status, err := ct.Status()
			if err != nil {
				return err
			}
			if status == "stopped" {
				return fmt.Errorf("container %s is stopped: no stats", ct.ID())
			}
			ev, err := ct.StatsEvent()
			if err != nil {
				return err
			}
			if err := enc.Encode(ev); err != nil {
				return err
			}
			if c.Bool("stats") {
				return nil
			}
			time.Sleep(interval)
		}
	},
}
