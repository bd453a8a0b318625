package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/urfave/cli/v2"

	"github.com/rauha-runtime/rauha/libzone"
)

var execCommand = &cli.Command{
	Name:      "exec",
	Usage:     "run an additional process in a running container, in its zone",
	ArgsUsage: "<container-id> <command> [args...]",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "console-socket", Usage: "AF_UNIX socket that receives the pty master"},
		pidfdSocketFlag,
		&cli.StringFlag{Name: "cwd", Usage: "working directory in the container"},
		&cli.StringSliceFlag{Name: "env", Aliases: []string{"e"}, Usage: "set an environment variable (KEY=value)"},
		&cli.BoolFlag{Name: "tty", Aliases: []string{"t"}, Usage: "allocate a pseudo-terminal"},
		&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "uid[:gid] to run as"},
		&cli.Int64SliceFlag{Name: "additional-gids", Aliases: []string{"g"}, Usage: "additional group ids"},
		&cli.StringFlag{Name: "process", Aliases: []string{"p"}, Usage: "process JSON file (the other process flags are ignored then)"},
		&cli.BoolFlag{Name: "detach", Aliases: []string{"d"}, Usage: "detach from the process"},
		&cli.StringFlag{Name: "pid-file", Usage: "write the process's pid to this file"},
		&cli.StringFlag{Name: "process-label", Usage: "SELinux label of the process"},
		&cli.StringFlag{Name: "apparmor", Usage: "AppArmor profile of the process"},
		&cli.BoolFlag{Name: "no-new-privs", Usage: "set no_new_privs for the process"},
		&cli.StringSliceFlag{Name: "cap", Aliases: []string{"c"}, Usage: "add a capability (CAP_...) to the process"},
		&cli.IntFlag{Name: "preserve-fds", Usage: "pass N additional file descriptors to the process"},
		&cli.StringSliceFlag{Name: "cgroup", Usage: "run the process in an existing sub-cgroup of the container: [<controller>[,<controller>...]:]<path>"},
		&cli.BoolFlag{Name: "ignore-paused", Usage: "exec into a paused container (the process runs once it is resumed)"},
	},
	Action: func(c *cli.Context) error {
		if err := checkArgs(c, 1, minArgs); err != nil {
			return err
		}
		status, err := execute(c)
		if err != nil {
			// runc exits 255 when exec itself fails, so callers can tell
			// that from the exit status of the process.
			return &codeError{code: 255, err: fmt.Errorf("exec failed: %w", err)}
		}
		return exitWith(status)
	},
}

func execute(c *cli.Context) (int, error) {
	io, err := ioOptions(c)
	if err != nil {
		return -1, err
	}
	// conmon is the subreaper of exec'd processes; like runc, exec never
	// takes that role.
	io.NoSubreaper = true
	o := libzone.ExecOptions{IOOptions: io, IgnorePaused: c.Bool("ignore-paused")}
	if o.SubCgroupPaths, err = subCgroupPaths(c.StringSlice("cgroup")); err != nil {
		return -1, err
	}
	ct, err := loadContainer(c)
	if err != nil {
		return -1, err
	}
	p, err := execProcess(c, ct)
	if err != nil {
		return -1, err
	}
	return ct.Exec(p, o)
}

// subCgroupPaths parses exec --cgroup as runc does: one bare path (the
// sub-cgroup in every hierarchy, the only form on cgroup v2), or any number
// of controller[,controller...]:path. The map is controller → path, with
// "" for the bare path.
func subCgroupPaths(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	paths := make(map[string]string, len(args))
	for _, a := range args {
		ctrls, path, ok := strings.Cut(a, ":")
		if !ok {
			if len(args) != 1 {
				return nil, fmt.Errorf("invalid --cgroup argument: %s (missing <controller>: prefix)", a)
			}
			paths[""] = a
			continue
		}
		for _, ctrl := range strings.Split(ctrls, ",") {
			if ctrl == "" {
				return nil, fmt.Errorf("invalid --cgroup argument: %s (empty <controller> prefix)", a)
			}
			if _, dup := paths[ctrl]; dup {
				return nil, fmt.Errorf("invalid --cgroup argument(s): controller %s specified multiple times", ctrl)
			}
			paths[ctrl] = path
		}
	}
	return paths, nil
}

// execProcess builds the process from --process, or from the bundle's
// process changed by the flags (runc's rules).
func execProcess(c *cli.Context, ct *libzone.Container) (*specs.Process, error) {
	if path := c.String("process"); path != "" {
		return libzone.ReadProcess(path)
	}
	if c.NArg() < 2 {
		return nil, errors.New("exec needs a command to run: rauha exec <container-id> <command> [args...]")
	}
	p, err := ct.BaseProcess()
	if err != nil {
		return nil, err
	}
	p.Args = c.Args().Slice()[1:]
	if cwd := c.String("cwd"); cwd != "" {
		p.Cwd = cwd
	}
	if ap := c.String("apparmor"); ap != "" {
		p.ApparmorProfile = ap
	}
	if l := c.String("process-label"); l != "" {
		p.SelinuxLabel = l
	}
	if caps := c.StringSlice("cap"); len(caps) > 0 {
		if p.Capabilities == nil {
			p.Capabilities = &specs.LinuxCapabilities{}
		}
		for _, cp := range caps {
			p.Capabilities.Bounding = append(p.Capabilities.Bounding, cp)
			p.Capabilities.Effective = append(p.Capabilities.Effective, cp)
			p.Capabilities.Permitted = append(p.Capabilities.Permitted, cp)
			// Ambient capabilities need inheritable ones; exec --cap does
			// not add inheritable, so only extend ambient where the bundle
			// already has inheritable capabilities.
			if p.Capabilities.Inheritable != nil {
				p.Capabilities.Ambient = append(p.Capabilities.Ambient, cp)
			}
		}
	}
	p.Env = append(p.Env, c.StringSlice("env")...)
	p.Terminal = c.Bool("tty")
	if c.IsSet("no-new-privs") {
		p.NoNewPrivileges = c.Bool("no-new-privs")
	}
	if u := c.String("user"); u != "" {
		uid, gid, hasGid := strings.Cut(u, ":")
		if hasGid {
			g, err := strconv.ParseUint(gid, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--user %q: bad gid: %w", u, err)
			}
			p.User.GID = uint32(g)
		}
		n, err := strconv.ParseUint(uid, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--user %q: bad uid (rauha takes numeric uid[:gid]): %w", u, err)
		}
		p.User.UID = uint32(n)
	}
	for _, g := range c.Int64Slice("additional-gids") {
		if g < 0 || g > 1<<32-1 {
			return nil, fmt.Errorf("--additional-gids: %d is not a valid gid", g)
		}
		p.User.AdditionalGids = append(p.User.AdditionalGids, uint32(g))
	}
	return p, nil
}
