package libzone

import (
	"encoding/json"
	"errors"
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
// (stripPoststart) and keeps them in the state directory (savePoststart),
// as runc keeps a bundle's hooks from create on; start runs them from there
// (runPoststart). A container without them has no file, and its start
// reads nothing: parsing config.json again was most of start's own time.

// poststartFile holds a container's poststart hooks (JSON) in its state
// directory, which libcontainer removes with the container.
const poststartFile = "poststart.json"

func stripPoststart(cfg *configs.Config) {
	if cfg.Hooks != nil {
		delete(cfg.Hooks, configs.Poststart)
	}
}

// poststartHooks are spec's poststart hooks; nil when it has none.
func poststartHooks(spec *specs.Spec) []specs.Hook {
	if spec.Hooks == nil {
		return nil
	}
	return spec.Hooks.Poststart //nolint:staticcheck // Poststart is current, Prestart is the deprecated one
}

// savePoststart keeps spec's poststart hooks for start.
func savePoststart(stateDir string, spec *specs.Spec) error {
	hooks := poststartHooks(spec)
	if len(hooks) == 0 {
		return nil
	}
	b, err := json.Marshal(hooks)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stateDir, poststartFile), b, 0o600); err != nil {
		return fmt.Errorf("keep the poststart hooks: %w", err)
	}
	return nil
}

// savedPoststart reads what savePoststart kept; nil when there is nothing.
func savedPoststart(stateDir string) ([]specs.Hook, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, poststartFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the poststart hooks: %w", err)
	}
	var hooks []specs.Hook
	if err := json.Unmarshal(b, &hooks); err != nil {
		return nil, fmt.Errorf("read the poststart hooks in %s: %w", filepath.Join(stateDir, poststartFile), err)
	}
	return hooks, nil
}

// runPoststart waits until the init has executed the user process (after
// the startContainer hooks), then runs hooks in the bundle directory. A
// failing hook kills the container, as runc does.
func (c *Container) runPoststart(bundle string, hooks []specs.Hook) error {
	if len(hooks) == 0 {
		return nil
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
	for i, h := range hooks {
		if err := hookCommand(h, bundle).Run(state); err != nil {
			_ = c.lc.Signal(unix.SIGKILL)
			return fmt.Errorf("error running %s hook #%d: %w", configs.Poststart, i, err)
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
