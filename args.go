package main

import (
	"slices"
	"strings"
	"unicode"

	"github.com/urfave/cli/v2"
)

// stopFlagsAfterID are the commands whose arguments after the container id
// are not parsed as flags: exec's belong to the process, kill's signal may
// look like one. runc marks the same three (StopOnNthArg).
var stopFlagsAfterID = map[string]bool{"exec": true, "kill": true, "ps": true}

// permuteArgs reorders a command line so that urfave/cli v2, which stops
// parsing flags at the first positional argument, reads it as runc 1.5 does
// (urfave/cli v3): a command's flags may follow its arguments ("update ID
// --memory 1g"), and global flags may follow the command ("delete --root
// /r ID"). "--" ends the flags; for exec, kill and ps everything after the
// container id is an argument. Flags it does not know stay where the
// command's flags go, for the CLI library to reject.
func permuteArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	globals, i := scanFlags(args, 1, app.Flags)
	if i >= len(args) {
		return args
	}
	cmd := findCommand(app.Commands, args[i])
	if cmd == nil {
		return args
	}
	path := []string{args[i]}
	i++
	var local, pos []string
	// A command with subcommands (zone) takes its own flags, then the
	// subcommand's name.
	for len(cmd.Subcommands) > 0 && i < len(args) {
		var fl []string
		fl, i = scanFlags(args, i, cmd.Flags)
		local = append(local, fl...)
		if i >= len(args) {
			break
		}
		sub := findCommand(cmd.Subcommands, args[i])
		if sub == nil {
			break
		}
		path = append(path, args[i])
		cmd = sub
		i++
	}
	stopAfter := -1
	if len(path) == 1 && stopFlagsAfterID[cmd.Name] {
		stopAfter = 1
	}
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case len(pos) == stopAfter:
			pos = append(pos, args[i:]...)
			i = len(args)
		case !isFlag(a) && len(a) > 1 && a[0] == '-':
			// "-1" and the like: an argument, and so is the rest
			// (urfave/cli v3 reads them so).
			pos = append(pos, args[i:]...)
			i = len(args)
		case !isFlag(a):
			pos = append(pos, a)
			i++
		default:
			n := flagLen(args, i, cmd.Flags, true)
			if n == 0 {
				n = flagLen(args, i, app.Flags, false)
				if n > 0 {
					globals = append(globals, args[i:i+n]...)
					i += n
					break
				}
				n = 1 // unknown: the CLI library reports it
			}
			local = append(local, args[i:i+n]...)
			i += n
		}
	}
	out := slices.Concat([]string{args[0]}, globals, path, local)
	if len(pos) > 0 && strings.HasPrefix(pos[0], "-") {
		out = append(out, "--")
	}
	return append(out, pos...)
}

// scanFlags returns the flags of flags at args[i:] up to the first
// argument that is not one, and the index of that argument.
func scanFlags(args []string, i int, flags []cli.Flag) ([]string, int) {
	start := i
	for i < len(args) && isFlag(args[i]) {
		n := flagLen(args, i, flags, true)
		if n == 0 {
			n = 1
		}
		i += n
	}
	return args[start:i], i
}

// isFlag is urfave/cli v3's test: a dash and a letter, or two dashes.
func isFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	return a[1] == '-' && len(a) > 2 || unicode.IsLetter(rune(a[1]))
}

// flagLen is how many arguments the flag at args[i] takes up (1, or 2 for
// a flag and its value), or 0 when flags do not define it. withHelp counts
// --help/-h, which the CLI library adds to every command.
func flagLen(args []string, i int, flags []cli.Flag, withHelp bool) int {
	name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
	if withHelp && (name == "help" || name == "h") {
		return 1
	}
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		if _, isBool := f.(*cli.BoolFlag); isBool || hasValue || i+1 >= len(args) {
			return 1
		}
		return 2
	}
	return 0
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}
