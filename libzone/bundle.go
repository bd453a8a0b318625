package libzone

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/rauha-runtime/rauha/zone"
)

// maxConfigSize bounds config.json: a hostile bundle must not make rauha
// allocate without limit. Real configs are a few KiB; 16 MiB leaves ample room.
const maxConfigSize = 16 << 20

// configFile is the name of the OCI config inside a bundle.
const configFile = "config.json"

// Bundle is an OCI bundle opened for create or run.
type Bundle struct {
	Dir  string
	Spec *specs.Spec
}

// OpenBundle reads and validates dir/config.json. It also makes dir the
// working directory, because the OCI spec resolves a relative root.path and
// hook paths against the bundle, and libcontainer's spec conversion does so
// against the working directory (as runc does).
func OpenBundle(dir string) (*Bundle, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle %q: %w", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", abs, unwrapPathError(err))
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("bundle %s: not a directory", abs)
	}
	if err := os.Chdir(abs); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", abs, err)
	}
	spec, err := readSpec(filepath.Join(abs, configFile))
	if err != nil {
		return nil, err
	}
	return &Bundle{Dir: abs, Spec: spec}, nil
}

func readSpec(path string) (*specs.Spec, error) {
	f, err := openBounded(path, "config", false)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s not found: the bundle must contain an OCI config (create one with 'rauha spec')", path)
		}
		return nil, err
	}
	defer f.Close()
	return parseSpec(path, f)
}

// parseSpec decodes and validates an OCI config of at most maxConfigSize
// bytes read from r; name labels the errors.
func parseSpec(name string, r io.Reader) (*specs.Spec, error) {
	var spec specs.Spec
	if err := decodeBounded(r, &spec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := ValidateSpec(&spec); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &spec, nil
}

// openBounded opens a JSON input file (config.json, exec --process) and
// refuses what is not a regular file or is larger than maxConfigSize before
// reading a byte of it. O_NONBLOCK keeps a FIFO or device from blocking the
// open that finds out what it is. With pipeOK a FIFO is read too (runc
// users pass "exec -p <(...)"): as runc's open does, the read waits for a
// writer, and decodeBounded bounds its length.
func openBounded(path, what string, pipeOK bool) (*os.File, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	if pipeOK {
		// An O_PATH descriptor is no reader: a FIFO's writer is not let
		// go (to write and leave) before the reading open below.
		flags = unix.O_PATH | unix.O_CLOEXEC
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, unwrapPathError(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	fifo := pipeOK && fi.Mode()&os.ModeNamedPipe != 0
	if !fi.Mode().IsRegular() && !fifo {
		f.Close()
		return nil, fmt.Errorf("%s %s is not a regular file (%s)", what, path, zone.FileType(fi.Mode()))
	}
	if !fifo && fi.Size() > maxConfigSize {
		f.Close()
		return nil, fmt.Errorf("%s %s is %d bytes, more than the %d MiB rauha accepts", what, path, fi.Size(), maxConfigSize>>20)
	}
	if !pipeOK {
		return f, nil
	}
	// Reopening the checked inode through its descriptor cannot land on
	// another file.
	defer f.Close()
	rf, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, unwrapPathError(err))
	}
	return rf, nil
}

// decodeBounded decodes one JSON value of at most maxConfigSize bytes: the
// limit holds even for a file that grows after its size was checked.
func decodeBounded(r io.Reader, v any) error {
	lr := &io.LimitedReader{R: r, N: maxConfigSize + 1}
	if err := json.NewDecoder(lr).Decode(v); err != nil {
		if lr.N <= 0 {
			return fmt.Errorf("more than the %d MiB rauha accepts", maxConfigSize>>20)
		}
		return fmt.Errorf("malformed JSON: %w", err)
	}
	return nil
}

// ValidateSpec checks what libcontainer's conversion does not check, or does
// not explain well: the spec version and the sections rauha needs.
func ValidateSpec(spec *specs.Spec) error {
	if err := checkSpecVersion(spec.Version); err != nil {
		return err
	}
	if spec.Root == nil || spec.Root.Path == "" {
		return errors.New("root.path must be set")
	}
	if spec.Linux == nil {
		return errors.New("the linux section is missing: rauha runs Linux containers only")
	}
	return nil
}

// checkSpecVersion accepts every 1.x release: the spec keeps backwards
// compatibility within a major version, and clients send versions from 1.0.0
// (podman, docker) up to the current one.
func checkSpecVersion(v string) error {
	if v == "" {
		return errors.New("ociVersion is missing")
	}
	major, _, ok := strings.Cut(v, ".")
	if n, err := strconv.Atoi(major); !ok || err != nil || n != specs.VersionMajor {
		return fmt.Errorf("unsupported ociVersion %q: rauha supports %d.x (up to %s)", v, specs.VersionMajor, specs.Version)
	}
	return nil
}

// ValidateProcess checks a process spec the way runc does before it starts it.
func ValidateProcess(p *specs.Process) error {
	if p == nil {
		return errors.New("process must be set")
	}
	if p.Cwd == "" {
		return errors.New("process.cwd must not be empty")
	}
	if !filepath.IsAbs(p.Cwd) {
		return fmt.Errorf("process.cwd %q must be an absolute path", p.Cwd)
	}
	if len(p.Args) == 0 {
		return errors.New("process.args must not be empty")
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
