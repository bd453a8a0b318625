// Package libzone is rauha's engine: the OCI container lifecycle of
// runc's libcontainer, with every container a member of a zone whose rules
// the kernel enforces through an Enforcer.
package libzone

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	_ "github.com/opencontainers/cgroups/devices" // device rules for the cgroup managers
	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // the C constructor that runs before Go in "rauha init"

	"github.com/rauha-runtime/rauha/bpf"
	"github.com/rauha-runtime/rauha/zone"
)

// Annotations rauha reads from a container's config.
const (
	AnnotationZone   = "org.rauha.zone"
	AnnotationPolicy = "org.rauha.policy"
)

// DefaultRoot is where rauha keeps its state when --root is not given.
const DefaultRoot = bpf.DefaultRoot

// ErrNotExist is returned for a container id that rauha does not know.
var ErrNotExist = errors.New("container does not exist")

// ErrNotRunning is returned for a signal to a container whose init has
// exited; its text is runc's, which clients match.
var ErrNotRunning = errors.New("container not running")

// Options configure an Engine.
type Options struct {
	Root          string // state directory (rauha.db, per-container state)
	SystemdCgroup bool   // manage cgroups through systemd (needs a running systemd)
}

// Engine creates and loads containers under one state root.
type Engine struct {
	root          string
	systemdCgroup bool
	store         *zone.Store
}

// New returns an engine for root. It touches nothing on disk: commands
// that only read (list, state) must not create state.
func New(o Options) (*Engine, error) {
	root := o.Root
	if root == "" {
		root = DefaultRoot
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("state root %q: %w", o.Root, err)
	}
	return &Engine{root: root, systemdCgroup: o.SystemdCgroup, store: zone.OpenStore(root)}, nil
}

// Root is the engine's absolute state directory.
func (e *Engine) Root() string { return e.root }

// Store is the zone database of this root.
func (e *Engine) Store() *zone.Store { return e.store }

// Init is the entry point of "rauha init", the process libcontainer starts
// inside the new namespaces. It never returns.
func Init() { libcontainer.Init() }

func (e *Engine) stateDir(id string) string { return filepath.Join(e.root, id) }

func (e *Engine) exists(id string) (bool, error) {
	_, err := os.Stat(e.stateDir(id))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("container %s: %w", id, err)
}

// beside runs f in a goroutine, beside what the caller does next, and
// returns a function that waits for f and returns what it returned (both
// values, also together), the same on every call. create and delete use it
// for kernel and store work that needs nothing the caller is doing.
func beside[T any](f func() (T, error)) (wait func() (T, error)) {
	done := make(chan struct{})
	var v T
	var err error
	go func() {
		defer close(done)
		v, err = f()
	}()
	return func() (T, error) {
		<-done
		return v, err
	}
}

// besideErr is beside for work that returns only an error.
func besideErr(f func() error) (wait func() error) {
	w := beside(func() (struct{}, error) { return struct{}{}, f() })
	return func() error {
		_, err := w()
		return err
	}
}
