package libzone

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/rauha-runtime/rauha/internal/process"
)

// BaseProcess is the process of the container's bundle config, the base
// that "exec" flags modify (as runc does).
func (c *Container) BaseProcess() (*specs.Process, error) {
	st, err := c.State()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(st.Bundle, configFile)
	spec, err := readSpec(path)
	if err != nil {
		return nil, fmt.Errorf("exec into %s needs its bundle config: %w", c.ID(), err)
	}
	if spec.Process == nil {
		return nil, fmt.Errorf("%s has no process", path)
	}
	return spec.Process, nil
}

// ReadProcess reads a process JSON file (exec --process).
func ReadProcess(path string) (*specs.Process, error) {
	f, err := openBounded(path, "process file", true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseProcess(path, f)
}

// parseProcess decodes and validates a process JSON read from r; name
// labels the errors.
func parseProcess(name string, r io.Reader) (*specs.Process, error) {
	var p specs.Process
	if err := decodeBounded(r, &p); err != nil {
		return nil, fmt.Errorf("process file %s: %w", name, err)
	}
	if err := ValidateProcess(&p); err != nil {
		return nil, fmt.Errorf("process file %s: %w", name, err)
	}
	return &p, nil
}

// ExecOptions are exec's options beyond how the process is wired.
type ExecOptions struct {
	process.IOOptions
	// IgnorePaused lets a process into a paused container; it runs once
	// the container is resumed.
	IgnorePaused bool
	// SubCgroupPaths are existing sub-cgroups of the container's cgroup to
	// run the process in: controller → path, "" for every hierarchy.
	// They are below the container's cgroup, so inside its zone.
	SubCgroupPaths map[string]string
}

// Exec runs an additional process in the running container, enforced by
// its zone exactly like the init.
func (c *Container) Exec(p *specs.Process, o ExecOptions) (int, error) {
	if err := ValidateProcess(p); err != nil {
		return -1, err
	}
	status, err := c.lc.Status()
	if err != nil {
		return -1, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	switch status {
	case libcontainer.Running, libcontainer.Created:
	case libcontainer.Paused:
		if !o.IgnorePaused {
			return -1, fmt.Errorf("cannot exec in a paused container %s (resume it first, or use --ignore-paused)", c.ID())
		}
	default:
		return -1, fmt.Errorf("cannot exec in a %s container %s", status, c.ID())
	}
	if err := checkJoined(c.e.stateDir(c.ID()), c.ID()); err != nil {
		return -1, err
	}
	if !cgroups.IsCgroup2UnifiedMode() {
		// On a pure cgroup v2 host libcontainer starts an exec'd process
		// straight in its cgroup (CLONE_INTO_CGROUP); elsewhere it writes
		// the pid to cgroup.procs files.
		go primeCgroupAttach()
	}
	z, err := c.e.memberZone(c.ID())
	if err != nil {
		return -1, err
	}
	st, err := c.lc.State()
	if err != nil {
		return -1, fmt.Errorf("container %s: %w", c.ID(), err)
	}
	enf, err := c.e.enforcer()
	if err != nil {
		return -1, err
	}
	defer enf.Close()
	cfg := c.lc.Config()
	r := &process.Runner{
		Container: c.lc,
		Action:    process.ActExec,
		IO:        o.IOOptions,
		// An exec'd process enters the zone exactly like the init: the same
		// capability limits and the same rules, built from the running
		// container's root.
		Prepare: func(lp *libcontainer.Process) (func(), error) {
			lp.SubCgroupPaths = o.SubCgroupPaths
			limitCapabilities(lp, &z.Policy)
			_, release, err := enf.PrepareProcess(z, &cfg, lp, st.InitProcessPid, nil)
			return release, err
		},
	}
	return r.Run(p)
}
