package libzone

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"
)

// initComm is the name libcontainer's nsexec gives the container init until
// it execs the user process.
const initComm = "runc:[2:INIT]"

// The OCI spec runs poststart hooks after the user process has started,
// before "start" returns. libcontainer 1.5 runs them when the init is
// created instead, so create removes them from the container's config
// (stripPoststart) and start runs them from the bundle (runPoststart).

func stripPoststart(cfg *configs.Config) {
	if cfg.Hooks != nil {
		delete(cfg.Hooks, configs.Poststart)
	}
}

// runPoststart waits until the init has executed the user process (after
// the startContainer hooks), then runs the bundle's poststart hooks. A
// failing hook kills the container, as runc does.
func (c *Container) runPoststart(bundle string) error {
	spec, err := readSpec(filepath.Join(bundle, configFile))
	if err != nil || spec.Hooks == nil || len(spec.Hooks.Poststart) == 0 { //nolint:staticcheck // Poststart is current, Prestart is the deprecated one
		return err
	}
	st, err := c.lc.State()
	if err != nil {
		return err
	}
	waitForExec(st.InitProcessPid, 30*time.Second)
	state, err := c.lc.OCIState()
	if err != nil {
		return err
	}
	for i, h := range spec.Hooks.Poststart {
		if err := hookCommand(h, bundle).Run(state); err != nil {
			_ = c.lc.Signal(unix.SIGKILL)
			return fmt.Errorf("poststart hook #%d (%s): %w", i, h.Path, err)
		}
	}
	return nil
}

func hookCommand(h specs.Hook, bundle string) configs.CommandHook {
	var timeout *time.Duration
	if h.Timeout != nil {
		d := time.Duration(*h.Timeout) * time.Second
		timeout = &d
	}
	return configs.NewCommandHook(&configs.Command{Path: h.Path, Args: h.Args, Env: h.Env, Dir: bundle, Timeout: timeout})
}

// waitForExec polls until pid's command name is no longer the init's (it
// executed the user process) or it is gone.
func waitForExec(pid int, limit time.Duration) {
	path := "/proc/" + strconv.Itoa(pid) + "/comm"
	deadline := time.Now().Add(limit)
	for wait := 100 * time.Microsecond; time.Now().Before(deadline); wait = min(2*wait, 20*time.Millisecond) {
		b, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(b)) != initComm {
			return
		}
		time.Sleep(wait)
	}
	logrus.Warnf("init %d did not start the user process within %s; running poststart hooks anyway", pid, limit)
}
