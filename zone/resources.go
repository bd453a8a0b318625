package zone

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/docker/go-units"
)

// ByteSize is a memory size in bytes. In TOML and JSON it is either an
// integer (bytes) or a string in the syntax of "rauha update --memory" and
// docker's --memory (go-units' RAMInBytes): a number, maybe with a
// fraction, and a binary unit: "512M", "512MiB", "1.5g", "4096". It is
// always written back as an integer.
type ByteSize int64

// errSize marks a size that failed to parse; ParsePolicy uses it to point at
// the memory_limit line, because the TOML decoder reports errors from
// UnmarshalText of non-string values without a position.
type errSize struct{ text string }

func (e *errSize) Error() string {
	return fmt.Sprintf("invalid size %q: want bytes or a number with a unit K, M, G, T or P (binary, e.g. \"512M\", \"1.5g\")", e.text)
}

// ParseByteSize parses a size as described on ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	// A fraction of a byte is no size (a TOML 1.5 arrives here as "1.5").
	if strings.Contains(s, ".") && !strings.ContainsAny(strings.ToLower(s), "kmgtp") {
		return 0, &errSize{s}
	}
	n, err := units.RAMInBytes(s)
	// RAMInBytes computes in float64: a size past int64 converts to the
	// lowest int64 on amd64 and saturates on arm64.
	if err != nil || n < 0 || n == math.MaxInt64 {
		return 0, &errSize{s}
	}
	return ByteSize(n), nil
}

// UnmarshalText reads the string form.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// UnmarshalJSON accepts an integer or a size string.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var n int64
	if err := json.Unmarshal(data, &n); err == nil {
		*b = ByteSize(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("size must be an integer or a string like \"512M\", not %s", data)
	}
	return b.UnmarshalText([]byte(s))
}

// Device is a device node a policy may allow, with its device number. Minor
// -1 stands for every minor number (terminals under /dev/pts).
type Device struct {
	Name         string // relative to /dev, as written in [devices] allowed
	Type         string // "c" (character device)
	Major, Minor int64
}

// knownDevices are the devices OCI runtimes create (plus a few commonly passed
// through); the numbers are fixed by the kernel's devices.txt.
func knownDevices() []Device {
	return []Device{
		{"console", "c", 5, 1},
		{"full", "c", 1, 7},
		{"fuse", "c", 10, 229},
		{"kvm", "c", 10, 232},
		{"net/tun", "c", 10, 200},
		{"null", "c", 1, 3},
		{"ptmx", "c", 5, 2},
		{"pts", "c", 136, -1},
		{"random", "c", 1, 8},
		{"tty", "c", 5, 0},
		{"urandom", "c", 1, 9},
		{"zero", "c", 1, 5},
	}
}

// LookupDevice finds a device by the name used in [devices] allowed.
func LookupDevice(name string) (Device, bool) {
	for _, d := range knownDevices() {
		if d.Name == name {
			return d, true
		}
	}
	return Device{}, false
}

func deviceNames() []string {
	var names []string
	for _, d := range knownDevices() {
		names = append(names, d.Name)
	}
	return names
}
