package main

import (
	"errors"

	"github.com/urfave/cli/v2"
)

// errNoCheckpoint answers checkpoint and restore. A restored process would
// resume outside the zone enforcement that create sets up, so rauha refuses
// instead of restoring an unconfined container.
var errNoCheckpoint = errors.New("checkpoint/restore is not supported by rauha: a restored container would start outside its zone's enforcement; stop and re-create the container instead")

var checkpointCommand = &cli.Command{
	Name:            "checkpoint",
	Usage:           "not supported",
	SkipFlagParsing: true,
	Action:          func(*cli.Context) error { return errNoCheckpoint },
}

var restoreCommand = &cli.Command{
	Name:            "restore",
	Usage:           "not supported",
	SkipFlagParsing: true,
	Action:          func(*cli.Context) error { return errNoCheckpoint },
}
