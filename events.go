package main

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
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
		status, err := ct.Status()
		if err != nil {
			return err
		}
		if status == "stopped" {
			return fmt.Errorf("container %s is not running: no events", ct.ID())
		}
		enc := json.NewEncoder(os.Stdout)
		emit := func() error {
			ev, err := ct.StatsEvent()
			if err != nil {
				return err
			}
			return enc.Encode(ev)
		}
		if c.Bool("stats") {
			return emit()
		}
		// Stats every interval and, as runc, an "oom" event per OOM kill,
		// until the container stops.
		oom, err := ct.NotifyOOM()
		if err != nil {
			return err
		}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		if err := emit(); err != nil {
			return err
		}
		for {
			select {
			case _, ok := <-oom:
				if !ok { // the cgroup is gone
					return nil
				}
				if err := enc.Encode(&libzone.Event{Type: "oom", ID: ct.ID()}); err != nil {
					return err
				}
			case <-tick.C:
				if st, err := ct.Status(); err != nil || st == "stopped" {
					return err
				}
				if err := emit(); err != nil {
					return err
				}
			}
		}
	},
}
